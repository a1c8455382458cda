"""Tests of the Python host (engram_host.py) over the built component.

Run: ``.venv/bin/python -m unittest discover -s hosts/python`` (the component
must be built: ``scripts/build-component``, or set ``ENGRAM_COMPONENT``).
Deterministic: a manual clock and a model that replays the recorded
transcript of the shared scenario (``tests/fixtures/scenario.json``).
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import engram_host  # noqa: E402
from engram_host import (  # noqa: E402
    Busy,
    CallableModel,
    EngramError,
    InvalidInput,
    Memory,
    MemoryStore,
    ModelError,
    OpenAIModel,
    SQLiteStore,
    StoreError,
    TaskRequest,
)
from wasmtime.component import Variant  # noqa: E402
from engram_host import ModelUnavailable  # noqa: E402

FIXTURE = json.loads((HERE.parents[1] / "tests" / "fixtures" / "scenario.json").read_text())
#: The multi-thread scenario: each step's view is the view of that step's thread.
THREADS_FIXTURE = HERE.parents[1] / "tests" / "fixtures" / "scenario-threads.json"


class TranscriptModel:
    """Replays the fixture's recorded model calls in order, like
    ``engram::testing::TranscriptModel``: a call that differs from the
    recording is kept in ``mismatches`` and fails."""

    def __init__(self, calls: List[Dict[str, Any]], start: int = 0):
        self.calls = calls
        self.position = start
        self.mismatches: List[str] = []

    def _take(self) -> Optional[Dict[str, Any]]:
        i = self.position
        self.position += 1
        return self.calls[i] if i < len(self.calls) else None

    def complete(self, request: TaskRequest) -> str:
        i, rec = self.position, self._take()
        if rec and rec["call"] == "complete" and rec["task"] == request.task and rec["content"] == request.content:
            if "Ok" in rec["answer"]:
                return rec["answer"]["Ok"]
            raise RuntimeError(rec["answer"]["Err"])
        self.mismatches.append(f"call {i}: got a {request.task} request, recording has {rec and rec['call']}")
        raise RuntimeError(self.mismatches[-1])

    def embed(self, texts: List[str]) -> List[List[float]]:
        i, rec = self.position, self._take()
        if rec and rec["call"] == "embed" and rec["texts"] == texts:
            return rec["vectors"]
        self.mismatches.append(f"call {i}: embed of {texts!r} is not the recorded call")
        raise RuntimeError(self.mismatches[-1])


#: 2026-03-02 10:00 UTC: a clock reading must be in ms after 2000.
T0 = 1_772_445_600_000


class ManualClock:
    """A clock that moves only when told."""

    def __init__(self, ms: int):
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def no_model() -> CallableModel:
    """A model for calls that must not reach it (reopening, viewing)."""

    def refuse(*_: Any) -> Any:
        raise AssertionError("the model was called")

    return CallableModel(complete=refuse, embed=refuse)


def open_scenario(store: Any, model: Any, clock: ManualClock) -> Memory:
    return Memory(FIXTURE["namespace"], store=store, model=model, clock=clock, config=FIXTURE["config"])


def add_step(memory: Memory, clock: ManualClock, step: Dict[str, Any]) -> Dict[str, Any]:
    assert step["op"] == "add"
    clock.ms = step["at"]
    m = step["message"]
    return memory.add_message(
        m["role"], m.get("content", ""), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id")
    )


def replay(memory: Memory, clock: ManualClock, upto: int) -> List[int]:
    """Runs steps [0, upto); returns the transcript position before each."""
    positions = []
    for step in FIXTURE["steps"][:upto]:
        positions.append(memory.model.position)
        add_step(memory, clock, step)
    return positions


def child(db: str, upto: int) -> None:
    """In a subprocess: replay `upto` steps into the SQLite file `db` and
    print the view (no argument: reopen and print the view only)."""
    clock = ManualClock(FIXTURE["steps"][0]["at"])
    model = TranscriptModel(FIXTURE["transcript"]) if upto else no_model()
    memory = open_scenario(SQLiteStore(db), model, clock)
    if upto:
        replay(memory, clock, upto)
        assert model.mismatches == [], model.mismatches
    print(json.dumps(memory.render_openai()))


def run_child(db: str, upto: int) -> Any:
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import test_engram_host as t; t.child({db!r}, {upto})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"child failed:\n{out.stderr}")
    return json.loads(out.stdout)


class FlakyStore(SQLiteStore):
    """A SQLite store whose methods can be made to raise, one call at a time."""

    def __init__(self, path: str):
        super().__init__(path)
        self.fail: Optional[str] = None
        self.conflicts = 0
        self.write_ifs = 0

    def _maybe(self, name: str) -> None:
        if self.fail == name:
            self.fail = None
            raise OSError(f"disk full during {name}")

    def get(self, key: str) -> Optional[bytes]:
        self._maybe("get")
        return super().get(key)

    def list_prefix(self, prefix: str) -> List[str]:
        self._maybe("list_prefix")
        return super().list_prefix(prefix)

    def write_if(self, guard, expected, writes):  # type: ignore[no-untyped-def]
        self.write_ifs += 1
        self._maybe("write_if")
        if self.conflicts:
            self.conflicts -= 1
            return False
        return super().write_if(guard, expected, writes)


class TempDirTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self._tmp.name, "memory.db")

    def tearDown(self) -> None:
        self._tmp.cleanup()


class ScenarioTest(unittest.TestCase):
    def test_views_equal_the_native_engines_after_every_step(self) -> None:
        clock = ManualClock(FIXTURE["steps"][0]["at"])
        model = TranscriptModel(FIXTURE["transcript"])
        memory = open_scenario(MemoryStore(), model, clock)
        fired: List[Dict[str, Any]] = []
        memory.on_degraded = fired.append
        reported: List[Dict[str, Any]] = []
        for i, (step, expected) in enumerate(zip(FIXTURE["steps"], FIXTURE["views"])):
            added = add_step(memory, clock, step)
            self.assertIsNone(added["maintain_error"], f"step {i}")
            reported += added["degraded"] + (added["maintained"] or {"degraded": []})["degraded"]
            self.assertEqual(model.mismatches, [], f"step {i}")
            self.assertEqual(memory.render_openai(), expected, f"step {i}: view differs from the native engine's")
        self.assertEqual(model.position, len(FIXTURE["transcript"]))
        # Each degraded step reached the callback once, as the calls reported it.
        self.assertEqual(fired, reported)
        health = memory.stats()["model"]
        self.assertEqual(health["degraded_steps"], len(fired))
        self.assertEqual(sum(health["calls"].values()), len(FIXTURE["transcript"]), "every request counted")
        self.assertEqual(memory.take_degraded(), [], "the callback took them")

    def test_listings_explain_and_stats_describe_the_scenario(self) -> None:
        clock = ManualClock(FIXTURE["steps"][0]["at"])
        memory = open_scenario(MemoryStore(), TranscriptModel(FIXTURE["transcript"]), clock)
        replay(memory, clock, len(FIXTURE["steps"]))
        stats = memory.stats()
        self.assertEqual(stats["messages"], 30)
        self.assertEqual(len(memory.messages()), 30)
        self.assertEqual(memory.messages()[3]["tool_calls"][0]["name"], "search_hotels")
        self.assertEqual(stats["ceiling"], FIXTURE["config"]["ceiling_tokens"])
        self.assertEqual(sum(stats["facts"]), len(memory.facts()))
        self.assertEqual(stats["facts"][1], sum(1 for f in memory.facts() if f["retired"] is not None))
        retired = [f for f in memory.facts() if f["retired"] is not None]
        self.assertEqual([f["sentence"] for f in retired], ["The Lisbon offsite budget is 12000 euros."])
        why = memory.explain_fact(retired[0]["id"])
        self.assertFalse(why["in_facts_block"])
        self.assertTrue(why["summary"].startswith(f"Fact {retired[0]['id']} is retired"), why["summary"])
        names = {e["name"] for e in memory.entities()}
        self.assertIn("Lisbon offsite", names)
        acme = next(e for e in memory.entities() if e["name"] == "Acme team")
        self.assertEqual([a["resolution"] for a in acme["aliases"]][0], {"how": "new"})
        episodes = memory.episodes()
        self.assertEqual(sum(stats["episodes"]), len(episodes))
        live, leaving, sealed, forgotten = stats["episodes"]
        self.assertEqual(sealed, sum(1 for e in episodes if e["state"] == "sealed"))
        # Judgments: the stored traces and the no answers counted per fact.
        declined = sum(memory.explain_fact(f["id"])["declined"] for f in memory.facts())
        self.assertEqual(stats["traces"][0], len(memory.traces()) + declined)
        self.assertEqual(stats["traces"][1], sum(1 for t in memory.traces() if t["yes"]))
        self.assertEqual(episodes[0]["history"][0]["state"], "live")
        first = memory.explain_episode(episodes[0]["id"])
        self.assertEqual(first["state"], episodes[0]["state"])
        causes = [t["cause"] for t in memory.traces()]
        self.assertIn({"kind": "encoding"}, causes)
        self.assertTrue(any(c["kind"] == "fact" and isinstance(c["fact"], int) for c in causes))
        view = memory.view()
        self.assertEqual(view["tokens"], stats["view_tokens"])
        self.assertEqual(view["tokens"], sum(i["tokens"] for i in view["items"]))
        self.assertEqual([i["kind"] for i in view["items"]].count("recall"), 1)
        # The turn's shapes: pending work, the model's health, fades.
        self.assertEqual(
            set(stats["pending"]), {"unjudged", "undistilled", "leaving", "awaiting_note", "fade_ahead", "idle_threads"}
        )
        self.assertEqual(stats["pending"], memory.pending())
        health = stats["model"]
        self.assertIsInstance(health["calls"], dict)
        self.assertGreater(health["calls"]["segment"], 0)
        self.assertEqual(set(health), {"calls", "failed", "consecutive_failures", "last_error", "degraded_steps", "repairs", "truncated"})
        fades = memory.fades()
        self.assertEqual(len(fades), stats["fades"])
        self.assertTrue(all(f["reason"] in ("ceiling", "sleep", "ahead") for f in fades), fades)
        self.assertIn("over_ceiling", view)
        self.assertTrue(all(isinstance(m["judged"], bool) for m in memory.messages()))
        self.assertTrue(all({"noted", "deferred", "abandoned"} <= set(e) for e in episodes))
        self.assertTrue(all("gave_way" in b for b in memory.recalls()))

    def test_recall_blocks_search_and_past_views(self) -> None:
        clock = ManualClock(FIXTURE["steps"][0]["at"])
        memory = open_scenario(MemoryStore(), TranscriptModel(FIXTURE["transcript"]), clock)
        replay(memory, clock, len(FIXTURE["steps"]))
        blocks = memory.recalls()
        self.assertGreater(len(blocks), 0)
        items = memory.view()["items"]
        k = [i["kind"] for i in items].index("recall")
        self.assertEqual(items[k]["role"], "system")
        self.assertEqual(items[k + 1]["role"], "user", "the recall item sits just before its user message")
        self.assertIn(items[k + 1]["message"], [b["message"] for b in blocks])
        for b in blocks:
            self.assertIsNotNone(b["distilled"], "every turn of the scenario ended")
            for r in b["items"]:
                self.assertIn(r["item"]["kind"], ("fact", "passage"))
                self.assertIn(r["judgment"], ("relevant", "fallback", "ranked"))
        # The turn already ended: end_turn has nothing left to distill.
        memory.model = no_model()
        self.assertIsNone(memory.end_turn())
        # Search with the model offline degrades to the word and fused ranks.
        calls: List[str] = []

        def offline(arg: Any) -> Any:
            calls.append(getattr(arg, "task", "embed"))
            raise ConnectionError("offline")

        memory.model = CallableModel(complete=offline, embed=offline)
        # Within a budget facts come before the passages that say them.
        hits = memory.search("Casa Alfama", limit=3, budget_tokens=1_000)
        self.assertEqual(len(hits), 3)
        self.assertEqual(hits[0]["item"], {"kind": "fact", "id": 3})
        self.assertEqual(hits[0]["text"], "Casa Alfama is booked as the Lisbon offsite venue.")
        self.assertEqual(hits[0]["hits"][0]["list"], "fact_words")
        self.assertIn("embed", calls)
        self.assertNotIn("split", calls, "a two-word query is not split by the model")
        with self.assertRaises(InvalidInput):
            memory.search("   ")
        # Views of the past, rebuilt from the log, match what was seen then.
        for i in (5, 20):
            self.assertEqual(memory.render_openai_at(FIXTURE["steps"][i]["at"]), FIXTURE["views"][i])
        self.assertEqual(memory.stats()["messages"], 30, "search and past views wrote nothing")

    def test_export_imports_into_another_namespace_with_the_same_view(self) -> None:
        clock = ManualClock(FIXTURE["steps"][0]["at"])
        store = MemoryStore()
        memory = open_scenario(store, TranscriptModel(FIXTURE["transcript"]), clock)
        replay(memory, clock, 12)
        copy = Memory("copy", store=store, model=no_model(), clock=clock, config=FIXTURE["config"])
        copy.import_(memory.export())
        self.assertEqual(copy.render_openai(), FIXTURE["views"][11])
        with self.assertRaises(InvalidInput):
            copy.import_(memory.export())  # only into an empty memory


@unittest.skipUnless(THREADS_FIXTURE.exists(), "tests/fixtures/scenario-threads.json is not there yet")
class ThreadsScenarioTest(unittest.TestCase):
    def test_views_equal_the_native_engines_in_every_thread(self) -> None:
        fixture = json.loads(THREADS_FIXTURE.read_text())
        self.assertEqual(len(fixture["steps"]), len(fixture["views"]))
        model = TranscriptModel(fixture["transcript"])
        clock = ManualClock(fixture["steps"][0]["at"])
        memory = Memory(fixture["namespace"], store=MemoryStore(), model=model, clock=clock,
                        config=fixture["config"])
        threads = set()
        for i, (step, expected) in enumerate(zip(fixture["steps"], fixture["views"])):
            self.assertEqual(step["op"], "add", i)
            clock.ms = step["at"]
            m = step["message"]
            thread = m.get("thread") or "main"
            threads.add(thread)
            added = memory.add_message(
                m["role"],
                m.get("content", ""),
                tool_calls=m.get("tool_calls"),
                tool_call_id=m.get("tool_call_id"),
                thread=m.get("thread"),
            )
            self.assertIsNone(added["maintain_error"], i)
            self.assertEqual(model.mismatches, [], f"step {i}: model calls differ from the native run")
            self.assertEqual(memory.render_openai(thread=thread), expected, f"step {i} ({thread})")
        self.assertEqual(model.position, len(fixture["transcript"]), "every recorded model call was made")
        self.assertGreater(len(threads), 1)
        self.assertEqual([t["thread"] for t in memory.threads()], sorted(threads))
        self.assertEqual(
            [m["thread"] for m in memory.messages()],
            [s["message"].get("thread") or "main" for s in fixture["steps"]],
        )


class CountingStore(SQLiteStore):
    """A SQLite store that counts its calls by kind, as ``stats()`` names them."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.calls = {"get": 0, "get_many": 0, "put": 0, "delete": 0, "list": 0, "write_if": 0}

    def get(self, key: str) -> Any:
        self.calls["get"] += 1
        return super().get(key)

    def get_many(self, keys: list[str]) -> Any:
        self.calls["get_many"] += 1
        return super().get_many(keys)

    def put(self, key: str, value: bytes) -> None:
        self.calls["put"] += 1
        super().put(key, value)

    def delete(self, key: str) -> None:
        self.calls["delete"] += 1
        super().delete(key)

    def list_prefix(self, prefix: str) -> Any:
        self.calls["list"] += 1
        return super().list_prefix(prefix)

    def write_if(self, guard: str, expected: Any, writes: Any) -> bool:
        self.calls["write_if"] += 1
        return super().write_if(guard, expected, writes)


