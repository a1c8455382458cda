"""A store in PostgreSQL for engram, over psycopg 3 (the ``postgres`` extra:
``pip install "engram-host[postgres]"``).

One table holds any number of memories (their keys start with their
namespace)::

    CREATE TABLE engram_kv (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL)

created on first use. The app passes its own ``psycopg_pool.ConnectionPool``
(or anything whose ``connection()`` is a context manager yielding a psycopg
connection); the store never opens or closes connections itself.

``write_if`` is one transaction guarded by a lock on the head's row, so no
update is lost under READ COMMITTED, the default: with an expected value,
``SELECT ... FOR UPDATE`` waits for any writer holding the row and reads the
committed value; expecting no value (a new memory), ``INSERT ... ON CONFLICT
DO NOTHING`` takes the row, and a concurrent first writer inserts nothing.
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

        holds = False
        with self.pool.connection() as conn, conn.transaction():
            if want is None:
                cur = conn.execute(
                    f"INSERT INTO {t} (key, value) VALUES (%s, '') ON CONFLICT (key) DO NOTHING", (guard,)
                )
                holds = cur.rowcount == 1
            else:
                row = conn.execute(f"SELECT value FROM {t} WHERE key = %s FOR UPDATE", (guard,)).fetchone()
                holds = row is not None and bytes(row[0]) == want
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
            if want is None and not guard_written:
                conn.execute(f"DELETE FROM {t} WHERE key = %s", (guard,))
        return holds
