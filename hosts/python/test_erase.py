"""Erasure: after ``erase`` no stored value and no export holds the erased
text or its embedding, another namespace in the same store is untouched
byte for byte, the memory reopens to the same state, bad input raises
InvalidInput and changes nothing, a failing store changes nothing, and
``destroy`` removes every key of the namespace. Through ``AsyncMemory`` too."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import AsyncMemory, InvalidInput, Memory, MemoryStore, StoreError  # noqa: E402

SECRET = "Zorblax"
# A tight ceiling and short episodes: the first ones leave and get noted.
CONFIG = {"ceiling_tokens": 120, "target_episode_tokens": 40, "max_episode_tokens": 80, "min_episode_tokens": 12}


class Clock:
    def __init__(self) -> None:
        self.now = 1_764_000_000_000

    def __call__(self) -> int:
        self.now += 60_000
        return self.now


def converse(memory: Memory) -> None:
    turns = [
        f"{SECRET} Petrov bought a red locker in Utrecht last summer.",
        "Let's plan the Lisbon offsite for the sales team in March.",
        "We agreed the budget is 12000 euros for the whole offsite.",
        "The venue should be near the river and have a big terrace.",
        "The quarterly report is due on Friday at noon.",
        "Carol prefers green tea over coffee every morning.",
        "The server migration finished without any downtime.",
    ]
    for i, t in enumerate(turns):
        memory.add_message("user", t)
        memory.add_message("assistant", f"Noted, point {i}.")


def values(store: MemoryStore, ns: str, inside: bool = True) -> Dict[str, bytes]:
    prefix = f"engram/{ns}/"
    return {k: v for k, v in store.data.items() if k.startswith(prefix) == inside}


def vector_b64(v: List[float]) -> str:
    """An embedding as an export holds it: little-endian f32 bytes, base64."""
    return base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()


def vector_f16(v: List[float]) -> bytes:
    """An embedding as stored values hold it: little-endian f16 bytes."""
    return struct.pack(f"<{len(v)}e", *v)


def readable(memory: Memory) -> Any:
    stats = memory.stats()
    stats["model"] = None
    # A handle's own store calls, not what the memory holds.
    stats["round_trips"] = None
    return {
        "messages": memory.messages(),
        "facts": memory.facts(),
        "entities": memory.entities(),
        "view": memory.view(),
        "stats": stats,
    }


class EraseTest(unittest.TestCase):
    def test_erase_message_leaves_no_byte_in_store(self) -> None:
        store = MemoryStore()
        other = Memory("other", store=store, config=CONFIG, clock=Clock())
        converse(other)
        memory = Memory("alice", store=store, config=CONFIG, clock=Clock())
        converse(memory)
        untouched = values(store, "alice", inside=False)
        secret_facts = [f for f in memory.facts() if SECRET in f["sentence"]]
        self.assertTrue(secret_facts, "the offline model noted the first message")
        secret_names = [e for e in memory.entities() if SECRET in e["name"]]
        vectors = [vector_b64(x["embedding"]) for x in secret_facts + secret_names]
        raw_vectors = [vector_f16(x["embedding"]) for x in secret_facts + secret_names]
        self.assertTrue(any(SECRET.encode() in v for v in values(store, "alice").values()))

        erased = memory.erase("message", 1)
        self.assertEqual(erased["messages"], [1])
        self.assertTrue({f["id"] for f in secret_facts} <= set(erased["facts"]))
        self.assertTrue({e["id"] for e in secret_names} <= set(erased["entities"]))
        stored = list(values(store, "alice").values()) + [memory.export().encode()]
        for v in stored:
            self.assertNotIn(SECRET.encode(), v)
            self.assertNotIn(b"locker", v)
            for b in vectors:
                self.assertNotIn(b.encode(), v)
            for r in raw_vectors:
                self.assertNotIn(r, v)
        first = memory.messages()[0]
        self.assertTrue(first["erased"])
        self.assertEqual(first["content"], "")
        self.assertEqual(values(store, "alice", inside=False), untouched)
        again = Memory("alice", store=store, config=CONFIG, clock=Clock())
        self.assertEqual(readable(again), readable(memory))
        self.assertTrue(any(SECRET.encode() in v for v in values(store, "other").values()))

    def test_erase_of_unknown_ids_and_kinds_changes_nothing(self) -> None:
        memory = Memory("alice", config=CONFIG, clock=Clock())
        converse(memory)
        before = dict(memory.store.data)
        for kind, id in [("message", 999), ("fact", 0), ("episode", 999), ("entity", 999)]:
            with self.assertRaises(InvalidInput):
                memory.erase(kind, id)
        with self.assertRaises(InvalidInput):
            memory.erase("passage", 1)
        with self.assertRaises(InvalidInput):
            memory.erase("message", -1)
        self.assertEqual(memory.store.data, before)

    def test_a_failing_store_during_erase_changes_nothing(self) -> None:
        class Failing(MemoryStore):
            fail = False

            def write_if(self, *args: Any) -> Any:
                if self.fail:
                    raise OSError("disk full")
                return super().write_if(*args)

        store = Failing()
        memory = Memory("alice", store=store, config=CONFIG, clock=Clock())
        converse(memory)
        before = dict(store.data)
        read = readable(memory)
        store.fail = True
        with self.assertRaises(StoreError):
            memory.erase("message", 1)
        store.fail = False
        self.assertEqual(store.data, before)
        self.assertEqual(readable(memory), read)

    def test_erase_entity_and_destroy_through_asyncio(self) -> None:
        async def run() -> None:
            store = MemoryStore()
            other = Memory("other", store=store, config=CONFIG, clock=Clock())
            converse(other)
            untouched = values(store, "alice", inside=False)
            memory = await AsyncMemory.open("alice", store=store, config=CONFIG, clock=Clock())
            await asyncio.to_thread(converse, memory.sync)
            entity = next(e for e in await memory.entities() if SECRET in e["name"])
            facts = [f for f in await memory.facts() if entity["id"] in (f["subject"], f["object"])]
            erased = await memory.erase("entity", entity["id"])
            self.assertIn(entity["id"], erased["entities"])
            self.assertEqual(sorted(erased["facts"]), sorted(f["id"] for f in facts))
            # Stored values are binary: their vectors are searched as stored
            # (f16 bytes); names and sentences as fields in the export, the
            # decoded log (the offline model's sentence is the message's
            # text, which stays: the fact is what must go).
            for v in values(store, "alice").values():
                for f in facts:
                    self.assertNotIn(vector_f16(f["embedding"]), v)
            export = await memory.export()
            self.assertNotIn('"name":' + json.dumps(entity["name"]), export)
            for f in facts:
                self.assertNotIn('"sentence":' + json.dumps(f["sentence"]), export)
                self.assertNotIn(vector_b64(f["embedding"]), export)
            await memory.destroy()
            self.assertEqual(values(store, "alice"), {})
            self.assertEqual(values(store, "alice", inside=False), untouched)
            self.assertEqual(await memory.messages(), [])
            await memory.close()

        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
