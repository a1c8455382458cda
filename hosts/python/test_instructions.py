"""The host's instructions: pinned first in every view (the first system
message of the OpenAI rendering), changed by calling again, refused with
InvalidInput when over half the ceiling (nothing changes)."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import InvalidInput, Memory  # noqa: E402


class InstructionsTest(unittest.TestCase):
    def test_instructions_are_pinned_first_and_oversize_ones_are_refused(self) -> None:
        memory = Memory("instr", config={"ceiling_tokens": 400}, clock=lambda: 1_764_000_000_000)
        self.assertTrue(memory.set_instructions("You are Robin, a trip planner."))
        memory.add_message("user", "Let's plan the Lisbon offsite.")
        view = memory.view()
        self.assertEqual(view["items"][0]["kind"], "instructions")
        messages = memory.render_openai()
        self.assertEqual(messages[0], {"role": "system", "content": "You are Robin, a trip planner."})
        self.assertFalse(memory.set_instructions("You are Robin, a trip planner."))
        with self.assertRaises(InvalidInput):
            memory.set_instructions("word " * 400)
        self.assertEqual(memory.instructions(), "You are Robin, a trip planner.")
        self.assertTrue(memory.set_instructions(""))
        self.assertIsNone(memory.instructions())


if __name__ == "__main__":
    unittest.main()
