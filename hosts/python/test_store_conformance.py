"""The store conformance suite in Python: what engram needs from every store
(the same checks as js/test/stores/conformance.js), against MemoryStore,
SQLiteStore (two connections on one file) and PostgresStore (separate pools
on one server: ENGRAM_PG_URL, as scripts/test-postgres starts it; skipped
without it unless ENGRAM_REQUIRE_PG is set)."""

import os
import tempfile
import threading
import unittest
import uuid

from engram_host import MemoryStore, SQLiteStore

PG_URL = os.environ.get("ENGRAM_PG_URL")


class Conformance:
    """Mixin: `open()` returns a new handle on this test's shared, initially empty store."""

    def open(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def test_get_of_a_missing_key_is_none(self):
        self.assertIsNone(self.open().get("ns/missing"))

    def test_put_then_get_returns_the_same_bytes(self):
        s = self.open()
        every = bytes(range(256))
        big = bytes((i * 7919) & 255 for i in range(1 << 20))
        s.put("ns/all", every)
        s.put("ns/empty", b"")
        s.put("ns/big", big)
        self.assertEqual(s.get("ns/all"), every)
        self.assertEqual(s.get("ns/empty"), b"")
        self.assertEqual(s.get("ns/big"), big)
        self.assertEqual(self.open().get("ns/all"), every)

    def test_get_many_returns_each_keys_bytes_in_the_order_asked(self):
        s = self.open()
        big = bytes((i * 31) & 255 for i in range(200 * 1024))
        s.put("gm/b", b"bee")
        s.put("gm/a", b"ay")
        s.put("gm/big", big)
        s.put("gm/empty", b"")
        got = s.get_many(["gm/b", "gm/missing", "gm/a", "gm/big", "gm/empty", "gm/b"])
        self.assertEqual(list(got), [b"bee", None, b"ay", big, b"", b"bee"])
        self.assertEqual(list(s.get_many([])), [])
        many = [f"gm/n/{i:04}" for i in range(1200)]
        for k in many[:600]:
            s.put(k, k.encode())
        self.assertEqual(list(s.get_many(many)), [k.encode() for k in many[:600]] + [None] * 600)

    def test_put_overwrites_and_delete_removes(self):
        s = self.open()
        s.put("ns/k", b"one")
        s.put("ns/k", b"two")
        self.assertEqual(s.get("ns/k"), b"two")
        s.delete("ns/k")
        self.assertIsNone(s.get("ns/k"))
        s.delete("ns/never")

    def test_list_returns_exactly_the_keys_under_a_prefix_in_byte_order(self):
        s = self.open()
        for k in ["a/log/00000002", "a/log/00000010", "a/head", "a/log/00000001", "a_b/x", "ab/x", "a%/x", "b/head", "a/Z", "a/é"]:
            s.put(k, k.encode())
        self.assertEqual(
            s.list_prefix("a/"), ["a/Z", "a/head", "a/log/00000001", "a/log/00000002", "a/log/00000010", "a/é"]
        )
        self.assertEqual(s.list_prefix("a/log/"), ["a/log/00000001", "a/log/00000002", "a/log/00000010"])
        self.assertEqual(s.list_prefix("a_"), ["a_b/x"])
        self.assertEqual(s.list_prefix("a%"), ["a%/x"])
        self.assertEqual(s.list_prefix("c/"), [])

    def test_write_if_applies_every_write_when_the_guard_holds(self):
        s = self.open()
        s.put("m/head", b"h1")
        s.put("m/old", b"old")
        self.assertIs(s.write_if("m/head", b"h1", [("m/log/1", b"entry"), ("m/old", None), ("m/head", b"h2")]), True)
        self.assertEqual(s.get("m/head"), b"h2")
        self.assertEqual(s.get("m/log/1"), b"entry")
        self.assertIsNone(s.get("m/old"))

    def test_write_if_changes_nothing_when_the_guard_moved(self):
        s = self.open()
        s.put("m/head", b"h2")
        self.assertIs(s.write_if("m/head", b"h1", [("m/log/2", b"entry"), ("m/head", b"h3")]), False)
        self.assertEqual(s.get("m/head"), b"h2")
        self.assertIsNone(s.get("m/log/2"))

    def test_write_if_expecting_absence_creates_a_memory_only_once(self):
        s = self.open()
        self.assertIs(s.write_if("n/head", None, [("n/log/1", b"first"), ("n/head", b"h1")]), True)
        self.assertIs(s.write_if("n/head", None, [("n/log/1", b"second"), ("n/head", b"h1'")]), False)
        self.assertEqual(s.get("n/log/1"), b"first")
        self.assertEqual(s.get("n/head"), b"h1")

    def test_write_if_compares_by_content_and_leaves_an_unwritten_guard(self):
        s = self.open()
        s.put("g/head", b"same")
        self.assertIs(s.write_if("g/head", bytes(bytearray(b"same")), [("g/x", b"x")]), True)
        self.assertEqual(s.get("g/head"), b"same")
        self.assertIs(s.write_if("g/absent", None, [("g/y", b"y")]), True)
        self.assertIsNone(s.get("g/absent"))
        self.assertEqual(s.get("g/y"), b"y")
        self.assertIs(s.write_if("g/head", b"same", [("g/head", None)]), True)
        self.assertIsNone(s.get("g/head"))

    def test_concurrent_write_if_on_one_head_lands_every_increment_once(self):
        writers, each = 4, 25
        handles = [self.open() for _ in range(writers)]
        errors = []

        def run(w, s):
            try:
                for i in range(each):
                    while True:
                        cur = s.get("c/head")
                        n = 0 if cur is None else int(cur)
                        if s.write_if("c/head", cur, [(f"c/log/{n + 1:08d}", f"{w}:{i}".encode()), ("c/head", str(n + 1).encode())]):
                            break
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(w, s)) for w, s in enumerate(handles)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        s = handles[0]
        self.assertEqual(s.get("c/head"), str(writers * each).encode())
        log = s.list_prefix("c/log/")
        self.assertEqual(len(log), writers * each)
        self.assertEqual(len({s.get(k) for k in log}), writers * each)


