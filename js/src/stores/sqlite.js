// A store in a SQLite file, for Node, over better-sqlite3 (major 12, or 13
// on Node 22: 13 crashes on Node 20). better-sqlite3 is an optional peer dependency, loaded when
// the first sqliteStore is made. writeIf is one IMMEDIATE transaction, so
// several processes can share one file. Values are BLOBs.
//
// A table made before values became bytes declares `value TEXT`: it needs
// no migration. A column of TEXT affinity keeps BLOBs as they are, and rows
// still holding text read back as their UTF-8 bytes.

import { createRequire } from "node:module";
import { asBytes, sameBytes } from "./bytes.js";

const require = createRequire(import.meta.url);

function loadDriver() {
  try {
    return require("better-sqlite3");
  } catch (e) {
    throw new Error("sqliteStore needs better-sqlite3@12: npm install better-sqlite3@12", { cause: e });
  }
}

/**
 * A store in the SQLite database at `path` (":memory:" for a private one),
 * table `options.table` (default "engram_kv"). `options.database` uses an
 * open better-sqlite3 Database instead. `close()` closes the file.
 */
export function sqliteStore(path, options = {}) {
  const table = options.table ?? "engram_kv";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new TypeError(`sqliteStore: bad table name ${table}`);
  let db = options.database;
  if (!db) {
    const Database = loadDriver();
    db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("busy_timeout = 5000");
  }
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID`);
  const q = {
    get: db.prepare(`SELECT value FROM ${table} WHERE key = ?`).pluck(),
    put: db.prepare(`INSERT INTO ${table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
    delete: db.prepare(`DELETE FROM ${table} WHERE key = ?`),
    from: db.prepare(`SELECT key FROM ${table} WHERE key >= ? ORDER BY key`).pluck(),
  };
  // better-sqlite3 binds a Buffer as a BLOB: view the bytes as one (no copy).
  const blob = (value) => {
    const v = asBytes(value);
    return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  };
  // A Buffer (a Uint8Array) for a BLOB row, UTF-8 bytes for an old text row.
  const read = (key) => asBytes(q.get.get(key));
  const writeIf = db.transaction((guard, expected, writes) => {
    if (!sameBytes(read(guard), asBytes(expected))) return false;
    for (const [key, value] of writes) {
      if (value === null) q.delete.run(key);
      else q.put.run(key, blob(value));
    }
    return true;
  });

  let calls = 0;
  return {
    get: (key) => (calls++, read(key)),
    put: (key, value) => void (calls++, q.put.run(key, blob(value))),
    delete: (key) => void (calls++, q.delete.run(key)),
    list(prefix) {
      calls++;
      const keys = [];
      for (const key of q.from.iterate(prefix)) {
        if (!key.startsWith(prefix)) break;
        keys.push(key);
      }
      return keys;
    },
    /** Applies `writes` in one transaction, only if `guard` holds `expected` (compared by content). */
    writeIf: (guard, expected, writes) => (calls++, writeIf.immediate(guard, expected, writes)),
    /** Calls the engine made to the store (get, put, delete, list, writeIf; each one transaction). */
    get roundTrips() {
      return calls;
    },
    /** The better-sqlite3 Database. */
    database: db,
    close() {
      if (!options.database && db.open) db.close();
    },
  };
}
