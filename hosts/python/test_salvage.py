"""Salvage: a memory whose log has a damaged segment raises ``CorruptData``
on open (naming the key and the way back), opens with
``Memory.open_salvage`` read-only (the loss in ``storage_warnings``, writes
raise ``InvalidInput`` and the store is unchanged), and its export imports
into a fresh store that takes new messages."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import CorruptData, InvalidInput, Memory, MemoryStore  # noqa: E402

NS = "salvage"
# Segments of four log entries, so a short conversation has several.
CONFIG = {"ceiling_tokens": 400, "snapshot_every": 4}


class Clock:
    def __init__(self) -> None:
        self.now = 1_764_000_000_000

    def __call__(self) -> int:
        self.now += 60_000
        return self.now


class SalvageTest(unittest.TestCase):
    def test_a_damaged_segment_is_corrupt_and_the_rest_opens_for_salvage_read_only(self) -> None:
        store, clock = MemoryStore(), Clock()
        with Memory(NS, store, clock=clock, config=CONFIG) as memory:
            for i in range(12):
                memory.add_message("user", f"Point {i} of the Lisbon offsite plan: the venue needs booking.")
                memory.add_message("assistant", f"Noted point {i}.")
            whole = memory.messages()
        segments = [k for k in store.list_prefix(f"engram/{NS}/seg/")]
        self.assertGreaterEqual(len(segments), 3)
        key = segments[len(segments) // 2]
        value = bytearray(store.get(key) or b"")
        value[len(value) * 2 // 3] ^= 0x5A
        store.put(key, bytes(value))

        with self.assertRaises(CorruptData) as raised:
            Memory(NS, store, clock=clock, config=CONFIG)
        self.assertIn(key, str(raised.exception))
        self.assertIn("open_salvage", str(raised.exception))

        before = {k: store.get(k) for k in store.list_prefix("")}
        with Memory.open_salvage(NS, store, clock=clock, config=CONFIG) as salvaged:
            warnings = salvaged.stats()["storage_warnings"]
            self.assertTrue(any(key in w for w in warnings), warnings)
            messages = salvaged.messages()
            self.assertEqual(len(messages), len(whole))
            kept = [m for m in messages if not m.get("erased")]
            self.assertTrue(0 < len(kept) < len(whole))
            for got in kept:
                self.assertEqual(got["content"], whole[got["id"] - 1]["content"])
            with self.assertRaises(InvalidInput) as refused:
                salvaged.add_message("user", "one more point")
            self.assertIn("opened for salvage: read-only", str(refused.exception))
            export = salvaged.export()
        self.assertEqual({k: store.get(k) for k in store.list_prefix("")}, before)

        with Memory(NS, MemoryStore(), clock=clock, config=CONFIG) as copy:
            copy.import_(export)
            copy.add_message("user", "Back to the Lisbon venue.")
            self.assertEqual(len(copy.messages()), len(whole) + 1)


if __name__ == "__main__":
    unittest.main()
