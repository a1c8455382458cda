// Types of "engram/sqlite" (src/stores/sqlite.js, Node with better-sqlite3 12 or 13, or node:sqlite): only what that module exports.
export { sqliteStore, type SqliteStore, type Store } from "../index.js";
