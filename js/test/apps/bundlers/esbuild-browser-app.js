// A browser app bundled by esbuild, which does not emit the `.wasm` that
// wasm-bindgen locates with `new URL(..., import.meta.url)`: the documented
// recipe imports the package file engram/engram.wasm with esbuild's `file`
// loader (its URL, the file copied beside the bundle) and hands it to
// init() before the first open. Shows the view (or the error) in #result.
// With `?noinit` it skips init(): the module is not where wasm-bindgen
// looks, and the open rejects with PackagingError.

import wasmUrl from "engram/engram.wasm";
import { Memory, init, memoryStore } from "engram";

async function run() {
  if (!new URLSearchParams(location.search).has("noinit")) await init(new URL(wasmUrl, import.meta.url));
  const memory = await Memory.open({ namespace: "esbuild-browser-app", store: memoryStore() });
  try {
    const a = await memory.addMessage({ role: "user", content: "My cat is called Miso." });
    const b = await memory.addMessage({ role: "assistant", content: "Miso is a fine name for a cat." });
    return { ok: true, added: [a.message, b.message], view: await memory.render("openai") };
  } finally {
    await memory.close();
  }
}

run().then(
  (result) => (document.querySelector("#result").textContent = JSON.stringify(result)),
  (e) => (document.querySelector("#result").textContent = JSON.stringify({ ok: false, code: e?.code, error: String(e) })),
);
