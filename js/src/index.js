// What every entry point exports (browser.js, node.js and worker.js add the
// WebAssembly loader of their platform).

export { Memory, systemClock, toNewMessage } from "./memory.js";
export {
  EngramError,
  InvalidInputError,
  StoreError,
  ModelError,
  CorruptError,
  UnsupportedVersionError,
  BusyError,
  ClosedError,
  PackagingError,
  TrappedError,
} from "./errors.js";
export { functionModel, hashEmbed } from "./models/function.js";
export { openAIModel, MAX_TOKENS, DEFAULT_CONCURRENCY } from "./models/openai.js";
export { offlineModel } from "./models/offline.js";
export { memoryStore } from "./stores/memory.js";
export { indexedDBStore } from "./stores/indexeddb.js";
export { durableObjectStore } from "./stores/durable-object.js";
