// engram for browsers and bundlers. The WebAssembly modules are fetched from
// next to their wasm-bindgen glue (bundlers such as Vite and webpack follow
// the `new URL(..., import.meta.url)` it uses and emit the .wasm as an
// asset): the engine (pkg/web/engram_bg.wasm) the first time a memory
// opens, the offline model (pkg/offline/engram_offline_bg.wasm) the first
// time a memory opens on it. `init()` and `initOffline()` load them
// earlier, and take a URL, Response, bytes or WebAssembly.Module of your own
// (for bundlers that do not follow that pattern, such as esbuild: see
// docs/javascript.md, "Bundlers").
//
// This file registers the loaders at its top level: package.json lists it
// in "sideEffects" so that bundlers keep those calls.

import initEngine, * as engine from "./pkg/web/engram.js";
import initOfflineModel, * as offline from "./pkg/offline/engram_offline.js";
import { setLoader } from "./src/memory.js";
import { setOfflineLoader } from "./src/models/offline.js";
import { PackagingError } from "./src/errors.js";

/**
 * A loader of one module (once): `what` names it in errors, `file` is the
 * .wasm next to its glue, `packageFile` the package export that serves it.
 */
function loader(initWasm, exports, what, file, packageFile) {
  let ready = null;
  return (source) =>
    (ready ??= initWasm(source === undefined ? undefined : { module_or_path: source }).then(
      () => exports,
      (e) => {
        ready = null; // a later call with a source may bring the module
        const from = source === undefined ? `from next to its glue (${file})` : "from the source given to it";
        throw new PackagingError(
          `engram's ${what} did not load ${from} (${e?.message ?? e}). ` +
            `If a bundler did not emit ${file}, serve the package file ${packageFile} and call ` +
            `${what === "WebAssembly module" ? "init" : "initOffline"}(itsUrl) first`,
          { cause: e },
        );
      },
    ));
}

/** Loads the engine's WebAssembly module (once). `source`: URL, Response, bytes or WebAssembly.Module. */
export const init = loader(initEngine, engine, "WebAssembly module", "engram_bg.wasm", "engram/engram.wasm");

/** Loads the offline model's WebAssembly module (once). `source`: as for `init`. */
export const initOffline = loader(
  initOfflineModel,
  offline,
  "offline model's WebAssembly module",
  "engram_offline_bg.wasm",
  "engram/offline.wasm",
);

setLoader(() => init());
setOfflineLoader(() => initOffline());

export * from "./src/index.js";
