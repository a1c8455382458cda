// Types of "engram/memory-store" (src/stores/memory.js): only what that module exports.
export { memoryStore, type MemoryStore, type Store } from "../index.js";
