// Types of "engram/indexeddb" (src/stores/indexeddb.js): only what that module exports.
export { indexedDBStore, type IndexedDBStore, type Store } from "../index.js";
