// engram for Node (>= 20). The WebAssembly modules are compiled
// synchronously: the engine the first time a memory opens, the offline
// model the first time a memory opens on it. Node uses the same bindings
// and the same .wasm files as browsers and workers (pkg/web, pkg/offline),
// read from disk: the package ships one copy of each module.
//
// Where a .wasm is looked for, in order: `init(source)`'s (or
// `initOffline(source)`'s) argument (a path, file URL, bytes or
// WebAssembly.Module); pkg/web/engram_bg.wasm (pkg/offline/
// engram_offline_bg.wasm) next to this file (the package unbundled); the
// file's name next to the bundle (a bundle shipped with the file copied
// beside it); the package file engram/engram.wasm (engram/offline.wasm)
// resolved from the bundle's folder (a bundle run inside the app,
// node_modules present). None: a PackagingError naming the places.
//
// This file registers the loaders at its top level: package.json lists it
// in "sideEffects" so that bundlers keep those calls.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as engine from "./pkg/web/engram.js";
import * as offline from "./pkg/offline/engram_offline.js";
import { setLoader } from "./src/memory.js";
import { setOfflineLoader } from "./src/models/offline.js";
import { PackagingError } from "./src/errors.js";

/** The places a module may be, most specific first (a CommonJS bundle has no import.meta.url). */
function candidates(path, packageFile) {
  const places = [];
  const here = import.meta.url;
  if (!here) return places;
  places.push(new URL(`./${path}`, here), new URL(`./${path.split("/").pop()}`, here));
  try {
    places.push(createRequire(here).resolve(packageFile));
  } catch {
    // not installed next to the bundle
  }
  return places;
}

/**
 * A loader of one module (once): `what` names it in errors, `path` is the
 * .wasm in the package, `packageFile` the package export that serves it.
 */
function loader(bindings, what, path, packageFile) {
  const file = path.split("/").pop();
  let wasm = null;

  function readModule() {
    const tried = [];
    for (const place of candidates(path, packageFile)) {
      try {
        return readFileSync(place);
      } catch (e) {
        tried.push(String(place instanceof URL ? place.pathname : place));
        if (e?.code !== "ENOENT") throw new PackagingError(`engram's ${what} could not be read at ${place}: ${e.message}`, { cause: e });
      }
    }
    throw new PackagingError(
      `engram's ${what} was not found (looked at: ${tried.join(", ") || "nowhere: no import.meta.url"}). ` +
        "When you bundle for Node, keep engram external (esbuild: --packages=external), or copy " +
        `node_modules/engram/${path} beside the bundle, or call ${what === "WebAssembly module" ? "init" : "initOffline"}(pathOrBytes) before the first open`,
    );
  }

  async function fromSource(source) {
    if (typeof source === "string" || source instanceof URL) {
      try {
        return readFileSync(source);
      } catch (e) {
        throw new PackagingError(`engram's ${what} could not be read at ${source}: ${e.message}`, { cause: e });
      }
    }
    return source; // bytes or a WebAssembly.Module
  }

  return async (source) => {
    if (wasm === null) {
      const module = source === undefined ? readModule() : await fromSource(source);
      try {
        bindings.initSync({ module });
      } catch (e) {
        throw new PackagingError(`engram's ${what} did not instantiate: ${e.message}`, { cause: e });
      }
      wasm = bindings;
    }
    return wasm;
  };
}

/**
 * Loads the engine's WebAssembly module (once); done by the first
 * Memory.open anyway. `source` (optional): a path, file URL, bytes or
 * WebAssembly.Module.
 */
export const init = loader(engine, "WebAssembly module", "pkg/web/engram_bg.wasm", "engram/engram.wasm");

/** Loads the offline model's WebAssembly module (once); `source` as for `init`. */
export const initOffline = loader(
  offline,
  "offline model's WebAssembly module",
  "pkg/offline/engram_offline_bg.wasm",
  "engram/offline.wasm",
);

setLoader(() => init());
setOfflineLoader(() => initOffline());

export * from "./src/index.js";
export { sqliteStore } from "./src/stores/sqlite.js";
