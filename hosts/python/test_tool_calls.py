"""A tool call the host will never answer is closed with abandon_tool_call
(until then a user message is refused, naming it), and hit_text gives a
search hit's whole text where search clips it at about 1,000 tokens."""

from __future__ import annotations

import asyncio
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import AsyncMemory, InvalidInput, Memory  # noqa: E402

NOW = 1_764_000_000_000


class ToolCallTest(unittest.TestCase):
    def test_an_abandoned_call_gets_its_output_and_the_chat_goes_on(self) -> None:
        memory = Memory("tools", clock=lambda: NOW)
        memory.add_message("user", "What is the weather in Porto?")
        memory.add_message(
            "assistant", "", tool_calls=[{"id": "call_1", "name": "weather", "arguments": '{"city": "Porto"}'}]
        )
        with self.assertRaises(InvalidInput) as caught:
            memory.add_message("user", "Never mind, tell me a joke.")
        self.assertIn("abandon_tool_call", str(caught.exception))

        added = memory.abandon_tool_call("call_1")
        output = next(m for m in memory.messages() if m["id"] == added["message"])
        self.assertEqual((output["role"], output["tool_call_id"]), ("tool", "call_1"))
        memory.add_message("user", "Never mind, tell me a joke.")

        messages = memory.render_openai()
        answers = [m for m in messages if m["role"] == "tool" and m.get("tool_call_id") == "call_1"]
        self.assertEqual(len(answers), 1)
        self.assertIn("abandoned", answers[0]["content"])
        # A call that is not waiting any more is refused.
        with self.assertRaises(InvalidInput):
            memory.abandon_tool_call("call_1")
        self.assertIsInstance(memory.stats()["model"]["repairs"], dict)

    def test_hit_text_gives_the_whole_text_of_a_clipped_hit(self) -> None:
        memory = Memory("hits", clock=lambda: NOW)
        long = " ".join(f"Lisbon offsite note {i} about the venue and catering." for i in range(600))
        memory.add_message("user", long)
        # Other messages, so the query's words are rare among those in view.
        for text in ("Ana moved to Porto last spring.", "Carol prefers green tea.", "The report is due Friday."):
            memory.add_message("user", text)
        hits = memory.search("Lisbon offsite venue")
        long_hit = next(h for h in hits if h["item"]["kind"] != "fact" and "Lisbon" in h["text"])
        self.assertLess(len(long_hit["text"]), len(long))
        full = memory.hit_text(long_hit["item"])
        self.assertTrue(full.endswith(long), full[:80])  # the whole message ("user: " first)
        self.assertTrue(full.startswith(long_hit["text"].rstrip("…")))
        self.assertGreater(len(full), len(long_hit["text"]))

        short_hit = next(h for h in memory.search("Ana Porto spring") if "Ana moved" in h["text"])
        self.assertEqual(memory.hit_text(short_hit["item"]), short_hit["text"])

        with self.assertRaises(InvalidInput):
            memory.hit_text({"kind": "passage", "id": 999_999})

        async def run() -> str:
            async_memory = AsyncMemory(memory)
            return await async_memory.hit_text(long_hit["item"])

        self.assertEqual(asyncio.run(run()), full)


if __name__ == "__main__":
    unittest.main()
