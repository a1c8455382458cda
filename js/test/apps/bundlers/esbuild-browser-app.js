// A browser app bundled by esbuild, which does not emit the `.wasm` files
// that wasm-bindgen locates with `new URL(..., import.meta.url)`: the
// documented recipe imports the package files engram/engram.wasm and
// engram/offline.wasm with esbuild's `file` loader (their URLs, the files
// copied beside the bundle) and hands them to init() and initOffline()
// before the first open. Shows the view (or the error) in #result. With
// `?noinit` it skips init(): the module is not where wasm-bindgen looks, and
// the open rejects with PackagingError; with `?nooffline` it skips
// initOffline(), and the open on the offline model rejects the same way.

import wasmUrl from "engram/engram.wasm";
import offlineUrl from "engram/offline.wasm";
import { Memory, init, initOffline, memoryStore } from "engram";

async function run() {
  const params = new URLSearchParams(location.search);
  if (!params.has("noinit")) await init(new URL(wasmUrl, import.meta.url));
  if (!params.has("nooffline")) await initOffline(new URL(offlineUrl, import.meta.url));
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
