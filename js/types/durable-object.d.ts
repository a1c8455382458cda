// Types of "engram/durable-object" (src/stores/durable-object.js): only what that module exports.
export { durableObjectStore, type DurableObjectStore, type DurableObjectStorageLike, type Store } from "../index.js";
