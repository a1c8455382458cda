// engram for edge workers (workerd, Cloudflare Workers, miniflare): the
// `workerd` export condition picks this entry. The .wasm file is imported as
// a compiled WebAssembly.Module, as worker bundlers and workerd's `wasm`
// modules provide it; no fetch at run time.

import wasmModule from "./pkg/web/engram_bg.wasm";
import * as wasm from "./pkg/web/engram.js";
import { setLoader } from "./src/memory.js";

/** Instantiates the WebAssembly module (once); done by the first Memory.open anyway. */
export async function init() {
  wasm.initSync({ module: wasmModule });
  return wasm;
}

setLoader(init);

export * from "./src/index.js";
