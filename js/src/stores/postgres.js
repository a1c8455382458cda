// A store in PostgreSQL, over node-postgres (`pg`, an optional peer
// dependency), for a chat backend on several servers sharing memories.
//
// One table holds any number of memories (their keys start with their
// namespace): `engram_kv (key text COLLATE "C" PRIMARY KEY, value bytea)`,
// created on first use. The app passes its own pg.Pool (or a pg.Client, or
// anything with `query` and `connect`): the store never opens connections of
// its own and never closes the pool.
//
// writeIf is one transaction on one pooled connection, guarded by a lock on
// the head's row, so no update is lost under READ COMMITTED, the default:
//   - expected value: `SELECT value ... WHERE key = guard FOR UPDATE` waits
//     for any writer holding the row and then reads the committed value; a
//     different value (or no row) rolls back and returns false;
//   - expected absent (a new memory): `INSERT guard ... ON CONFLICT DO
//     NOTHING` takes the row (a concurrent first writer waits on the key's
//     unique index, then inserts nothing and returns false).
// The writes follow on the same connection; COMMIT makes them visible at
// once. This needs from the database only a serialisable compare-and-set on
// one row: any PostgreSQL-compatible database with row locks or SERIALIZABLE
// transactions qualifies (docs/javascript.md, "Choosing a store").

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function bytea(value) {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return Buffer.from(value, "utf8");
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`postgresStore: a value to store is a ${typeof value}, not bytes`);
}

// A LIKE pattern matching keys that start with `prefix` (\ is LIKE's escape).
const likePrefix = (prefix) => prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";

const sameBuffer = (a, b) => (a === null || b === null ? a === b : Buffer.compare(a, b) === 0);

/**
 * A store over PostgreSQL, in table `options.table` (default "engram_kv") of
 * schema `options.schema` (default: the connection's search path). `pool` is
 * the app's pg.Pool. The table is created when the store is first used.
 */
export function postgresStore(pool, options = {}) {
  if (!pool || typeof pool.query !== "function" || typeof pool.connect !== "function") {
    throw new TypeError("postgresStore needs a pg.Pool (or anything with query() and connect()): new pg.Pool({ connectionString })");
  }
  const table = options.table ?? "engram_kv";
  if (!NAME.test(table)) throw new TypeError(`postgresStore: bad table name ${table}`);
  if (options.schema !== undefined && !NAME.test(options.schema)) throw new TypeError(`postgresStore: bad schema name ${options.schema}`);
  const t = options.schema === undefined ? `"${table}"` : `"${options.schema}"."${table}"`;

  let ready = null;
  // CREATE TABLE IF NOT EXISTS is not safe against itself run concurrently
  // (two creators can both miss the table): an advisory lock serialises it.
  const schemaReady = () =>
    (ready ??= (async () => {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`engram:${t}`]);
        await client.query(`CREATE TABLE IF NOT EXISTS ${t} (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL)`);
        await client.query("COMMIT");
      } catch (e) {
        await client.query("ROLLBACK").catch(() => {});
        ready = null;
        throw e;
      } finally {
        client.release();
      }
    })());

  const query = async (text, values) => {
    await schemaReady();
    return pool.query({ text, values });
  };

  const get = async (key) => {
    const { rows } = await query(`SELECT value FROM ${t} WHERE key = $1`, [key]);
    return rows.length === 0 ? null : new Uint8Array(rows[0].value);
  };
  const put = async (key, value) => {
    await query(`INSERT INTO ${t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [
      key,
      bytea(value),
    ]);
  };

  return {
    get,
    put,
    delete: async (key) => void (await query(`DELETE FROM ${t} WHERE key = $1`, [key])),
    async list(prefix) {
      const { rows } = await query(`SELECT key FROM ${t} WHERE key LIKE $1 ORDER BY key`, [likePrefix(prefix)]);
      return rows.map((r) => r.key);
    },
    /** Applies `writes` in one transaction, only if `guard` holds `expected` (compared by content). */
    async writeIf(guard, expected, writes) {
      await schemaReady();
      const want = expected === null || expected === undefined ? null : bytea(expected);
      const client = await pool.connect();
      let broken = null;
      try {
        await client.query("BEGIN");
        let holds;
        if (want === null) {
          // Take the row: a placeholder that this transaction's writes
          // replace (or that is deleted below when they leave the guard alone).
          const r = await client.query(`INSERT INTO ${t} (key, value) VALUES ($1, '') ON CONFLICT (key) DO NOTHING`, [guard]);
          holds = r.rowCount === 1;
        } else {
          const { rows } = await client.query(`SELECT value FROM ${t} WHERE key = $1 FOR UPDATE`, [guard]);
          holds = rows.length === 1 && sameBuffer(rows[0].value, want);
        }
        if (!holds) {
          await client.query("ROLLBACK");
          return false;
        }
        let guardWritten = false;
        for (const [key, value] of writes) {
          if (key === guard) guardWritten = true;
          if (value === null) await client.query(`DELETE FROM ${t} WHERE key = $1`, [key]);
          else
            await client.query(
              `INSERT INTO ${t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
              [key, bytea(value)],
            );
        }
        if (want === null && !guardWritten) await client.query(`DELETE FROM ${t} WHERE key = $1`, [guard]);
        await client.query("COMMIT");
        return true;
      } catch (e) {
        await client.query("ROLLBACK").catch((r) => (broken = r));
        throw e;
      } finally {
        // A connection whose rollback failed is in an unknown state: the pool drops it.
        client.release(broken ?? undefined);
      }
    },
    /** The pool the store queries through (the app's: the store never closes it). */
    pool,
    /** The table's qualified name, as used in SQL. */
    table: t,
  };
}
