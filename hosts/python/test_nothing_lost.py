"""Nothing lost, nothing forged: client message ids, deadlines on every host
callback, and bad input refused as ``InvalidInput`` (engram_host.py over the
built component).

Run: ``.venv/bin/python -m unittest discover -s hosts/python``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host import (  # noqa: E402
    CallableModel,
    CallbackTimeout,
    EngramError,
    InvalidInput,
    Memory,
    MemoryStore,
    ModelError,
    SQLiteStore,
    StoreError,
    TaskRequest,
)
from test_engram_host import CONVERSATION, ManualClock, calm_model  # noqa: E402

T0 = 1_772_445_600_000
SHORT = 0.2  # seconds: the deadline of the tests of hung callbacks


def losing(base: type) -> type:
    """``base`` (a store class) wrapped so that, once armed, a conditional
    write applies and then raises (its answer lost); with ``then_down`` the
    next read raises too, so the engine cannot see that its write landed."""

    class Losing(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.lose = False
            self.then_down = False
            self.down = False
            self.commits = 0

        def get(self, key: str) -> Optional[bytes]:
            if self.down:
                self.down = False
                raise ConnectionError("the store is down")
            return super().get(key)

        def write_if(self, guard, expected, writes):  # type: ignore[no-untyped-def]
            applied = super().write_if(guard, expected, writes)
            if applied:
                self.commits += 1
            if applied and self.lose:
                self.lose = False
                if self.then_down:
                    self.then_down = False
                    self.down = True
                raise ConnectionResetError("connection reset after the commit")
            return applied

    return Losing


class ClientIdTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)

    def stores(self) -> List[Any]:
        sqlite = losing(SQLiteStore)(os.path.join(self._tmp.name, "memory.db"))
        self.addCleanup(sqlite.close)
        return [losing(MemoryStore)(), sqlite]

    def test_a_lost_add_retried_with_its_client_id_is_stored_once(self) -> None:
        for store in self.stores():
            with self.subTest(store=type(store).__mro__[1].__name__):
                memory = Memory("ids", store=store, model=calm_model(), clock=ManualClock(T0))
                first = memory.add_message("user", "Plan the Lisbon offsite.", client_id="m-1")
                self.assertFalse(first["duplicate"])

                # The commit lands, then the store raises and is down for the
                # read that would have shown the engine its write.
                store.lose, store.then_down = True, True
                with self.assertRaises(StoreError) as raised:
                    memory.add_message("assistant", "When do you leave?", client_id="m-2")
                self.assertIsInstance(raised.exception.__cause__, ConnectionError)
                self.assertEqual(store.commits, 2, "the lost commit landed")

                # The host retries with the same client id.
                retried = memory.add_message("assistant", "When do you leave?", client_id="m-2")
                self.assertTrue(retried["duplicate"], "the retry says duplicate")
                self.assertEqual(retried["message"], 2, "the first add's id")
                self.assertEqual(store.commits, 2, "the retry wrote nothing")
                self.assertEqual([(m["content"], m["client_id"]) for m in memory.messages()],
                                 [("Plan the Lisbon offsite.", "m-1"), ("When do you leave?", "m-2")])

                # With the store up, the engine reads back the write that
                # raised and the call succeeds; a retry anyway is a duplicate.
                store.lose = True
                added = memory.add_message("user", "On March 2.", client_id="m-3")
                self.assertEqual((added["message"], added["duplicate"]), (3, False))
                again = memory.add_openai_message({"role": "user", "content": "On March 2."}, client_id="m-3")
                self.assertEqual((again["message"], again["duplicate"]), (3, True))
                self.assertEqual(len(memory.messages()), 3)
                # A fresh handle over the store sees each message once.
                fresh = Memory("ids", store=store, model=calm_model(), clock=ManualClock(T0))
                self.assertEqual([m["client_id"] for m in fresh.messages()], ["m-1", "m-2", "m-3"])

    def test_a_client_id_must_have_1_to_256_characters(self) -> None:
        memory = Memory("ids", model=calm_model(), clock=ManualClock(T0))
        for bad in ("", "x" * 257):
            with self.assertRaises(InvalidInput):
                memory.add_message("user", "Hello.", client_id=bad)
        self.assertEqual(memory.messages(), [])
        self.assertFalse(memory.add_message("user", "Hello.", client_id="x" * 256)["duplicate"])


class Gate:
    """Callbacks wait here while it is shut (at most 30 s: a forgotten gate
    cannot hang the suite)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def wait(self) -> None:
        self.event.wait(30)

    def open(self) -> None:
        self.event.set()