class KeyByKey:
    """A store with the five required methods only (no ``get_many``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def get(self, key: str) -> Any:
        return self.inner.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.inner.put(key, value)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list_prefix(self, prefix: str) -> Any:
        return self.inner.list_prefix(prefix)

    def write_if(self, guard: str, expected: Any, writes: Any) -> bool:
        return self.inner.write_if(guard, expected, writes)


class RoundTripsTest(TempDirTest):
    def test_stats_count_the_handles_store_calls_by_kind(self) -> None:
        store = CountingStore(self.db)
        memory = Memory("trips", store=store, model="offline", clock=ManualClock(T0))
        opened = memory.stats()["round_trips"]
        self.assertEqual({k: opened[k] for k in store.calls}, store.calls)
        self.assertEqual(opened["write_if"], 0)
        memory.add_message("user", "Which compost suits the raised beds?")
        memory.render_openai()
        memory.add_message("assistant", "Leaf mould, dug in each March.")
        trips = memory.stats()["round_trips"]
        self.assertEqual({k: trips[k] for k in store.calls}, store.calls)
        self.assertEqual(trips["total"], sum(store.calls.values()))
        # The question: a head read and a commit; render: a head read; the
        # reply: a commit on the state render found; stats(): a head read.
        self.assertEqual(trips["write_if"], 2)
        self.assertEqual(trips["get"] - opened["get"], 3)

    def test_a_second_handle_catches_up_in_one_batched_read(self) -> None:
        store = CountingStore(self.db)
        clock = ManualClock(T0)
        a = Memory("trips", store=store, model="offline", clock=clock)
        b = Memory("trips", store=SQLiteStore(self.db), model="offline", clock=clock)
        a.add_message("user", "The shed key is under the blue pot.")
        for i in range(10):
            clock.ms += 1_000
            b.add_message("user", f"Note {i}: the hose is in the shed.")
        before = dict(store.calls)
        clock.ms += 1_000
        a.add_message("user", "Where is the shed key?")
        spent = {k: store.calls[k] - before[k] for k in store.calls}
        # The head, b's ten entries and the key after them in one get_many, the commit.
        self.assertEqual(spent, {"get": 1, "get_many": 1, "put": 0, "delete": 0, "list": 0, "write_if": 1})
        self.assertEqual(len(a.messages()), 12)
        # A store without get_many is read key by key, with the same result.
        plain = Memory("trips", store=KeyByKey(SQLiteStore(self.db)), model="offline", clock=clock)
        self.assertEqual([m["content"] for m in plain.messages()], [m["content"] for m in a.messages()])


class PersistenceTest(TempDirTest):
    def test_a_fresh_process_reopens_the_sqlite_file_with_the_same_view(self) -> None:
        written = run_child(self.db, 20)
        reopened = run_child(self.db, 0)
        self.assertEqual(written, FIXTURE["views"][19])
        self.assertEqual(reopened, written)

    def test_a_raising_store_fails_the_call_and_loses_nothing(self) -> None:
        clock = ManualClock(FIXTURE["steps"][0]["at"])
        model = TranscriptModel(FIXTURE["transcript"])
        store = FlakyStore(self.db)
        memory = open_scenario(store, model, clock)
        replay(memory, clock, 16)
        # Step 17 fades: the model notes an episode, then the commit fails.
        before = model.position
        store.fail = "write_if"
        with self.assertRaises(StoreError) as raised:
            add_step(memory, clock, FIXTURE["steps"][16])
        self.assertIn("disk full during write_if", str(raised.exception))
        self.assertIsInstance(raised.exception.__cause__, OSError)
        self.assertGreater(model.position, before, "the call got as far as its model calls")

        reopened = open_scenario(SQLiteStore(self.db), no_model(), clock)
        self.assertEqual(reopened.render_openai(), FIXTURE["views"][15], "the state before the call")
        self.assertEqual(len(reopened.messages()), 16)

        # The same handle recovers: it reloads from the store and the step
        # then runs as it did natively.
        model.position = before
        add_step(memory, clock, FIXTURE["steps"][16])
        self.assertEqual(model.mismatches, [])
        self.assertEqual(memory.render_openai(), FIXTURE["views"][16])

    def test_values_are_bytes_in_a_blob_column(self) -> None:
        memory = Memory("alice", store=SQLiteStore(self.db), model=no_model(), clock=ManualClock(1_772_445_600_000))
        memory.add_message("user", "Hello there.")
        db = sqlite3.connect(self.db)
        kinds = {t for (t,) in db.execute("SELECT typeof(value) FROM engram_kv")}
        self.assertEqual(kinds, {"blob"})
        declared = {name: kind for (_, name, kind, *_) in db.execute("PRAGMA table_info(engram_kv)")}
        self.assertEqual(declared["value"], "BLOB")
        head = SQLiteStore(self.db).get("engram/alice/head")
        self.assertIsInstance(head, bytes)
        json.loads(head)  # the head stays JSON text

    def test_a_file_from_before_bytes_needs_no_migration(self) -> None:
        # The old schema held values as TEXT: such rows read back as their
        # UTF-8 bytes, new writes land as BLOBs, and write_if compares them.
        db = sqlite3.connect(self.db)
        db.execute("CREATE TABLE engram_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
        db.execute("INSERT INTO engram_kv VALUES ('k', '{\"é\":1}')")
        db.commit()
        store = SQLiteStore(self.db)
        self.assertEqual(store.get("k"), '{"é":1}'.encode())
        self.assertTrue(store.write_if("k", '{"é":1}'.encode(), [("k", b"\x00\xff"), ("j", b"")]))
        self.assertEqual(store.get("k"), b"\x00\xff")
        self.assertEqual(store.get("j"), b"")
        self.assertFalse(store.write_if("k", b"\x00", []))
        memory = Memory("alice", store=store, model=no_model(), clock=ManualClock(T0))
        memory.add_message("user", "Hello there.")
        self.assertEqual(len(Memory("alice", store=SQLiteStore(self.db), model=no_model(), clock=ManualClock(T0)).messages()), 1)

    def test_a_store_returning_text_fails_with_store_error(self) -> None:
        class Texty(MemoryStore):
            def get(self, key: str) -> Any:
                value = super().get(key)
                return None if value is None else value.decode()

        store = Texty()
        Memory("alice", store=store, model=no_model(), clock=ManualClock(T0)).add_message("user", "Hi.")
        with self.assertRaises(StoreError) as raised:
            Memory("alice", store=store, model=no_model(), clock=ManualClock(T0))
        self.assertIn("is a str, not bytes", str(raised.exception))
        self.assertIsInstance(raised.exception.__cause__, TypeError)

    def test_a_store_failing_on_open_raises_store_error(self) -> None:
        store = FlakyStore(self.db)
        store.fail = "get"
        with self.assertRaises(StoreError) as raised:
            Memory("alice", store=store, model=no_model(), clock=ManualClock(T0))
        self.assertIsInstance(raised.exception.__cause__, OSError)

    def test_a_conflicting_commit_is_retried_after_a_reload(self) -> None:
        store = FlakyStore(self.db)
        memory = Memory("alice", store=store, model=no_model(), clock=ManualClock(1_772_445_600_000))
        store.conflicts = 1
        memory.add_message("user", "Hello there.")
        self.assertEqual(store.write_ifs, 2)
        self.assertEqual(memory.render_openai(), [{"role": "user", "content": "Hello there."}])

    def test_a_store_that_always_conflicts_makes_the_call_busy(self) -> None:
        store = FlakyStore(self.db)
        memory = Memory("alice", store=store, model=no_model(), clock=ManualClock(T0), config={"conflict_attempts": 2})
        store.conflicts = 5
        with self.assertRaises(Busy):
            memory.add_message("user", "Hello there.")
        self.assertEqual(store.write_ifs, 2)

    def test_two_namespaces_in_one_sqlite_file_are_isolated(self) -> None:
        clock = ManualClock(1_772_445_600_000)
        alice = Memory("alice", store=SQLiteStore(self.db), model=no_model(), clock=clock)
        bob = Memory("bob", store=SQLiteStore(self.db), model=no_model(), clock=clock)
        alice.add_message("user", "Alice likes tea.")
        bob.add_message("user", "Bob likes coffee.")
        bob.add_message("system", "Be brief.")
        self.assertEqual(alice.render_openai(), [{"role": "user", "content": "Alice likes tea."}])
        self.assertEqual(len(bob.messages()), 2)
        alice2 = Memory("alice", store=SQLiteStore(self.db), model=no_model(), clock=clock)
        self.assertEqual(alice2.render_openai(), alice.render_openai())
        keys = [k for (k,) in sqlite3.connect(self.db).execute("SELECT key FROM engram_kv")]
        self.assertTrue(all(k.startswith(("engram/alice/", "engram/bob/")) for k in keys), keys)
        self.assertEqual(alice.stats()["log_entries"], 1)
        self.assertEqual(bob.stats()["log_entries"], 2)


class ErrorsTest(unittest.TestCase):
    def memory(self, **kw: Any) -> Memory:
        return Memory("errors", model=no_model(), clock=ManualClock(T0), **kw)

    def test_invalid_input_is_raised_and_writes_nothing(self) -> None:
        memory = self.memory()
        with self.assertRaises(InvalidInput) as raised:
            memory.add_message("tool", "output", tool_call_id="call_9")
        self.assertIn("call_9", str(raised.exception))
        self.assertEqual(raised.exception.code, "invalid-input")
        self.assertIsInstance(raised.exception, EngramError)
        self.assertEqual(memory.messages(), [])
        with self.assertRaises(InvalidInput):
            memory.add_message("user", "   ")
        with self.assertRaises(InvalidInput):
            memory.explain_episode(7)

    def test_bad_namespace_and_config_are_invalid_input(self) -> None:
        with self.assertRaises(InvalidInput):
            Memory("a/b", model=no_model())
        with self.assertRaises(InvalidInput) as raised:
            self.memory(config={"ceiling_tokenz": 10})
        self.assertIn("ceiling_tokenz", str(raised.exception))

    def test_a_failing_model_degrades_the_boundary_judgment(self) -> None:
        calls = []

        def down(request: TaskRequest) -> str:
            calls.append(request.task)
            raise TimeoutError("the LLM is down")

        memory = Memory("down", model=CallableModel(complete=down, embed=lambda t: []), clock=ManualClock(T0))
        memory.add_message("user", "First.")
        memory.add_message("assistant", "Second.")
        self.assertEqual(calls, [], "a reply's judgment waits for the next user message")
        self.assertFalse(memory.messages()[1]["judged"])
        added = memory.add_message("user", "Third.")
        self.assertEqual(calls, ["segment"] * 6, "the reply's and its own: three attempts each, then degraded")
        self.assertEqual([d["task"] for d in added["degraded"]], ["segment", "segment"])
        self.assertIn("TimeoutError: the LLM is down", added["degraded"][0]["error"])
        self.assertEqual(added["degraded"][0]["attempts"], 3)
        self.assertEqual([m["boundary"] for m in memory.messages()], [None] * 3)
        self.assertTrue(all(m["judged"] for m in memory.messages()))
        health = memory.stats()["model"]
        self.assertEqual(health["failed"], {"segment": 6})
        self.assertEqual(health["degraded_steps"], 2)
        self.assertEqual(health["consecutive_failures"], 6)
        self.assertEqual(health["last_error"]["task"], "segment")
        # Without a callback the steps wait in the queue.
        self.assertEqual([d["task"] for d in memory.take_degraded()], ["segment", "segment"])
        self.assertEqual(memory.take_degraded(), [])

    def test_a_raising_clock_surfaces_unchanged_and_the_next_call_works(self) -> None:
        clock = ManualClock(T0)
        memory = Memory("clock", model=no_model(), clock=clock)

        class Broken(Exception):
            pass

        def broken() -> int:
            raise Broken("no time")

        memory.clock = broken
        with self.assertRaises(Broken):
            memory.add_message("user", "Hello.")
        memory.clock = clock
        memory.add_message("user", "Hello again.")
        self.assertEqual([m["content"] for m in memory.messages()], ["Hello again."])

    def test_the_note_tool_writes_facts_from_a_tool_call(self) -> None:
        memory = Memory("note", model=CallableModel(complete=lambda r: "{}", embed=lambda t: [[1.0, 0.0]] * len(t)),
                        clock=ManualClock(T0))
        tool = Memory.note_tool()
        self.assertEqual(tool["function"]["name"], "note")
        with self.assertRaises(InvalidInput):
            memory.note_tool_call({"facts": [{"subject": "Ana", "predicate": "likes", "object": "tea",
                                              "sentence": "Ana likes tea."}]})  # no episode yet
        self.assertEqual(memory.facts(), [])


def down_model(calls: Optional[List[str]] = None) -> CallableModel:
    """A model whose completions always fail (embeddings work)."""

    def down(request: TaskRequest) -> str:
        if calls is not None:
            calls.append(request.task)
        raise ConnectionError("the LLM is down")

    return CallableModel(complete=down, embed=lambda texts: [[float(len(t)), 1.0] for t in texts])


def calm_model() -> CallableModel:
    """Judges every message a continuation; other tasks fail."""

    def complete(request: TaskRequest) -> str:
        if request.task == "segment":
            return '{"boundary": 0.1}'
        raise RuntimeError(f"no {request.task} here")

    return CallableModel(complete=complete, embed=lambda texts: [[float(len(t)), 1.0] for t in texts])


CONVERSATION = [("user", "Plan the Lisbon offsite."), ("assistant", "When do you leave?"), ("user", "On March 2.")]


class TurnTest(unittest.TestCase):
    """maintain, pending, on_degraded and strict."""

    def test_on_degraded_hears_each_step_once_after_every_call(self) -> None:
        fired: List[Dict[str, Any]] = []
        memory = Memory("turn", model=down_model(), clock=ManualClock(T0), on_degraded=fired.append)
        results = [memory.add_message(role, text) for role, text in CONVERSATION]
        self.assertEqual(fired, results[2]["degraded"])
        self.assertEqual([d["task"] for d in fired], ["segment", "segment"])
        self.assertTrue(all(d["effect"] and d["attempts"] == 3 for d in fired), fired)
        self.assertEqual(memory.take_degraded(), [], "the callback took them")
        self.assertEqual(len(memory.messages()), 3, "the conversation went on")

    def test_strict_raises_model_error_and_writes_nothing(self) -> None:
        fired: List[Dict[str, Any]] = []
        memory = Memory("turn", model=down_model(), clock=ManualClock(T0), config={"strict": True},
                        on_degraded=fired.append)
        for role, text in CONVERSATION[:2]:
            memory.add_message(role, text)
        before = memory.messages()
        with self.assertRaises(ModelError) as raised:
            memory.add_message(*CONVERSATION[2])
        self.assertIn("segment failed after 3 attempts", str(raised.exception))
        self.assertIsInstance(raised.exception.__cause__, ConnectionError)
        self.assertEqual(memory.messages(), before, "the failed call wrote nothing")
        self.assertEqual([d["task"] for d in fired], ["segment", "segment"], "a failed call's steps are heard too")

    def test_maintain_and_pending_round_trip(self) -> None:
        memory = Memory("turn", model=calm_model(), clock=ManualClock(T0), config={"maintain_after_reply": False})
        memory.add_message("user", "Plan the Lisbon offsite.")
        added = memory.add_message("assistant", "When do you leave?")
        self.assertIsNone(added["maintained"])
        pending = memory.pending()
        self.assertEqual(pending, {"unjudged": [2], "undistilled": [], "leaving": [], "awaiting_note": [],
                                   "fade_ahead": False, "idle_threads": []})
        self.assertEqual(memory.stats()["pending"], pending)
        maintained = memory.maintain()
        self.assertEqual(maintained["judged"], [2])
        self.assertEqual(maintained["degraded"], [])
        self.assertEqual(set(maintained), {"judged", "formed", "distilled", "fade", "sealed", "deferred", "noted_late",
                                           "abandoned", "gave_way", "slept", "degraded"})
        self.assertEqual(memory.pending()["unjudged"], [])
        reply = memory.messages()[1]
        self.assertTrue(reply["judged"])
        self.assertAlmostEqual(reply["boundary"], 0.1, places=6)

    def test_a_reply_runs_maintain_by_itself_and_end_turn_judges(self) -> None:
        memory = Memory("turn", model=calm_model(), clock=ManualClock(T0))
        memory.add_message("user", "Plan the Lisbon offsite.")
        added = memory.add_message("assistant", "When do you leave?")
        self.assertIsNone(added["maintain_error"])
        self.assertEqual(added["maintained"]["judged"], [], "the reply's judgment waits for the next round")
        self.assertEqual(memory.pending()["unjudged"], [2])
        self.assertIsNone(memory.end_turn())
        self.assertEqual(memory.pending()["unjudged"], [])


class HostShapesTest(unittest.TestCase):
    """Every answer a host callback can give (ok, error, conflict) has a shape
    wasmtime-py lowers into the import's WIT type and lifts back unchanged.
    (wasmtime-py passes some `result`s tagged and others bare, depending on
    their Python types; a wrong guess would trap inside a call.)"""

    def test_every_callback_answer_lowers_into_its_wit_type(self) -> None:
        import ctypes

        import wasmtime
        from wasmtime import _ffi as ffi

        class Raising(MemoryStore):
            def get(self, key: str) -> Optional[bytes]:
                raise OSError("down")

            def get_many(self, keys: List[str]) -> List[Optional[bytes]]:
                raise OSError("down")

            def put(self, key: str, value: bytes) -> None:
                raise OSError("down")

            def delete(self, key: str) -> None:
                raise OSError("down")

            def list_prefix(self, prefix: str) -> List[str]:
                raise OSError("down")

            def write_if(self, guard, expected, writes):  # type: ignore[no-untyped-def]
                raise OSError("down")

        def fail(*_: Any) -> Any:
            raise RuntimeError("down")

        ok = Memory("shapes", model=CallableModel(complete=lambda r: "{}", embed=lambda t: [[1, 2]]), clock=ManualClock(T0))
        bad = Memory("shapes", model=CallableModel(complete=fail, embed=fail, count_tokens=lambda t: 7), clock=ManualClock(T0))
        bad.store = Raising()
        plain = Memory("shapes", clock=ManualClock(T0))
        plain.store = KeyByKey(Raising())  # no get_many: read key by key, the error as get's
        request = _record_request()
        answers = {
            "get": [ok._host_get(None, "k"), bad._host_get(None, "k")],
            "get-many": [ok._host_get_many(None, ["k", "j"]), bad._host_get_many(None, ["k"]),
                         plain._host_get_many(None, ["k"])],
            "put": [ok._host_put(None, "k", b"v"), bad._host_put(None, "k", b"v")],
            "delete": [ok._host_delete(None, "k"), bad._host_delete(None, "k")],
            "list-prefix": [ok._host_list(None, "k"), bad._host_list(None, "k")],
            "write-if": [ok._host_write_if(None, "g", None, [("g", b"1")]),
                         ok._host_write_if(None, "g", None, [("g", b"1")]),  # conflict: g holds b"1"
                         bad._host_write_if(None, "g", None, [])],
            "complete": [ok._host_complete(None, request), bad._host_complete(None, request)],
            "embed": [ok._host_embed(None, ["a"]), bad._host_embed(None, ["a"])],
            "count-tokens": [ok._host_count(None, "a"), bad._host_count(None, "a")],
            "now-ms": [7],
        }
        self.assertEqual(answers["embed"][0], [[1.0, 2.0]], "ints become f32-ready floats")
        engine, component = engram_host._load(engram_host.default_component_path())
        kind = component.type
        kind = kind() if callable(kind) else kind
        store = wasmtime.Store(engine)
        checked = []
        for name, item in kind.imports(engine).items():
            if not name.startswith("engram:memory/"):
                continue
            for fname, f in item.ty.exports(engine).items():
                fty = f.ty
                if not isinstance(fty, wasmtime.component.FuncType):
                    continue
                for answer in answers[fname]:
                    buf = ffi.wasmtime_component_val_t()
                    fty.result.convert_to_c(store, answer, ctypes.pointer(buf))
                    self.assertEqual(fty.result.convert_from_c(buf), answer, f"{fname}: {answer!r}")
                checked.append(fname)
        self.assertTrue({"now-ms", "get", "get-many", "write-if", "complete", "embed", "count-tokens"} <= set(checked), checked)
        self.assertIn(Variant("err", None), answers["write-if"], "a conflict was among the answers")


def _record_request() -> Any:
    from wasmtime.component import Record

    r = Record()
    for k, v in dict(task="segment", system="s", content="c", schema="{}", attempt=1).items():
        setattr(r, k, v)
    return r


class FakeOpenAI(http.server.BaseHTTPRequestHandler):
    """Speaks /v1/chat/completions and /v1/embeddings; scripted per test."""

    server: "FakeServer"

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        srv = self.server
        srv.requests.append((self.path, dict(self.headers), body))
        if srv.hang:
            srv.release.wait(10)
            return
        if srv.statuses:
            status, headers = srv.statuses.pop(0)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "scripted"}}')
            return
        if self.path == "/v1/chat/completions":
            name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
            content = json.dumps({"boundary": 0.1}) if name == "engram_segment" else srv.answer
            out = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        else:
            data = [{"index": i, "embedding": [float(i), 1.0]} for i in range(len(body["input"]))]
            out = {"data": list(reversed(data))}
        raw = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class FakeServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), FakeOpenAI)
        self.requests: List[Any] = []
        self.statuses: List[Any] = []
        self.answer = '{"ok": true}'
        self.hang = False
        self.release = threading.Event()


class OpenAIModelTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server = FakeServer()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.sleeps: List[float] = []

    def tearDown(self) -> None:
        self.server.release.set()
        self.server.shutdown()
        self.server.server_close()

    def model(self, **kw: Any) -> OpenAIModel:
        return OpenAIModel(self.url, api_key="sk-test", model="chat-1", embedding_model="embed-1",
                           sleep=self.sleeps.append, **kw)

    def request(self) -> TaskRequest:
        return TaskRequest(task="note", system="You take notes.", content="Ana likes tea.",
                           schema='{"type": "object"}', attempt=1)

    def test_complete_sends_the_task_with_its_json_schema(self) -> None:
        self.server.answer = '{"facts": []}'
        self.assertEqual(self.model().complete(self.request()), '{"facts": []}')
        path, headers, body = self.server.requests[0]
        self.assertEqual(path, "/v1/chat/completions")
        self.assertEqual(headers["Authorization"], "Bearer sk-test")
        self.assertEqual(body["model"], "chat-1")
        self.assertEqual(body["messages"], [{"role": "system", "content": "You take notes."},
                                            {"role": "user", "content": "Ana likes tea."}])
        self.assertEqual(body["response_format"], {"type": "json_schema", "json_schema": {
            "name": "engram_note", "schema": {"type": "object"}}})
        self.assertEqual(body["temperature"], 0)

    def test_json_mode_only_servers_get_json_object(self) -> None:
        self.model(response_format="json_object").complete(self.request())
        self.assertEqual(self.server.requests[0][2]["response_format"], {"type": "json_object"})

    def test_embed_returns_vectors_in_input_order(self) -> None:
        vectors = self.model().embed(["a", "b", "c"])
        self.assertEqual(vectors, [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
        self.assertEqual(self.server.requests[0][2], {"model": "embed-1", "input": ["a", "b", "c"]})

    def test_server_errors_are_retried_with_backoff(self) -> None:
        self.server.statuses = [(503, {}), (429, {"Retry-After": "2"})]
        self.assertEqual(self.model(backoff=0.5).complete(self.request()), '{"ok": true}')
        self.assertEqual(len(self.server.requests), 3)
        self.assertEqual(len(self.sleeps), 2)
        self.assertTrue(0.25 <= self.sleeps[0] <= 0.5, self.sleeps)
        self.assertEqual(self.sleeps[1], 2.0, "Retry-After is honoured")

    def test_client_errors_fail_at_once(self) -> None:
        self.server.statuses = [(400, {})]
        with self.assertRaises(ModelUnavailable) as raised:
            self.model().complete(self.request())
        self.assertIn("HTTP 400", str(raised.exception))
        self.assertEqual(len(self.server.requests), 1)

    def test_a_server_that_never_answers_times_out_after_the_retries(self) -> None:
        self.server.hang = True
        with self.assertRaises(ModelUnavailable) as raised:
            self.model(timeout=0.2, retries=1).embed(["a"])
        self.assertIn("2 attempts", str(raised.exception))
        self.assertEqual(len(self.server.requests), 2)

    def closed_port_model(self) -> OpenAIModel:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # Nothing listens there now: every request is refused at once.
        return OpenAIModel(f"http://127.0.0.1:{port}/v1", api_key="sk-test", timeout=2, retries=1,
                           sleep=self.sleeps.append)

    def test_an_unreachable_endpoint_fires_on_degraded(self) -> None:
        fired: List[Dict[str, Any]] = []
        memory = Memory("closed", model=self.closed_port_model(), clock=ManualClock(1_772_445_600_000),
                        on_degraded=fired.append)
        for role, text in CONVERSATION:
            memory.add_message(role, text)
        self.assertEqual([d["task"] for d in fired], ["segment", "segment"])
        self.assertIn("Connection refused", fired[0]["error"])
        self.assertEqual(len(memory.messages()), 3)
        health = memory.stats()["model"]
        self.assertEqual(health["failed"], {"segment": 6})
        self.assertIn("ModelUnavailable", health["last_error"]["error"])

    def test_an_unreachable_endpoint_with_strict_raises_model_error(self) -> None:
        fired: List[Dict[str, Any]] = []
        memory = Memory("closed", model=self.closed_port_model(), clock=ManualClock(1_772_445_600_000),
                        config={"strict": True}, on_degraded=fired.append)
        for role, text in CONVERSATION[:2]:
            memory.add_message(role, text)
        before = memory.messages()
        with self.assertRaises(ModelError) as raised:
            memory.add_message(*CONVERSATION[2])
        self.assertEqual(raised.exception.code, "model")
        self.assertIsInstance(raised.exception.__cause__, ModelUnavailable)
        self.assertEqual(memory.messages(), before, "nothing was written")
        self.assertEqual(len(fired), 2)

    def test_a_memory_runs_its_model_calls_through_the_endpoint(self) -> None:
        memory = Memory("chat", model=self.model(), clock=ManualClock(1_772_445_600_000))
        memory.add_message("user", "Plan the Lisbon offsite.")
        memory.add_message("assistant", "When do you leave?")
        memory.add_message("user", "On March 2.")
        names = [b["response_format"]["json_schema"]["name"] for _, _, b in self.server.requests]
        self.assertEqual(names, ["engram_segment", "engram_segment"])
        self.assertEqual([m["boundary"] for m in memory.messages()][1:], [0.10000000149011612] * 2)
        self.assertEqual(len(memory.render_openai()), 3)


if __name__ == "__main__":
    unittest.main()
