// A store in a SQLite file, for Node, over either driver:
//   - better-sqlite3 (major 12, or 13 on Node 22+: 13 crashes on Node 20),
//     an optional peer dependency;
//   - node:sqlite, built into Node 22.13+ and 23.4+ (no native addon, no
//     install; on 22.5-22.12 behind --experimental-sqlite).
// `driver: "auto"` (the default) takes better-sqlite3 when it is installed,
// else node:sqlite when this Node has it. Both write the same table and the
// same bytes: a file made with one opens with the other. writeIf is one
// IMMEDIATE transaction, so several processes can share one file. Values
// are BLOBs.
//
// A table made before values became bytes declares `value TEXT`: it needs
// no migration. A column of TEXT affinity keeps BLOBs as they are, and rows
// still holding text read back as their UTF-8 bytes.

import { createRequire } from "node:module";
import { asBytes, sameBytes } from "./bytes.js";

const require = createRequire(import.meta.url);

const DRIVERS = ["auto", "better-sqlite3", "node:sqlite"];
const NEEDS =
  "sqliteStore needs better-sqlite3 12 or 13 (npm install better-sqlite3; 13 needs Node 22+) " +
  "or Node 22.13+ / 23.4+ for the built-in node:sqlite";

function loadBetterSqlite3(required) {
  try {
    return require("better-sqlite3");
  } catch (e) {
    if (!required && e?.code === "MODULE_NOT_FOUND") return null;
    throw new Error(`${NEEDS}: better-sqlite3 did not load (${e?.message ?? e})`, { cause: e });
  }
}

function loadNodeSqlite(required) {
  try {
    return require("node:sqlite");
  } catch (e) {
    if (!required) return null;
    throw new Error(`${NEEDS}: node:sqlite is not in Node ${process.versions.node}`, { cause: e });
  }
}

// What the store asks of a driver: statements that bind a key (and bytes)
// and return a value, keys from a prefix, and an IMMEDIATE transaction.
function betterSqlite3(db, table) {
  const get = db.prepare(`SELECT value FROM ${table} WHERE key = ?`).pluck();
  const put = db.prepare(`INSERT INTO ${table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`);
  const del = db.prepare(`DELETE FROM ${table} WHERE key = ?`);
  const from = db.prepare(`SELECT key FROM ${table} WHERE key >= ? ORDER BY key`).pluck();
  // better-sqlite3 binds a Buffer as a BLOB: view the bytes as one (no copy).
  const blob = (v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return {
    get: (key) => get.get(key),
    put: (key, bytes) => void put.run(key, blob(bytes)),
    delete: (key) => void del.run(key),
    keysFrom: (key) => from.iterate(key),
    immediate: (fn) => db.transaction(fn).immediate(),
    isOpen: () => db.open,
  };
}

function nodeSqlite(db, table) {
  const get = db.prepare(`SELECT value FROM ${table} WHERE key = ?`);
  const put = db.prepare(`INSERT INTO ${table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`);
  const del = db.prepare(`DELETE FROM ${table} WHERE key = ?`);
  const from = db.prepare(`SELECT key FROM ${table} WHERE key >= ? ORDER BY key`);
  return {
    get: (key) => get.get(key)?.value,
    // node:sqlite binds a Uint8Array as a BLOB.
    put: (key, bytes) => void put.run(key, bytes),
    delete: (key) => void del.run(key),
    *keysFrom(key) {
      // StatementSync.iterate is Node 22.13+ / 23.4+, as node:sqlite
      // without a flag is; all() on the older flagged builds.
      const rows = typeof from.iterate === "function" ? from.iterate(key) : from.all(key);
      for (const row of rows) yield row.key;
    },
    immediate(fn) {
      db.exec("BEGIN IMMEDIATE");
      let result;
      try {
        result = fn();
      } catch (e) {
        db.exec("ROLLBACK");
        throw e;
      }
      db.exec("COMMIT");
      return result;
    },
    isOpen: () => db.isOpen ?? true,
  };
}

/**
 * A store in the SQLite database at `path` (":memory:" for a private one),
 * table `options.table` (default "engram_kv"), over `options.driver`
 * ("auto", "better-sqlite3" or "node:sqlite"). `options.database` uses an
 * open Database of either driver instead. `close()` closes the file (not a
 * database you passed in).
 */
export function sqliteStore(path, options = {}) {
  const table = options.table ?? "engram_kv";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new TypeError(`sqliteStore: bad table name ${table}`);
  const wanted = options.driver ?? "auto";
  if (!DRIVERS.includes(wanted)) {
    throw new TypeError(`sqliteStore: unknown driver ${JSON.stringify(wanted)} (supported: ${DRIVERS.join(", ")})`);
  }
  let db = options.database;
  let driver;
  if (db) {
    // A Database of either driver: better-sqlite3's has pragma(), node:sqlite's DatabaseSync has not.
    driver = typeof db.pragma === "function" ? "better-sqlite3" : "node:sqlite";
    if (wanted !== "auto" && wanted !== driver) {
      throw new TypeError(`sqliteStore: options.database is a ${driver} Database, not ${wanted}`);
    }
  } else {
    const Better = wanted === "node:sqlite" ? null : loadBetterSqlite3(wanted === "better-sqlite3");
    const nodeSql = Better ? null : loadNodeSqlite(wanted === "node:sqlite");
    if (!Better && !nodeSql) throw new Error(`${NEEDS}: neither is available here`);
    if (Better) {
      driver = "better-sqlite3";
      db = new Better(path);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma("busy_timeout = 5000");
    } else {
      driver = "node:sqlite";
      db = new nodeSql.DatabaseSync(path);
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000");
    }
  }
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID`);
  const q = driver === "better-sqlite3" ? betterSqlite3(db, table) : nodeSqlite(db, table);
  // A Uint8Array for a BLOB row, UTF-8 bytes for an old text row.
  const read = (key) => asBytes(q.get(key));
  const writeIf = (guard, expected, writes) =>
    q.immediate(() => {
      if (!sameBytes(read(guard), asBytes(expected))) return false;
      for (const [key, value] of writes) {
        if (value === null) q.delete(key);
        else q.put(key, asBytes(value));
      }
      return true;
    });

  let calls = 0;
  return {
    get: (key) => (calls++, read(key)),
    /** The values at `keys`, in order (null where absent): one call. */
    getMany: (keys) => (calls++, keys.map(read)),
    put: (key, value) => void (calls++, q.put(key, asBytes(value))),
    delete: (key) => void (calls++, q.delete(key)),
    list(prefix) {
      calls++;
      const keys = [];
      for (const key of q.keysFrom(prefix)) {
        if (!key.startsWith(prefix)) break;
        keys.push(key);
      }
      return keys;
    },
    /** Applies `writes` in one transaction, only if `guard` holds `expected` (compared by content). */
    writeIf: (guard, expected, writes) => (calls++, writeIf(guard, expected, writes)),
    /** Calls the engine made to the store (get, getMany, put, delete, list, writeIf; each one transaction). */
    get roundTrips() {
      return calls;
    },
    /** The driver in use: "better-sqlite3" or "node:sqlite". */
    driver,
    /** The driver's Database. */
    database: db,
    close() {
      if (!options.database && q.isOpen()) db.close();
    },
  };
}
