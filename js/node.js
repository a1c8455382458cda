// engram for Node (>= 20). The WebAssembly module is compiled synchronously
// the first time a memory opens. Node uses the same bindings and the same
// .wasm file as browsers and workers (pkg/web), read from disk: the package
// ships one copy of the module.

import { readFileSync } from "node:fs";
import * as bindings from "./pkg/web/engram.js";
import { setLoader } from "./src/memory.js";

let wasm = null;

/** Loads the WebAssembly module (once); done by the first Memory.open anyway. */
export async function init() {
  if (wasm === null) {
    bindings.initSync({ module: readFileSync(new URL("./pkg/web/engram_bg.wasm", import.meta.url)) });
    wasm = bindings;
  }
  return wasm;
}

setLoader(init);

export * from "./src/index.js";
export { sqliteStore } from "./src/stores/sqlite.js";
