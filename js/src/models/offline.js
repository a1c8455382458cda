// The built-in offline model: the core's rules answer every task (boundary
// judgments by lexical cohesion, facts from sentences, trace, resolve,
// reconcile, relevance and distill by shared entities and term overlap,
// split on clause boundaries) and a hashing embedder gives vectors, with no
// network and no key. For demos and tests; plug in a real LLM for real use.
// The rules are the core's own (src/offline/), so every host gets the same
// answers; in this package they are a WebAssembly module of their own
// (pkg/offline), loaded the first time they are used, so an app on a real
// LLM never downloads them.

import { PackagingError } from "../errors.js";

let loader = null;
let wasm = null;

/**
 * Sets how the offline model's module is loaded (each entry point,
 * browser.js, node.js and worker.js, sets its own). `load` resolves to
 * `{ offlineComplete, offlineEmbed }`.
 */
export function setOfflineLoader(load) {
  loader = load;
}

/** The offline model's module, loading it first when needed. */
export function loadOffline() {
  if (wasm) return Promise.resolve(wasm);
  if (!loader) {
    return Promise.reject(
      new PackagingError(
        "no loader for the offline model's WebAssembly: engram's package entry (browser.js, node.js or worker.js) did not run. " +
          'Import from "engram" (not from its src/ files), and let the bundler keep the files listed in the package\'s "sideEffects"',
      ),
    );
  }
  return loader().then((exports) => (wasm = exports));
}

/** Marks the functions that need the offline module, so `Memory.open` loads it first. */
export const USES_OFFLINE = Symbol("engram.usesOffline");

/**
 * Calls `fn(exports)` once the module is loaded: synchronously when it
 * already is (always the case inside a memory's calls: `Memory.open`
 * loads it first), else after loading it.
 */
function withWasm(fn) {
  if (wasm) return fn(wasm);
  return loadOffline().then(fn);
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
  const complete = (request) => withWasm((w) => w.offlineComplete(request));
  const embed = (texts) => withWasm((w) => w.offlineEmbed(Array.from(texts, String)));
  complete[USES_OFFLINE] = true;
  embed[USES_OFFLINE] = true;
  return { complete, embed };
}

/** The offline embedder's vector size. */
offlineModel.dimension = 256;
