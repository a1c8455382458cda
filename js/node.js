// engram for Node (>= 20). The WebAssembly module is compiled synchronously
// the first time a memory opens. Node uses the same bindings and the same
// .wasm file as browsers and workers (pkg/web), read from disk: the package
// ships one copy of the module.
//
// Where the .wasm is looked for, in order: `init(source)`'s argument (a
// path, file URL, bytes or WebAssembly.Module); pkg/web/engram_bg.wasm next
// to this file (the package unbundled); engram_bg.wasm next to the bundle
// (a bundle shipped with the file copied beside it); the package file
// engram/engram.wasm resolved from the bundle's folder (a bundle run inside
// the app, node_modules present). None: a PackagingError naming the places.
//
// This file registers the loader at its top level: package.json lists it in
// "sideEffects" so that bundlers keep that call.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as bindings from "./pkg/web/engram.js";
import { setLoader } from "./src/memory.js";
import { PackagingError } from "./src/errors.js";

let wasm = null;

/** The places the module may be, most specific first (a CommonJS bundle has no import.meta.url). */
function candidates() {
  const places = [];
  const here = import.meta.url;
  if (!here) return places;
  places.push(new URL("./pkg/web/engram_bg.wasm", here), new URL("./engram_bg.wasm", here));
  try {
    places.push(createRequire(here).resolve("engram/engram.wasm"));
  } catch {
    // not installed next to the bundle
  }
  return places;
}

function readModule() {
  const tried = [];
  for (const place of candidates()) {
    try {
      return readFileSync(place);
    } catch (e) {
      tried.push(String(place instanceof URL ? place.pathname : place));
      if (e?.code !== "ENOENT") throw new PackagingError(`engram's WebAssembly module could not be read at ${place}: ${e.message}`, { cause: e });
    }
  }
  throw new PackagingError(
    `engram's WebAssembly module was not found (looked at: ${tried.join(", ") || "nowhere: no import.meta.url"}). ` +
      "When you bundle for Node, keep engram external (esbuild: --packages=external), or copy " +
      "node_modules/engram/pkg/web/engram_bg.wasm beside the bundle, or call init(pathOrBytes) before the first open",
  );
}

async function fromSource(source) {
  if (typeof source === "string" || source instanceof URL) {
    try {
      return readFileSync(source);
    } catch (e) {
      throw new PackagingError(`engram's WebAssembly module could not be read at ${source}: ${e.message}`, { cause: e });
    }
  }
  return source; // bytes or a WebAssembly.Module
}

/**
 * Loads the WebAssembly module (once); done by the first Memory.open anyway.
 * `source` (optional): a path, file URL, bytes or WebAssembly.Module.
 */
export async function init(source) {
  if (wasm === null) {
    const module = source === undefined ? readModule() : await fromSource(source);
    try {
      bindings.initSync({ module });
    } catch (e) {
      throw new PackagingError(`engram's WebAssembly module did not instantiate: ${e.message}`, { cause: e });
    }
    wasm = bindings;
  }
  return wasm;
}

setLoader(() => init());

export * from "./src/index.js";
export { sqliteStore } from "./src/stores/sqlite.js";
