// engram for browsers and bundlers. The WebAssembly module is fetched from
// next to pkg/web/engram.js (bundlers such as Vite and webpack follow the
// `new URL(..., import.meta.url)` it uses) the first time a memory opens, or
// when `init()` is called, which also takes a URL, Response or
// WebAssembly.Module of your own.

import initWasm, * as wasm from "./pkg/web/engram.js";
import { setLoader } from "./src/memory.js";

let ready = null;

/** Loads the WebAssembly module (once). `source`: URL, Response, bytes or WebAssembly.Module. */
export function init(source) {
  ready ??= initWasm(source === undefined ? undefined : { module_or_path: source }).then(() => wasm);
  return ready;
}

setLoader(() => init());

export * from "./src/index.js";
