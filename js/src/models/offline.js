// The built-in offline model: the core's rules answer every task (boundary
// judgments by lexical cohesion, facts from sentences, trace, resolve,
// reconcile, relevance and distill by shared entities and term overlap,
// split on clause boundaries) and a hashing embedder gives vectors, with no
// network and no key. For demos and tests; plug in a real LLM for real use.
// Both run inside the engine's WebAssembly (src/offline/), so every host
// gets the same answers.

import { loadWasm } from "../memory.js";

let wasm = null;

/**
 * Calls `fn(exports)` once the WebAssembly module is loaded: synchronously
 * when it already is (always the case inside a memory's calls), else after
 * loading it.
 */
function withWasm(fn) {
  if (wasm) return fn(wasm);
  return loadWasm().then((exports) => {
    wasm = exports;
    return fn(wasm);
  });
}

/**
 * The offline model: `{ complete, embed }`, deterministic, no network.
 * `Memory.open` uses it when given no `model`. Its functions do not use
 * `this`, so they compose with other models:
 *
 *     // an LLM for the tasks, the built-in embedder for meaning search
 *     const model = { ...openAIModel({ model: "gpt-4.1-mini" }), embed: offlineModel().embed };
 *
 * `complete(request)` resolves to the answer's JSON text (it throws with
 * `code: "bad-answer"` for a request it cannot read); `embed(texts)` to one
 * Float32Array of `offlineModel.dimension` (256) numbers per text.
 */
export function offlineModel() {
  return {
    complete: (request) => withWasm((w) => w.offlineComplete(request)),
    embed: (texts) => withWasm((w) => w.offlineEmbed(Array.from(texts, String))),
  };
}

/** The offline embedder's vector size. */
offlineModel.dimension = 256;
