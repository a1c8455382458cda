"""Message metadata and search filters through the component: metadata is
kept and returned as a dict, exported and imported; a search's filter keeps
only what it names (metadata, kinds, time, thread); bad metadata or a bad
filter raises InvalidInput and writes nothing."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import InvalidInput, Memory  # noqa: E402


def opened(namespace: str) -> Memory:
    now = [1_764_000_000_000]

    def clock() -> int:
        now[0] += 60_000
        return now[0]

    return Memory(namespace, clock=clock)


class MetadataTest(unittest.TestCase):
    def setUp(self) -> None:
        self.memory = opened("meta")
        m = self.memory
        m.add_message("user", "Ana moved to Porto last spring.", metadata={"source": "slack", "team": {"name": "core"}})
        m.add_message("user", "Carol found a tea shop in Porto.", metadata={"source": "email"})
        for text in ("The report is due Friday.", "Bikes need new tyres.", "Dinner is at eight."):
            m.add_message("user", text)

    def test_metadata_is_returned_exported_and_imported(self) -> None:
        messages = self.memory.messages()
        self.assertEqual(messages[0]["metadata"], {"source": "slack", "team": {"name": "core"}})
        self.assertEqual(messages[1]["metadata"], {"source": "email"})
        self.assertIsNone(messages[2]["metadata"])
        copy = opened("copy")
        copy.import_(self.memory.export())
        self.assertEqual(copy.messages(), messages)

    def test_a_filter_keeps_only_what_it_names(self) -> None:
        m = self.memory
        messages = m.messages()
        everything = m.search("Porto")
        self.assertTrue(any("Carol" in h["text"] for h in everything))
        slack = m.search("Porto", filter={"metadata": {"source": "slack"}})
        self.assertTrue(slack)
        for h in slack:
            self.assertNotIn("Carol", h["text"])
            for i in h["sources"]:
                self.assertEqual(messages[i - 1]["metadata"]["source"], "slack")
        nested = m.search("Porto", filter={"metadata": {"team": {"name": "core"}}})
        self.assertTrue(any("Ana" in h["text"] for h in nested))
        only = m.search("Porto", filter={"kinds": ["message"]})
        self.assertTrue(only and all(h["item"]["kind"] == "message" for h in only))
        later = m.search("Porto", filter={"from": messages[1]["at"]})
        self.assertFalse(any("Ana" in h["text"] for h in later))
        self.assertEqual(m.search("Porto", filter={"thread": "elsewhere"}), [])
        self.assertTrue(m.search("Porto", filter={"thread": "main", "to": messages[-1]["at"]}))

    def test_bad_metadata_or_filter_raises_and_writes_nothing(self) -> None:
        m = self.memory
        before = m.export()
        for metadata in ("text", [1, 2], {"big": "x" * 5_000}, {"f": object()}):
            with self.assertRaises(InvalidInput):
                m.add_message("user", "Hello.", metadata=metadata)  # type: ignore[arg-type]
        for bad in ({"kinds": ["episode"]}, {"threads": ["a"]}, {"from": 2, "to": 1}, {"metadata": "slack"}, "x"):
            with self.assertRaises(InvalidInput):
                m.search("Porto", filter=bad)  # type: ignore[arg-type]
        self.assertEqual(m.export(), before)


if __name__ == "__main__":
    unittest.main()
