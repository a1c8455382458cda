// A store in PostgreSQL, over node-postgres (`pg`, an optional peer
// dependency), for a chat backend on several servers sharing memories.
//
// One table holds any number of memories (their keys start with their
// namespace): `engram_kv (key text COLLATE "C" PRIMARY KEY, value bytea)`,
// created on first use. The app passes its own pg.Pool (or a pg.Client, or
// anything with `query` and `connect`): the store never opens connections of
// its own and never closes the pool.
//
// writeIf guarded by a value (every commit but a memory's first) is ONE
// statement, so one round trip: a data-modifying CTE that locks the head's
// row if it holds the expected value, then deletes and upserts the writes
// only if it did:
//   WITH g AS (SELECT key FROM t WHERE key = guard AND value = expected
//              FOR UPDATE),
//        d AS (DELETE ... WHERE key = ANY(deletes) AND EXISTS (SELECT 1 FROM g)),
//        u AS (INSERT ... SELECT * FROM unnest(keys, values)
//              WHERE EXISTS (SELECT 1 FROM g) ON CONFLICT DO UPDATE ...)
//   SELECT count(*) FROM g
// Under READ COMMITTED, the default, FOR UPDATE waits for a writer holding
// the row and then re-checks `value = expected` on the committed version
// (PostgreSQL's EvalPlanQual), so no update is lost: a different value (or no
// row) makes g empty and the statement writes nothing. The statement is its
// own transaction (autocommit). Each key appears once (the last write of a
// key wins, as in a sequence of puts).
// writeIf with the guard absent (a new memory's first commit, which writes
// the guard) is one statement as well: `INSERT guard ... ON CONFLICT DO
// NOTHING RETURNING` takes the row with its final value (a concurrent first
// writer waits on the key's unique index, then inserts nothing and returns
// false), and the other writes are conditioned on it as above. Only a
// writeIf that expects the guard absent and leaves it unwritten is a
// transaction on one pooled connection (the guard taken as a placeholder,
// the writes, the placeholder deleted, COMMIT).
// This needs from the database only a serialisable compare-and-set on one
// row: any PostgreSQL-compatible database with row locks or SERIALIZABLE
// transactions qualifies (docs/javascript.md, "Choosing a store").
//
// `roundTrips` counts the statements the store sent (each one round trip to
// the server): what a call costs on the wire (docs/stores.md).

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function bytea(value) {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return Buffer.from(value, "utf8");
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`postgresStore: a value to store is a ${typeof value}, not bytes`);
}

// The writes as the CTEs take them: keys to delete, keys and values to
// upsert (`skip`: a key left out, the guard a first commit inserts itself).
function split(last, skip) {
  const dels = [];
  const keys = [];
  const values = [];
  for (const [key, value] of last) {
    if (key === skip) continue;
    if (value === null) dels.push(key);
    else {
      keys.push(key);
      values.push(bytea(value));
    }
  }
  return { dels, keys, values };
}

// A LIKE pattern matching keys that start with `prefix` (\ is LIKE's escape).
const likePrefix = (prefix) => prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";

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
  let roundTrips = 0;
  // CREATE TABLE IF NOT EXISTS is not safe against itself run concurrently
  // (two creators can both miss the table): an advisory lock serialises it.
  const schemaReady = () =>
    (ready ??= (async () => {
      const client = await pool.connect();
      try {
        roundTrips += 4;
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
    roundTrips++;
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
    /** The values at `keys`, in order (null where absent): one statement. */
    async getMany(keys) {
      const { rows } = await query(`SELECT key, value FROM ${t} WHERE key = ANY($1::text[])`, [keys]);
      const found = new Map(rows.map((r) => [r.key, new Uint8Array(r.value)]));
      return keys.map((key) => found.get(key) ?? null);
    },
    put,
    delete: async (key) => void (await query(`DELETE FROM ${t} WHERE key = $1`, [key])),
    async list(prefix) {
      const { rows } = await query(`SELECT key FROM ${t} WHERE key LIKE $1 ORDER BY key`, [likePrefix(prefix)]);
      return rows.map((r) => r.key);
    },
    /** Applies `writes` atomically, only if `guard` holds `expected` (compared by content). */
    async writeIf(guard, expected, writes) {
      await schemaReady();
      // The last write of a key wins, as in a sequence of puts.
      const last = new Map();
      for (const [key, value] of writes) last.set(key, value);
      if (expected !== null && expected !== undefined) {
        const { dels, keys, values } = split(last);
        const { rows } = await query(
          `WITH g AS (SELECT key FROM ${t} WHERE key = $1 AND value = $2 FOR UPDATE),
           d AS (DELETE FROM ${t} WHERE key = ANY($3::text[]) AND EXISTS (SELECT 1 FROM g) RETURNING 1),
           u AS (INSERT INTO ${t} (key, value)
                 SELECT k, v FROM unnest($4::text[], $5::bytea[]) AS w(k, v) WHERE EXISTS (SELECT 1 FROM g)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING 1)
           SELECT (SELECT count(*) FROM g)::int AS holds`,
          [guard, bytea(expected), dels, keys, values],
        );
        return rows[0].holds === 1;
      }
      if (last.has(guard) && last.get(guard) !== null) {
        // A new memory's first commit, one statement too: the guard's row
        // is inserted with its final value unless it exists (a concurrent
        // first writer waits on the key's unique index, then inserts
        // nothing), and the other writes happen only if it was.
        const { dels, keys, values } = split(last, guard);
        const { rows } = await query(
          `WITH g AS (INSERT INTO ${t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING 1),
           d AS (DELETE FROM ${t} WHERE key = ANY($3::text[]) AND EXISTS (SELECT 1 FROM g) RETURNING 1),
           u AS (INSERT INTO ${t} (key, value)
                 SELECT k, v FROM unnest($4::text[], $5::bytea[]) AS w(k, v) WHERE EXISTS (SELECT 1 FROM g)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING 1)
           SELECT (SELECT count(*) FROM g)::int AS holds`,
          [guard, bytea(last.get(guard)), dels, keys, values],
        );
        return rows[0].holds === 1;
      }
      // The guard absent and not written (or deleted) by the writes: a
      // transaction on one pooled connection.
      const client = await pool.connect();
      let broken = null;
      try {
        roundTrips++;
        await client.query("BEGIN");
        // Take the row: a placeholder that this transaction's writes
        // replace (or that is deleted below when they leave the guard alone).
        roundTrips++;
        const r = await client.query(`INSERT INTO ${t} (key, value) VALUES ($1, '') ON CONFLICT (key) DO NOTHING`, [guard]);
        if (r.rowCount !== 1) {
          roundTrips++;
          await client.query("ROLLBACK");
          return false;
        }
        for (const [key, value] of last) {
          roundTrips++;
          if (value === null) await client.query(`DELETE FROM ${t} WHERE key = $1`, [key]);
          else
            await client.query(
              `INSERT INTO ${t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
              [key, bytea(value)],
            );
        }
        if (!last.has(guard)) {
          roundTrips++;
          await client.query(`DELETE FROM ${t} WHERE key = $1`, [guard]);
        }
        roundTrips++;
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
    /** Statements sent to the server so far (each one round trip). */
    get roundTrips() {
      return roundTrips;
    },
    /** The pool the store queries through (the app's: the store never closes it). */
    pool,
    /** The table's qualified name, as used in SQL. */
    table: t,
  };
}
