// engram for edge workers (workerd, Cloudflare Workers, miniflare): the
// `workerd` export condition picks this entry. The .wasm file is imported as
// a compiled WebAssembly.Module, as worker bundlers (wrangler) and workerd's
// `wasm` modules provide it; no fetch at run time.
//
// This file registers the loader at its top level: package.json lists it in
// "sideEffects" so that bundlers keep that call.

import wasmModule from "./pkg/web/engram_bg.wasm";
import * as wasm from "./pkg/web/engram.js";
import { setLoader } from "./src/memory.js";
import { PackagingError } from "./src/errors.js";

let ready = false;

/** Instantiates the WebAssembly module (once); done by the first Memory.open anyway. */
export async function init(source = wasmModule) {
  if (!ready) {
    if (!(source instanceof WebAssembly.Module)) {
      throw new PackagingError(
        "engram's WebAssembly module did not come as a compiled WebAssembly.Module: the worker's bundler must import " +
          ".wasm files as modules (wrangler does; elsewhere map engram/engram.wasm to a CompiledWasm module)",
      );
    }
    try {
      wasm.initSync({ module: source });
    } catch (e) {
      throw new PackagingError(`engram's WebAssembly module did not instantiate: ${e.message}`, { cause: e });
    }
    ready = true;
  }
  return wasm;
}

setLoader(() => init());

export * from "./src/index.js";
