"""Facts you can address, through the Python host: ``remember`` on a new
memory (a triple, or a sentence the offline note model reads), ``fact``,
the paged listings with a cursor walk while facts are added, ``history``,
``revise`` as a new fact that retires the old one, and bad input raising
InvalidInput and changing nothing. The semantics of
tests/addressable_facts.rs; through ``AsyncMemory`` too."""

from __future__ import annotations

import asyncio
import sys
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import AsyncMemory, InvalidInput, Memory, MemoryStore  # noqa: E402

T0 = 1_764_000_000_000
LISBON = {"subject": "Ana", "predicate": "lives in", "object": "Lisbon", "sentence": "Ana lives in Lisbon."}
PORTO = {"subject": "Ana", "predicate": "lives in", "object": "Porto", "sentence": "Ana lives in Porto."}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def triple(i: int, who: str = "Person") -> dict[str, Any]:
    return {
        "subject": f"{who} {i}",
        "predicate": "likes",
        "object": f"thing {i}",
        "sentence": f"{who} {i} likes thing {i}.",
    }


class Remember(unittest.TestCase):
    def test_a_new_memory_remembers_a_stated_fact_whose_source_is_the_host(self) -> None:
        store = MemoryStore()
        memory = Memory("facts", store=store, clock=Clock())
        with self.assertRaisesRegex(InvalidInput, "remember"):
            memory.note([LISBON])
        self.assertEqual(memory.remember(LISBON), {"fact": 1, "merged": False, "retired": []})
        f = memory.fact(1)
        assert f is not None
        self.assertEqual((f["sentence"], f["episode"], f["said_at"]), ("Ana lives in Lisbon.", 0, T0))
        self.assertIsNone(memory.fact(2))
        with self.assertRaises(InvalidInput):
            memory.fact(0)
        other = Memory("facts", store=store, clock=Clock())
        self.assertEqual(other.facts(), [f])
        merged = memory.remember({**LISBON, "sentence": "Ana is living in Lisbon."})
        self.assertEqual(merged, {"fact": 1, "merged": True, "retired": []})

    def test_a_sentence_becomes_a_fact_through_the_note_model(self) -> None:
        memory = Memory("facts", clock=Clock())
        done = memory.remember("Carol prefers green tea over coffee.")
        f = memory.fact(done["fact"])
        assert f is not None
        self.assertEqual(f["episode"], 0)
        self.assertIn("green tea", f["sentence"])

    def test_revise_writes_a_new_fact_that_retires_the_old_one_and_history_says_so(self) -> None:
        clock = Clock()
        memory = Memory("facts", clock=clock)
        memory.remember(LISBON)
        clock.now += 60_000
        self.assertEqual(memory.revise(1, PORTO), {"fact": 2, "merged": False, "retired": [1]})
        old = memory.history(1)
        self.assertFalse(old["live"])
        self.assertEqual(
            old["entries"],
            [
                {"kind": "added", "episode": 0, "sentence": "Ana lives in Lisbon.", "at": T0},
                {"kind": "retired_by", "fact": 2, "at": T0 + 60_000},
            ],
        )
        self.assertEqual(memory.history(2)["entries"][-1], {"kind": "retired", "fact": 1, "at": T0 + 60_000})
        with self.assertRaisesRegex(InvalidInput, "already retired"):
            memory.revise(1, "Ana lives in Faro.")
        with self.assertRaisesRegex(InvalidInput, "already says"):
            memory.revise(2, PORTO)
        self.assertEqual(len(memory.facts()), 2)
        memory.erase("fact", 2)
        self.assertEqual(memory.history(2)["entries"][-1], {"kind": "erased"})


class Pages(unittest.TestCase):
    def test_a_cursor_walk_returns_each_fact_once_in_order_while_facts_are_added(self) -> None:
        memory = Memory("facts", clock=Clock())
        for i in range(1, 201):
            memory.remember(triple(i))
        seen: list[int] = []
        cursor = None
        added = 0
        while True:
            page = memory.facts_page(limit=30, cursor=cursor)
            seen += [f["id"] for f in page["items"]]
            if added < 5:
                added += 1
                memory.remember(triple(added, "Late"))
            if page["next"] is None:
                break
            cursor = page["next"]
        self.assertEqual(seen, list(range(1, 206)))
        self.assertEqual(memory.facts_page(filter={"stated": False}), {"items": [], "next": None})
        live = memory.facts_page(limit=1000, filter={"live": True, "kinds": ["fact"], "stated": True})
        self.assertEqual(len(live["items"]), 205)
        self.assertEqual(len(memory.facts()), 205)

    def test_messages_and_episodes_page_too(self) -> None:
        clock = Clock()
        memory = Memory("facts", clock=clock)
        for i in range(5):
            memory.add_message("user", f"Question {i} about the garden.")
            clock.now += 60_000
            memory.add_message("assistant", f"Answer {i}.")
        first = memory.messages_page(limit=4)
        self.assertEqual([m["id"] for m in first["items"]], [1, 2, 3, 4])
        self.assertEqual(first["next"], "message:4")
        rest = memory.messages_page(limit=100, cursor=first["next"])
        self.assertEqual([m["id"] for m in rest["items"]], list(range(5, 11)))
        self.assertIsNone(rest["next"])
        self.assertEqual(rest["items"], memory.messages()[4:])
        self.assertEqual(memory.messages_page(thread="side"), {"items": [], "next": None})
        self.assertEqual(memory.episodes_page(limit=1000)["items"], memory.episodes())
        self.assertEqual(memory.episodes_page(states=["forgotten"]), {"items": [], "next": None})

    def test_bad_input_raises_invalid_input_and_changes_nothing(self) -> None:
        memory = Memory("facts", clock=Clock())
        memory.remember(LISBON)
        before = memory.export()
        bad: list[Any] = [
            lambda: memory.remember(""),
            lambda: memory.remember(42),
            lambda: memory.remember({"subject": "Ana"}),
            lambda: memory.revise(9, PORTO),
            lambda: memory.history(9),
            lambda: memory.facts_page(limit=0),
            lambda: memory.facts_page(limit=1001),
            lambda: memory.facts_page(limit=2**40),
            lambda: memory.facts_page(cursor="nonsense"),
            lambda: memory.facts_page(cursor="message:1"),
            lambda: memory.facts_page(cursor="fact:5"),
            lambda: memory.facts_page(filter={"colour": "red"}),
            lambda: memory.facts_page(filter={"kinds": ["gossip"]}),
            lambda: memory.episodes_page(states=["asleep"]),
            lambda: memory.messages_page(thread="not a thread!"),
        ]
        for call in bad:
            with self.assertRaises(InvalidInput):
                call()
        self.assertEqual(memory.export(), before)


class Async(unittest.TestCase):
    def test_async_memory_remembers_and_pages(self) -> None:
        async def run() -> None:
            async with await AsyncMemory.open("facts", clock=Clock()) as memory:
                done = await memory.remember(LISBON)
                self.assertEqual(done["fact"], 1)
                page = await memory.facts_page(limit=1)
                self.assertEqual([f["id"] for f in page["items"]], [1])
                self.assertEqual((await memory.history(1))["entries"][0]["kind"], "added")

        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
