// engram for Node (>= 20). The WebAssembly module is compiled synchronously
// the first time a memory opens.

import { createRequire } from "node:module";
import { setLoader } from "./src/memory.js";

const require = createRequire(import.meta.url);
let wasm = null;

/** Loads the WebAssembly module (once); done by the first Memory.open anyway. */
export async function init() {
  wasm ??= require("./pkg/node/engram.js");
  return wasm;
}

setLoader(init);

export * from "./src/index.js";
export { sqliteStore } from "./src/stores/sqlite.js";
