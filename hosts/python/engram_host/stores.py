"""Stores: where a memory lives. engram asks its host for five calls on a
key-value store (the WIT interface ``store``); :class:`Store` is that
protocol, :class:`MemoryStore` and :class:`SQLiteStore` are the built-in
ones (``engram_host.postgres`` has ``PostgresStore``). Keys are ``str``,
values ``bytes``, kept exactly as given.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Protocol


class StoreConflict(Exception):
    """Raise from a custom store's ``write_if`` (or return ``False``) when the
    guard key does not hold the expected value."""


class Store(Protocol):
    """What a store implements (the WIT ``store`` interface). Any object
    with these methods will do; each runs on a worker thread of the memory,
    with its deadline (``store_timeout``), and what it raises fails the
    call as a :class:`~engram_host.StoreError` (its ``__cause__``).

    A store may also have ``get_many(keys)``: the values of ``keys`` in
    order (None where absent) in one round trip. engram then reads a log's
    tail and packs a batch at a time (at most 64 keys a call); without it
    they are read key by key. The built-in stores have it."""

    def get(self, key: str) -> bytes | bytearray | memoryview | None:
        """The value at ``key``, as it was put, or None."""
        ...

    def put(self, key: str, value: bytes) -> None:
        """Sets ``key`` to ``value``."""
        ...

    def delete(self, key: str) -> None:
        """Removes ``key`` (no error when it is not there)."""
        ...

    def list_prefix(self, prefix: str) -> Iterable[str]:
        """Every key starting with ``prefix``, in the order of their UTF-8 bytes."""
        ...

    def write_if(self, guard: str, expected: bytes | None, writes: list[tuple[str, bytes | None]]) -> bool | None:
        """Applies ``writes`` (a None value deletes its key) all at once if
        the value at ``guard`` equals ``expected`` (None: no value), else
        nothing: then returns False (or raises :class:`StoreConflict`)."""
        ...


def _stored(value: bytes | bytearray | memoryview | str | None) -> bytes | None:
    """A value read back from a built-in store as bytes. Rows written as
    text by engram before store values became bytes are their UTF-8."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


class MemoryStore:
    """A store in a dict of ``bytes`` values: fast, and gone with the
    process. Good for tests."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        # Callbacks run on worker threads, and an abandoned (timed-out) one
        # may still run while the next call goes on.
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self.data.get(key)

    def get_many(self, keys: list[str]) -> list[bytes | None]:
        with self._lock:
            return [self.data.get(k) for k in keys]

    def put(self, key: str, value: bytes) -> None:
        with self._lock:
            self.data[key] = bytes(value)

    def delete(self, key: str) -> None:
        with self._lock:
            self.data.pop(key, None)

    def list_prefix(self, prefix: str) -> list[str]:
        with self._lock:
            keys = [k for k in self.data if k.startswith(prefix)]
        return sorted(keys, key=lambda k: k.encode())

    def write_if(self, guard: str, expected: bytes | None, writes: Sequence[tuple[str, bytes | None]]) -> bool:
        with self._lock:
            if self.data.get(guard) != expected:
                return False
            for key, value in writes:
                if value is None:
                    self.data.pop(key, None)
                else:
                    self.data[key] = bytes(value)
            return True


class SQLiteStore:
    """A store in one SQLite file (Python's sqlite3).

    One table ``engram_kv(key TEXT, value BLOB)``; many memories
    (namespaces) can share a file. ``write_if`` checks the guard and applies
    every write inside one ``BEGIN IMMEDIATE`` transaction, so it is atomic
    and safe against other connections and processes writing the same file.

    A file made before values became bytes has a ``value TEXT`` column: it
    needs no migration (a TEXT column holds BLOBs as they are, and rows
    still holding text read back as their UTF-8 bytes).
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0):
        self.path = str(path)
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS engram_kv (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
            )

    def get(self, key: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM engram_kv WHERE key = ?", (key,)).fetchone()
        return None if row is None else _stored(row[0])

    def get_many(self, keys: list[str]) -> list[bytes | None]:
        """The values at ``keys``, in order (None where absent), a statement per 500 keys."""
        found: dict[str, bytes | None] = {}
        with self._lock:
            # In batches under SQLite's oldest limit of 999 parameters.
            for i in range(0, len(keys), 500):
                batch = list(keys[i : i + 500])
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(f"SELECT key, value FROM engram_kv WHERE key IN ({marks})", batch).fetchall()
                found.update((k, _stored(v)) for k, v in rows)
        return [found.get(k) for k in keys]

    def put(self, key: str, value: bytes) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)", (key, bytes(value)))

    def delete(self, key: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM engram_kv WHERE key = ?", (key,))

    def list_prefix(self, prefix: str) -> list[str]:
        # Keys compare as UTF-8 bytes (BINARY collation): scan from the prefix
        # and stop at the first key without it.
        out: list[str] = []
        with self._lock:
            for (key,) in self._db.execute("SELECT key FROM engram_kv WHERE key >= ? ORDER BY key", (prefix,)):
                if not key.startswith(prefix):
                    break
                out.append(key)
        return out

    def write_if(self, guard: str, expected: bytes | None, writes: Sequence[tuple[str, bytes | None]]) -> bool:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT value FROM engram_kv WHERE key = ?", (guard,)).fetchone()
                if (None if row is None else _stored(row[0])) != expected:
                    db.execute("ROLLBACK")
                    return False
                for key, value in writes:
                    if value is None:
                        db.execute("DELETE FROM engram_kv WHERE key = ?", (key,))
                    else:
                        db.execute("INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)", (key, bytes(value)))
                db.execute("COMMIT")
                return True
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Closes the connection."""
        with self._lock:
            self._db.close()
