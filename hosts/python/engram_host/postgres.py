"""A store in PostgreSQL for engram, over psycopg 3 (the ``postgres`` extra:
``pip install "engram-host[postgres]"``).

One table holds any number of memories (their keys start with their
namespace)::

    CREATE TABLE engram_kv (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL)

created on first use. The app passes its own ``psycopg_pool.ConnectionPool``
(or anything whose ``connection()`` is a context manager yielding a psycopg
connection); the store never opens or closes connections itself.

``write_if`` is one statement (a data-modifying CTE, as the npm package's
store sends) guarded by a lock on the head's row, so no update is lost under
READ COMMITTED, the default: with an expected value, ``SELECT ... FOR
UPDATE`` waits for any writer holding the row and re-checks the committed
value; expecting no value (a new memory), ``INSERT ... ON CONFLICT DO
NOTHING RETURNING`` takes the row with its new value, and a concurrent first
writer inserts nothing. Only a write that expects the guard absent and does
not write it is a transaction of several statements.
The same keys and bytes as every other engram store (the npm package's
``engram/postgres`` shares the table): a memory written by Node servers can
be read by Python ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["PostgresStore"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _like_prefix(prefix: str) -> str:
    return re.sub(r"([\\%_])", r"\\\1", prefix) + "%"


class PostgresStore:
    """A store in table ``table`` (default ``engram_kv``) of schema
    ``schema`` (default: the search path), over the app's connection pool."""

    def __init__(self, pool: Any, *, table: str = "engram_kv", schema: str | None = None):
        if pool is None or not callable(getattr(pool, "connection", None)):
            raise TypeError(
                "PostgresStore needs a psycopg_pool.ConnectionPool (or anything with a "
                "connection() context manager): ConnectionPool(conninfo)"
            )
        if not _NAME.match(table):
            raise ValueError(f"PostgresStore: bad table name {table!r}")
        if schema is not None and not _NAME.match(schema):
            raise ValueError(f"PostgresStore: bad schema name {schema!r}")
        self.pool = pool
        self.table = f'"{table}"' if schema is None else f'"{schema}"."{table}"'
        self._ready = False

    def _ensure_schema(self) -> None:
        if self._ready:
            return
        t = self.table
        with self.pool.connection() as conn, conn.transaction():
            # CREATE TABLE IF NOT EXISTS is not safe against itself run
            # concurrently: an advisory lock serialises it.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"engram:{t}",))
            conn.execute(f'CREATE TABLE IF NOT EXISTS {t} (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL)')
        self._ready = True

    def get(self, key: str) -> bytes | None:
        self._ensure_schema()
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT value FROM {self.table} WHERE key = %s", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def get_many(self, keys: list[str]) -> list[bytes | None]:
        """The values at ``keys``, in order (None where absent): one statement."""
        self._ensure_schema()
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT key, value FROM {self.table} WHERE key = ANY(%s)", (list(keys),)).fetchall()
        found = {k: bytes(v) for k, v in rows}
        return [found.get(k) for k in keys]

    def put(self, key: str, value: bytes) -> None:
        self._ensure_schema()
        with self.pool.connection() as conn:
            conn.execute(
                f"INSERT INTO {self.table} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, bytes(value)),
            )

    def delete(self, key: str) -> None:
        self._ensure_schema()
        with self.pool.connection() as conn:
            conn.execute(f"DELETE FROM {self.table} WHERE key = %s", (key,))

    def list_prefix(self, prefix: str) -> list[str]:
        self._ensure_schema()
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT key FROM {self.table} WHERE key LIKE %s ORDER BY key", (_like_prefix(prefix),)
            ).fetchall()
        return [r[0] for r in rows]

    def write_if(self, guard: str, expected: bytes | None, writes: Sequence[tuple[str, bytes | None]]) -> bool:
        self._ensure_schema()
        t = self.table
        want = None if expected is None else bytes(expected)
        from psycopg import Rollback

        # The last write of a key wins, as in a sequence of puts.
        last: dict[str, bytes | None] = {}
        for key, value in writes:
            last[key] = None if value is None else bytes(value)
        head = last.get(guard)
        if want is not None or head is not None:
            return self._write_if_one_statement(guard, want, head, last)
        # Expecting the guard absent and not writing it: a transaction.
        holds = False
        with self.pool.connection() as conn, conn.transaction():
            # The guard's row taken as a placeholder (a concurrent first
            # writer waits on the key's unique index, then inserts nothing).
            cur = conn.execute(f"INSERT INTO {t} (key, value) VALUES (%s, '') ON CONFLICT (key) DO NOTHING", (guard,))
            holds = bool(cur.rowcount == 1)
            if not holds:
                raise Rollback()  # leaves the block, rolled back
            guard_written = False
            for key, value in writes:
                guard_written = guard_written or key == guard
                if value is None:
                    conn.execute(f"DELETE FROM {t} WHERE key = %s", (key,))
                else:
                    conn.execute(
                        f"INSERT INTO {t} (key, value) VALUES (%s, %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (key, bytes(value)),
                    )
            if not guard_written:
                conn.execute(f"DELETE FROM {t} WHERE key = %s", (guard,))
        return holds

    def _write_if_one_statement(
        self, guard: str, want: bytes | None, head: bytes | None, last: dict[str, bytes | None]
    ) -> bool:
        """``write_if`` as one data-modifying CTE (one round trip): ``g``
        locks the guard's row holding ``want`` (``FOR UPDATE``: a concurrent
        writer waits, and the value is re-checked on the committed row), or,
        expecting no row, inserts the guard with its new value ``head`` unless
        one exists (a concurrent first writer waits on the key's unique index,
        then inserts nothing); the other writes happen only if ``g`` found or
        took the row."""
        t = self.table
        rest = {k: v for k, v in last.items() if not (want is None and k == guard)}
        dels = [k for k, v in rest.items() if v is None]
        keys = [k for k, v in rest.items() if v is not None]
        values = [v for v in rest.values() if v is not None]
        if want is None:
            g = f"INSERT INTO {t} (key, value) VALUES (%(guard)s, %(head)s) ON CONFLICT (key) DO NOTHING RETURNING key"
        else:
            g = f"SELECT key FROM {t} WHERE key = %(guard)s AND value = %(want)s FOR UPDATE"
        sql = (
            f"WITH g AS ({g}), "
            f"d AS (DELETE FROM {t} WHERE key = ANY(%(dels)s::text[]) AND EXISTS (SELECT 1 FROM g) RETURNING 1), "
            f"u AS (INSERT INTO {t} (key, value) "
            "SELECT k, v FROM unnest(%(keys)s::text[], %(values)s::bytea[]) AS w(k, v) WHERE EXISTS (SELECT 1 FROM g) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING 1) "
            "SELECT (SELECT count(*) FROM g)::int"
        )
        params = {"guard": guard, "want": want, "head": head, "dels": dels, "keys": keys, "values": values}
        with self.pool.connection() as conn:
            row = conn.execute(sql, params).fetchone()
        return row is not None and row[0] == 1