def hung_model(gate: Gate, calls: List[str]) -> CallableModel:
    """Completions wait at the gate, then answer like calm_model."""
    calm = calm_model()

    def complete(request: TaskRequest) -> str:
        calls.append(request.task)
        gate.wait()
        return calm.complete(request)

    return CallableModel(complete=complete, embed=calm.embed)


class HangingStore(MemoryStore):
    """A MemoryStore whose next write_if, once armed, waits at the gate and
    then applies its writes (a late answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = False
        self.gate = Gate()
        self.finished = threading.Event()
        self.late: Optional[bool] = None

    def write_if(self, guard, expected, writes):  # type: ignore[no-untyped-def]
        if self.hang:
            self.hang = False
            self.gate.wait()
            self.late = super().write_if(guard, expected, writes)
            self.finished.set()
            return self.late
        return super().write_if(guard, expected, writes)


def in_thread(fn: Any, timeout: float = 30) -> Any:
    """Runs ``fn`` on another thread (so a lock the test's thread held cannot
    be taken again by reentry) and returns its result."""
    out: List[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout)
    if not out:
        raise AssertionError("the call did not finish: is the memory's lock still held?")
    return out[0]


class DeadlineTest(unittest.TestCase):
    def setUp(self) -> None:
        self.gates: List[Gate] = []
        self.addCleanup(lambda: [g.open() for g in self.gates])

    def gate(self) -> Gate:
        g = Gate()
        self.gates.append(g)
        return g

    def test_a_hung_model_degrades_after_its_deadline_and_the_next_call_goes_on(self) -> None:
        gate, calls = self.gate(), []
        memory = Memory("hung", model=hung_model(gate, calls), clock=ManualClock(T0), model_timeout=SHORT)
        for role, text in CONVERSATION[:2]:
            memory.add_message(role, text)
        started = time.monotonic()
        added = memory.add_message(*CONVERSATION[2])
        took = time.monotonic() - started
        self.assertEqual([d["task"] for d in added["degraded"]], ["segment", "segment"])
        self.assertTrue(all("CallbackTimeout" in d["error"] and "did not answer within 0.2 s" in d["error"]
                            for d in added["degraded"]), added["degraded"])
        self.assertEqual(calls, ["segment"] * 6, "three attempts per step, each abandoned")
        self.assertGreaterEqual(took, 6 * SHORT)
        self.assertLess(took, 10)
        # The model answers again; the abandoned calls' late answers are ignored.
        gate.open()
        nxt = in_thread(lambda: memory.add_message("user", "And back on March 5."))
        self.assertEqual(nxt["degraded"], [])
        self.assertAlmostEqual(memory.messages()[3]["boundary"], 0.1, places=6)
        self.assertEqual(len(memory.messages()), 4)

    def test_a_hung_model_with_strict_raises_model_error_and_writes_nothing(self) -> None:
        gate = self.gate()
        memory = Memory("hung", model=hung_model(gate, []), clock=ManualClock(T0), config={"strict": True},
                        model_timeout=SHORT)
        for role, text in CONVERSATION[:2]:
            memory.add_message(role, text)
        before = memory.messages()
        with self.assertRaises(ModelError) as raised:
            memory.add_message(*CONVERSATION[2])
        self.assertIsInstance(raised.exception.__cause__, CallbackTimeout)
        self.assertIsInstance(raised.exception.__cause__, TimeoutError)
        self.assertEqual(memory.messages(), before, "nothing written")
        gate.open()
        in_thread(lambda: memory.add_message(*CONVERSATION[2]))
        self.assertEqual(len(memory.messages()), 3)

    def test_a_hung_store_fails_the_call_its_late_write_is_found_and_the_retry_is_a_duplicate(self) -> None:
        store = HangingStore()
        self.gates.append(store.gate)
        memory = Memory("hung", store=store, model=calm_model(), clock=ManualClock(T0), store_timeout=SHORT)
        memory.add_message("user", "Plan the Lisbon offsite.", client_id="m-1")
        before = dict(store.data)
        store.hang = True
        started = time.monotonic()
        with self.assertRaises(StoreError) as raised:
            memory.add_message("assistant", "When do you leave?", client_id="m-2")
        self.assertLess(time.monotonic() - started, 10)
        self.assertIsInstance(raised.exception.__cause__, CallbackTimeout)
        self.assertIn("the store's write_if did not answer within 0.2 s", str(raised.exception))
        self.assertEqual(store.data, before, "nothing written (yet)")
        # The hung write lands late; the memory's lock was released meanwhile.
        store.gate.open()
        self.assertTrue(store.finished.wait(10))
        self.assertTrue(store.late, "the late write landed")
        retried = in_thread(lambda: memory.add_message("assistant", "When do you leave?", client_id="m-2"))
        self.assertTrue(retried["duplicate"])
        self.assertEqual([m["content"] for m in memory.messages()],
                         ["Plan the Lisbon offsite.", "When do you leave?"], "stored once")

    def test_a_hung_store_whose_late_write_comes_after_the_retry_writes_nothing(self) -> None:
        store = HangingStore()
        self.gates.append(store.gate)
        memory = Memory("hung", store=store, model=calm_model(), clock=ManualClock(T0), store_timeout=SHORT)
        memory.add_message("user", "Plan the Lisbon offsite.", client_id="m-1")
        store.hang = True
        with self.assertRaises(StoreError):
            memory.add_message("assistant", "When do you leave?", client_id="m-2")
        retried = in_thread(lambda: memory.add_message("assistant", "When do you leave?", client_id="m-2"))
        self.assertFalse(retried["duplicate"], "the first attempt had not landed")
        store.gate.open()
        self.assertTrue(store.finished.wait(10))
        self.assertFalse(store.late, "the late write lost the log head: it wrote nothing")
        self.assertEqual(len(memory.messages()), 2)
        self.assertEqual(len(Memory("hung", store=store, model=calm_model(), clock=ManualClock(T0)).messages()), 2)

    def test_a_hung_clock_raises_callback_timeout_and_the_next_call_goes_on(self) -> None:
        gate = self.gate()
        clock = ManualClock(T0)
        memory = Memory("hung", model=calm_model(), clock=clock, clock_timeout=SHORT)
        memory.add_message("user", "Hello.")

        def hung() -> int:
            gate.wait()
            return T0

        memory.clock = hung
        with self.assertRaises(CallbackTimeout):
            memory.add_message("assistant", "Hi.")
        memory.clock = clock
        in_thread(lambda: memory.add_message("assistant", "Hi there."))
        self.assertEqual([m["content"] for m in memory.messages()], ["Hello.", "Hi there."])

    def test_a_hung_token_count_falls_back_to_engrams_estimate(self) -> None:
        gate = self.gate()
        calm = calm_model()
        model = CallableModel(complete=calm.complete, embed=calm.embed,
                              count_tokens=lambda text: (gate.wait(), 1)[1])
        memory = Memory("hung", model=model, clock=ManualClock(T0), model_timeout=SHORT)
        added = memory.add_message("user", "Hello there.")
        self.assertGreater(memory.messages()[0]["tokens"], 1, "estimated, not the late count")
        self.assertFalse(added["duplicate"])

    def test_timeouts_must_be_positive_seconds_or_none(self) -> None:
        for bad in (0, -1, float("nan"), "10"):
            with self.assertRaises(ValueError):
                Memory("t", model=calm_model(), clock=ManualClock(T0), store_timeout=bad)
        memory = Memory("t", model=calm_model(), clock=ManualClock(T0), model_timeout=None, store_timeout=None,
                        clock_timeout=None)
        memory.add_message("user", "Runs inline.")
        self.assertEqual(len(memory.messages()), 1)


class BadInputTest(unittest.TestCase):
    """Input the component cannot take raises InvalidInput (never a raw
    UnicodeEncodeError, WasmtimeError, JSONDecodeError, ValueError or
    OverflowError) and changes nothing."""

    def setUp(self) -> None:
        self.store = MemoryStore()
        self.clock = ManualClock(T0)
        self.memory = Memory("bad", store=self.store, model=calm_model(), clock=self.clock)
        self.memory.add_message("user", "Plan the Lisbon offsite.")
        self.memory.add_message("assistant", "When do you leave?")

    def assertRefused(self, call: Any, *, contains: str = "") -> InvalidInput:  # noqa: N802
        before = (dict(self.store.data), self.memory.messages())
        with self.assertRaises(InvalidInput) as raised:
            call()
        e = raised.exception
        self.assertIsInstance(e, EngramError)
        self.assertEqual(e.code, "invalid-input")
        self.assertIn(contains, str(e))
        self.assertEqual(dict(self.store.data), before[0], "the store is unchanged")
        self.assertEqual(self.memory.messages(), before[1], "the memory is unchanged")
        # The next call works.
        self.clock.ms += 1000
        self.assertEqual(len(self.memory.view()["items"]), len(before[1]))
        return e

    def test_a_lone_surrogate_in_a_message(self) -> None:
        self.assertRefused(lambda: self.memory.add_message("user", "\ud800"), contains="lone surrogate")
        self.assertRefused(lambda: self.memory.add_message("user", "ok", client_id="id-\udfff"))
        self.assertRefused(lambda: self.memory.add_message(
            "assistant", "", tool_calls=[{"id": "c1", "name": "note", "arguments": "\ud83d"}]))
        self.assertRefused(lambda: self.memory.search("\ud800 Lisbon"))

    def test_an_unknown_role(self) -> None:
        self.assertRefused(lambda: self.memory.add_message("robot", "Beep."), contains="robot")
        self.assertRefused(lambda: self.memory.add_openai_message({"role": "robot", "content": "Beep."}))

    def test_bad_json_in_a_note_tool_call(self) -> None:
        self.assertRefused(lambda: self.memory.note_tool_call('{"facts": [{"subject": "Ana",'), contains="not JSON")
        self.assertRefused(lambda: self.memory.note_tool_call('{"facts": [{"subject": "Ana"}]}'), contains="no predicate")
        self.assertRefused(lambda: self.memory.note_tool_call(
            '{"facts": [{"subject": "Ana", "predicate": "likes", "object": "tea", "sentence": "x", "kind": "rumour"}]}'),
            contains="rumour")
        self.assertRefused(lambda: self.memory.note_tool_call('{"episode": -1, "facts": []}'))
        self.assertRefused(lambda: self.memory.note_tool_call(
            '{"facts": [{"subject": "\\ud800", "predicate": "is", "object": "x", "sentence": "x"}]}'))

    def test_a_nan_or_infinite_clock_reading(self) -> None:
        good = self.memory.clock
        for reading in (float("nan"), float("inf"), float("-inf"), 2**70, "soon"):
            with self.subTest(reading=reading):
                self.memory.clock = lambda r=reading: r
                self.assertRefused(lambda: self.memory.add_message("user", "On March 2."), contains="the clock returned")
                self.memory.clock = good
        self.assertEqual(len(self.memory.messages()), 2)
        self.memory.add_message("user", "On March 2.")
        self.assertEqual(len(self.memory.messages()), 3)

    def test_a_clock_outside_2000_to_3000_is_refused_by_the_core(self) -> None:
        good = self.memory.clock
        for reading in (-1, 0, 946_684_799_999, 32_503_680_000_001, 2**63 - 1):
            with self.subTest(reading=reading):
                self.memory.clock = lambda r=reading: r
                self.assertRefused(lambda: self.memory.add_message("user", "On March 2."),
                                   contains="clocks must return milliseconds since the Unix epoch")
                self.memory.clock = good
        self.memory.clock = lambda: float(T0 + 5000)  # a float reading in range is fine
        self.memory.add_message("user", "On March 2.")
        self.assertEqual(self.memory.messages()[-1]["at"], T0 + 5000)

    def test_a_host_token_count_outside_u32(self) -> None:
        calm = calm_model()
        for count in (-1, 2**40, 1.5, "7"):
            with self.subTest(count=count):
                self.memory.model = CallableModel(complete=calm.complete, embed=calm.embed,
                                                  count_tokens=lambda text, c=count: c)
                self.assertRefused(lambda: self.memory.add_message("user", "On March 2."), contains="count_tokens")
        self.memory.model = CallableModel(complete=calm.complete, embed=calm.embed, count_tokens=lambda text: 9)
        self.memory.add_message("user", "On March 2.")
        self.assertEqual(self.memory.messages()[-1]["tokens"], 9 + 4, "the host's count, framing included")

    def test_bad_ids_and_arguments(self) -> None:
        self.assertRefused(lambda: self.memory.explain_episode(-1))
        self.assertRefused(lambda: self.memory.explain_fact(2**64))
        self.assertRefused(lambda: self.memory.view_at(float("nan")))
        self.assertRefused(lambda: self.memory.add_message("user", 42))
        self.assertRefused(lambda: self.memory.add_message("assistant", "", tool_calls=[{"name": "x"}]))
        with self.assertRaises(InvalidInput):
            Memory("\ud800", model=calm_model(), clock=self.clock)
        with self.assertRaises(InvalidInput):
            Memory("bad", model=calm_model(), clock=self.clock, config={"ceiling_tokens": float("nan")})

    def test_a_model_answer_that_is_not_unicode_is_a_model_failure(self) -> None:
        calm = calm_model()
        self.memory.model = CallableModel(complete=lambda r: '{"boundary": 0.1} \ud800', embed=calm.embed)
        added = self.memory.add_message("user", "On March 2.")
        self.assertEqual([d["task"] for d in added["degraded"]], ["segment", "segment"])
        self.assertIn("not valid Unicode", added["degraded"][0]["error"])


if __name__ == "__main__":
    unittest.main()
