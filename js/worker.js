// engram for edge workers (workerd, Cloudflare Workers, miniflare): the
// `workerd` export condition picks this entry. The .wasm files (the engine,
// and the offline model's own module) are imported as compiled
// WebAssembly.Modules, as worker bundlers (wrangler) and workerd's `wasm`
// modules provide them; no fetch at run time.
//
// This file registers the loaders at its top level: package.json lists it
// in "sideEffects" so that bundlers keep those calls.

import engineModule from "./pkg/web/engram_bg.wasm";
import offlineModule from "./pkg/offline/engram_offline_bg.wasm";
import * as engine from "./pkg/web/engram.js";
import * as offline from "./pkg/offline/engram_offline.js";
import { setLoader } from "./src/memory.js";
import { setOfflineLoader } from "./src/models/offline.js";
import { PackagingError } from "./src/errors.js";

/** An instantiator of one module (once); `what` names it in errors. */
function loader(bindings, what, builtIn) {
  let ready = false;
  return async (source = builtIn) => {
    if (!ready) {
      if (!(source instanceof WebAssembly.Module)) {
        throw new PackagingError(
          `engram's ${what} did not come as a compiled WebAssembly.Module: the worker's bundler must import ` +
            ".wasm files as modules (wrangler does; elsewhere map engram/engram.wasm and engram/offline.wasm to CompiledWasm modules)",
        );
      }
      try {
        bindings.initSync({ module: source });
      } catch (e) {
        throw new PackagingError(`engram's ${what} did not instantiate: ${e.message}`, { cause: e });
      }
      ready = true;
    }
    return bindings;
  };
}

/** Instantiates the engine's WebAssembly module (once); done by the first Memory.open anyway. */
export const init = loader(engine, "WebAssembly module", engineModule);

/** Instantiates the offline model's WebAssembly module (once); done by the first Memory.open on it anyway. */
export const initOffline = loader(offline, "offline model's WebAssembly module", offlineModule);

setLoader(() => init());
setOfflineLoader(() => initOffline());

export * from "./src/index.js";
