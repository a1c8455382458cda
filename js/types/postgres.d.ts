// Types of "engram/postgres" (src/stores/postgres.js, on node-postgres `pg`).
import type { Store } from "../index.js";
export type { Store } from "../index.js";

/** What the store needs of a pg.Pool (a pg.Client does not do: writeIf needs connect()/release()). */
export interface PostgresPoolLike {
  query(config: { text: string; values?: unknown[] }): Promise<{ rows: any[]; rowCount: number | null }>;
  connect(): Promise<{
    query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
    release(err?: Error | boolean): void;
  }>;
}

/** A store in one PostgreSQL table (key text COLLATE "C" PRIMARY KEY, value bytea), shared by any number of memories. */
export interface PostgresStore extends Store {
  /** The pool the store queries through: the app's, never closed by the store. */
  readonly pool: PostgresPoolLike;
  /** The table's qualified name as used in SQL. */
  readonly table: string;
  /** Statements sent to the server so far (each one round trip). */
  readonly roundTrips: number;
}

/**
 * A store over the app's pg.Pool, in table `options.table` (default
 * "engram_kv") of schema `options.schema` (default: the search path),
 * created on first use. writeIf guarded by a value is one statement that
 * locks the log head's row and writes only if it holds the value (a new
 * memory's first commit: one transaction): safe for any number of servers
 * under READ COMMITTED.
 */
export declare function postgresStore(pool: PostgresPoolLike, options?: { table?: string; schema?: string }): PostgresStore;
