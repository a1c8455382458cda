"""Threads through the Python host (the offline model, a memory store):
three chats in one memory, what an idle one taught reaching the others'
facts block; dated history added with ``add_messages`` (split at 1,000,
with progress, retried by client id); a thread erased; bad thread names
and dates raising InvalidInput and writing nothing. (The multi-thread
scenario, ``tests/fixtures/scenario-threads.json``, is replayed in
test_engram_host.py beside the single-thread one.)"""

from __future__ import annotations

import asyncio
import json
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host import MAX_BATCH, AsyncMemory, InvalidInput, Memory, MemoryStore  # noqa: E402

HOUR = 3_600_000
T0 = 1_764_000_000_000


class Clock:
    """A clock that moves only when told."""

    def __init__(self, ms: int = T0):
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def open_memory(store: MemoryStore, clock: Clock, ns: str = "threads") -> Memory:
    return Memory(ns, store=store, clock=clock, config={"ceiling_tokens": 400})


def nothing_pending(p: Dict[str, Any]) -> bool:
    return not any(p[k] for k in ("unjudged", "undistilled", "leaving", "awaiting_note", "fade_ahead", "idle_threads"))


class ThreadsTest(unittest.TestCase):
    def test_what_an_idle_thread_taught_reaches_the_other_threads(self) -> None:
        clock = Clock()
        memory = open_memory(MemoryStore(), clock)
        for role, content in [
            ("user", "The Lisbon offsite budget is 12000 euros."),
            ("assistant", "Noted: the Lisbon offsite has 12000 euros."),
            ("user", "The offsite hotel is the Baixa House."),
            ("assistant", "Good: the Baixa House it is."),
        ]:
            memory.add_message(role, content, thread="trip")
        # A day and more later, two other chats.
        clock.ms = T0 + 25 * HOUR
        memory.add_message("user", "Review the quarterly report draft.")
        memory.add_message("user", "What should I cook tonight?", thread="home")
        self.assertEqual(memory.pending(thread="home")["idle_threads"], ["trip"])
        self.assertEqual(memory.pending()["idle_threads"], ["trip"])

        maintained = memory.maintain(thread="home")
        self.assertEqual(len(maintained["slept"]), 1, maintained)
        thread, fade = maintained["slept"][0]
        self.assertEqual(thread, "trip")
        idle = next(f for f in memory.fades() if f["id"] == fade)
        self.assertEqual((idle["reason"], idle["thread"]), ("idle", "trip"))
        self.assertEqual(memory.pending(thread="home")["idle_threads"], [])

        episodes = memory.episodes()
        self.assertTrue(episodes and all(e["thread"] == "trip" for e in episodes), episodes)
        budget = next(f for f in memory.facts() if "12000" in f["sentence"])
        for name in ("home", "main", "trip"):
            view = memory.view(thread=name)
            block = next(i for i in view["items"] if i["kind"] == "facts")
            self.assertIn(budget["id"], block["facts"], name)
        self.assertFalse([i for i in memory.view(thread="trip")["items"] if i["kind"] == "message"])
        home = json.dumps(memory.render_openai(thread="home"))
        self.assertIn("cook tonight", home)
        self.assertNotIn("quarterly report", home)
        self.assertIn("quarterly report", json.dumps(memory.render_openai()))
        self.assertEqual(memory.view_tokens(thread="home"), memory.view(thread="home")["tokens"])
        self.assertEqual(memory.view_tokens(), memory.view()["tokens"])
        self.assertEqual(memory.view(), memory.view(thread="main"))

        threads = memory.threads()
        self.assertEqual([t["thread"] for t in threads], ["home", "main", "trip"])
        trip = threads[2]
        self.assertEqual(trip["title"], "The Lisbon offsite budget is 12000 euros.")
        self.assertEqual((trip["messages"], trip["user_messages"]), (4, 2))
        self.assertEqual((trip["first_message"], trip["last_message"], trip["first_at"]), (1, 4, T0))
        self.assertEqual(trip["episodes_in_view"], 0)
        self.assertEqual([m["thread"] for m in memory.messages()], ["trip"] * 4 + ["main", "home"])

        past = memory.view_at(T0, thread="trip")
        self.assertTrue(any(i["kind"] == "message" for i in past["items"]))
        self.assertIn("12000 euros", json.dumps(memory.render_openai_at(T0, thread="trip")))
        memory.add_message("assistant", "Pasta, then.", thread="home")
        memory.end_turn(thread="home")

    def test_dated_history_in_batches_with_progress_and_retry(self) -> None:
        store = MemoryStore()
        clock = Clock()
        memory = open_memory(store, clock, "batch")
        start = T0 - 90 * 24 * HOUR
        history: List[Dict[str, Any]] = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"Message {i} of the old chats.",
                "thread": "abc"[(i // 2) % 3],
                "at": start + i * 60_000,
                "client_id": f"old-{i}",
            }
            for i in range(1500)
        ]
        seen: List[Any] = []
        batch = memory.add_messages(history, progress=lambda done, total: seen.append((done, total)))
        self.assertEqual(seen, [(MAX_BATCH, 1500), (1500, 1500)])
        self.assertEqual(batch["messages"], list(range(1, 1501)))
        self.assertEqual(batch["duplicates"], [])
        messages = memory.messages()
        self.assertEqual((messages[0]["at"], messages[1499]["at"]), (start, start + 1499 * 60_000))
        self.assertEqual(messages[2]["thread"], "b")

        # Retried whole: every message is a duplicate, nothing is written.
        before = dict(store.data)
        again = memory.add_messages(history)
        self.assertEqual((again["messages"], again["duplicates"]), ([], batch["messages"]))
        self.assertEqual(store.data, before)

        # The judgments waited: maintain each thread until nothing is pending.
        self.assertTrue(memory.pending(thread="a")["unjudged"])
        for name in "abc":
            for _ in range(20):
                if nothing_pending(memory.pending(thread=name)):
                    break
                memory.maintain(thread=name)
            self.assertEqual(memory.pending(thread=name)["unjudged"], [])
        self.assertTrue(all(e["formed_at"] < clock.ms for e in memory.episodes()))

        # OpenAI-shaped dicts go in as they are; a small batch is one call.
        seen.clear()
        clock.ms += HOUR
        out = memory.add_messages(
            [{"role": "user", "content": "Hi.", "name": "ann"}, {"role": "assistant", "content": "Hello."}],
            progress=lambda d, t: seen.append((d, t)),
        )
        self.assertEqual(len(out["messages"]), 2)
        self.assertEqual(seen, [(2, 2)])

    def test_erasing_a_thread_erases_its_messages_only(self) -> None:
        store = MemoryStore()
        memory = open_memory(store, Clock(), "erase")
        memory.add_message("user", "My passport number is X123.", thread="secret")
        memory.add_message("user", "Plan the Lisbon offsite.")
        memory.add_message("assistant", "Stored.", thread="secret")
        erased = memory.erase("thread", "secret")
        self.assertEqual(erased["messages"], [1, 3])
        ms = memory.messages()
        self.assertEqual([m["erased"] for m in ms], [True, False, True])
        self.assertEqual(ms[0]["thread"], "secret")
        self.assertNotIn("X123", json.dumps(memory.render_openai(thread="secret")))
        self.assertFalse([k for k, v in store.data.items() if b"X123" in v])
        self.assertIn("Lisbon", json.dumps(memory.render_openai()))
        with self.assertRaises(InvalidInput) as e:
            memory.erase("thread", "nowhere")
        self.assertIn("nowhere", e.exception.message)
        with self.assertRaises(InvalidInput):
            memory.erase("thread", 3)  # type: ignore[arg-type]

    def test_bad_threads_and_dates_raise_invalid_input_and_write_nothing(self) -> None:
        store = MemoryStore()
        clock = Clock()
        memory = open_memory(store, clock, "bad")
        memory.add_message("user", "First.", thread="t")
        before = dict(store.data)
        long = "x" * 200
        bad: List[Dict[str, Any]] = [
            {"role": "user", "content": "Hello.", "thread": long},
            {"role": "user", "content": "Hello.", "thread": ""},
            {"role": "user", "content": "Hello.", "thread": "a\nb"},
            {"role": "user", "content": "From the future.", "thread": "t", "at": T0 + HOUR},
            {"role": "user", "content": "Before the last one.", "thread": "t", "at": T0 - HOUR},
            {"role": "user", "content": "In seconds.", "at": T0 // 1000 - 10**10},
            {"role": "user", "content": "Not a number.", "at": "yesterday"},
            {"role": "user", "content": "Not a name.", "thread": 7},
            {"role": "user", "content": "Out of range.", "at": 2**70},
            {"role": "user", "content": "Lone surrogate.", "thread": "\ud800"},
            {"role": "user", "content": "Typo.", "thred": "t"},
        ]
        for m in bad:
            fields = {k: v for k, v in m.items() if k != "role"}
            if "thred" not in m:
                with self.assertRaises(InvalidInput, msg=m):
                    memory.add_message(m["role"], **fields)
            with self.assertRaises(InvalidInput, msg=m) as e:
                memory.add_messages([{"role": "user", "content": "Fine.", "thread": "u"}, m])
            self.assertIn("message 1", e.exception.message)
        with self.assertRaises(InvalidInput) as e:
            memory.add_message("user", "Hello.", thread=long)
        self.assertIn("128", e.exception.message)
        with self.assertRaises(InvalidInput) as e:
            memory.add_message("user", "Hello.", thread="t", at=T0 + HOUR)
        self.assertIn("future", e.exception.message)
        calls = [
            lambda: memory.view(thread=long),
            lambda: memory.render_openai(thread=""),
            lambda: memory.pending(thread=long),
            lambda: memory.maintain(thread=long),
            lambda: memory.end_turn(thread=long),
            lambda: memory.view_tokens(thread=long),
            lambda: memory.view_at(T0, thread=long),
            lambda: memory.render_openai_at(T0, thread=long),
            lambda: memory.erase("thread", long),
            lambda: memory.add_messages("not a list"),  # type: ignore[arg-type]
            lambda: memory.add_messages([["user", "hi"]]),  # type: ignore[list-item]
        ]
        for call in calls:
            with self.assertRaises(InvalidInput):
                call()
        self.assertEqual(store.data, before, "nothing was written")
        self.assertEqual(len(memory.messages()), 1)

    def test_a_bad_message_in_a_later_call_keeps_the_calls_before(self) -> None:
        memory = open_memory(MemoryStore(), Clock(), "mid")
        history: List[Dict[str, Any]] = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"Line {i}.", "client_id": f"m{i}"}
            for i in range(MAX_BATCH + 10)
        ]
        history[MAX_BATCH + 3]["thread"] = "x" * 200
        seen: List[Any] = []
        with self.assertRaises(InvalidInput) as e:
            memory.add_messages(history, progress=lambda d, t: seen.append((d, t)))
        self.assertTrue(e.exception.message.startswith(f"message {MAX_BATCH + 3} of the batch"), e.exception.message)
        self.assertEqual(seen, [(MAX_BATCH, MAX_BATCH + 10)])
        self.assertEqual(e.exception.added["messages"], list(range(1, MAX_BATCH + 1)))  # type: ignore[attr-defined]
        self.assertEqual(len(memory.messages()), MAX_BATCH)
        # Fixed and retried whole: the first call's messages are duplicates.
        del history[MAX_BATCH + 3]["thread"]
        again = memory.add_messages(history)
        self.assertEqual(len(again["duplicates"]), MAX_BATCH)
        self.assertEqual(again["messages"], list(range(MAX_BATCH + 1, MAX_BATCH + 11)))

    def test_async_memory_takes_threads(self) -> None:
        async def go() -> None:
            memory = await AsyncMemory.open("async", store=MemoryStore(), clock=Clock(), config={"ceiling_tokens": 400})
            await memory.add_message("user", "Hello from the side chat.", thread="side")
            await memory.add_messages([{"role": "assistant", "content": "Hi.", "thread": "side"}])
            view = await memory.render_openai(thread="side")
            self.assertIn("side chat", json.dumps(view))
            self.assertEqual([t["thread"] for t in await memory.threads()], ["side"])
            await memory.maintain(thread="side")
            await memory.pending(thread="side")
            await memory.close()

        asyncio.run(go())


if __name__ == "__main__":
    unittest.main()
