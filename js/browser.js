// engram for browsers and bundlers. The WebAssembly module is fetched from
// next to pkg/web/engram.js (bundlers such as Vite and webpack follow the
// `new URL(..., import.meta.url)` it uses and emit the .wasm as an asset)
// the first time a memory opens, or when `init()` is called, which also
// takes a URL, Response, bytes or WebAssembly.Module of your own (for
// bundlers that do not follow that pattern, such as esbuild: see
// docs/javascript.md, "Bundlers").
//
// This file registers the loader at its top level: package.json lists it in
// "sideEffects" so that bundlers keep that call.

import initWasm, * as wasm from "./pkg/web/engram.js";
import { setLoader } from "./src/memory.js";
import { PackagingError } from "./src/errors.js";

let ready = null;

/** Loads the WebAssembly module (once). `source`: URL, Response, bytes or WebAssembly.Module. */
export function init(source) {
  ready ??= initWasm(source === undefined ? undefined : { module_or_path: source }).then(
    () => wasm,
    (e) => {
      ready = null; // a later init(source) may bring the module
      const from = source === undefined ? "from next to engram's pkg/web/engram.js" : "from the source given to init()";
      throw new PackagingError(
        `engram's WebAssembly module did not load ${from} (${e?.message ?? e}). ` +
          "If a bundler did not emit engram_bg.wasm, serve the package file engram/engram.wasm and call init(itsUrl) first",
        { cause: e },
      );
    },
  );
  return ready;
}

setLoader(() => init());

export * from "./src/index.js";