class MemoryStoreConformance(Conformance, unittest.TestCase):
    def setUp(self):
        self.store = MemoryStore()

    def open(self):
        return self.store


class SQLiteStoreConformance(Conformance, unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "kv.db")
        self.handles = []

    def tearDown(self):
        for h in self.handles:
            h._db.close()
        self.dir.cleanup()

    def open(self):
        h = SQLiteStore(self.path)
        self.handles.append(h)
        return h


@unittest.skipUnless(
    PG_URL or os.environ.get("ENGRAM_REQUIRE_PG"), "ENGRAM_PG_URL is not set (scripts/test-postgres sets it)"
)
class PostgresStoreConformance(Conformance, unittest.TestCase):
    def setUp(self):
        if not PG_URL:
            self.fail("ENGRAM_REQUIRE_PG is set but ENGRAM_PG_URL is not: start a server (scripts/test-postgres)")
        from psycopg_pool import ConnectionPool

        from engram_host.postgres import PostgresStore

        self.PostgresStore = PostgresStore
        self.ConnectionPool = ConnectionPool
        self.table = f"engram_conf_py_{uuid.uuid4().hex[:12]}"
        self.pools = []

    def tearDown(self):
        if self.pools:
            with self.pools[0].connection() as conn:
                conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        for p in self.pools:
            p.close()

    def open(self):
        # Each handle its own pool: separate connections, as separate servers have.
        pool = self.ConnectionPool(PG_URL, min_size=1, max_size=2, open=True)
        self.pools.append(pool)
        return self.PostgresStore(pool, table=self.table)

    def test_bad_arguments_are_refused_before_any_query(self):
        with self.assertRaises(TypeError):
            self.PostgresStore(None)
        with self.assertRaises(ValueError):
            self.PostgresStore(self.open().pool, table="x; DROP TABLE y")


if __name__ == "__main__":
    unittest.main()
