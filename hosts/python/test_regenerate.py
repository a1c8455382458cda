"""A regenerated answer through the Python host: ``add_message(...,
replaces=question)`` replaces the answer (its tool run included) in the
view; the old one stays in ``messages()`` with ``replaced_by`` and
``explain_message`` names it an alternative; a retry of the same answer
adds nothing; ``replaces`` naming no user message is refused, writing
nothing."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import InvalidInput, Memory  # noqa: E402

NOW = 1_764_000_000_000


class RegenerateTest(unittest.TestCase):
    def test_a_regenerated_answer_replaces_the_first_and_keeps_it_as_an_alternative(self) -> None:
        memory = Memory("regenerate", clock=lambda: NOW)
        q = memory.add_message("user", "Which city did we pick for the offsite?")["message"]
        memory.add_message("assistant", "", tool_calls=[{"id": "call_1", "name": "calendar", "arguments": "{}"}])
        memory.add_message("tool", "Offsite: Porto, May.", tool_call_id="call_1")
        memory.add_message("assistant", "Porto.")
        added = memory.add_message("assistant", "Lisbon: we moved it in March.", client_id="r-2", replaces=q)
        retry = memory.add_message("assistant", "Lisbon: we moved it in March.", client_id="r-2", replaces=q)
        self.assertTrue(retry["duplicate"])
        self.assertEqual(retry["message"], added["message"])

        shown = [(m["role"], m["content"]) for m in memory.render_openai() if m["role"] != "system"]
        self.assertEqual(
            shown, [("user", "Which city did we pick for the offsite?"), ("assistant", "Lisbon: we moved it in March.")]
        )
        a = added["message"]
        messages = memory.messages()
        self.assertEqual([m["replaced_by"] for m in messages], [None, a, a, a, None])
        self.assertEqual(messages[-1]["replaces"], q)
        old = memory.explain_message(4)
        self.assertFalse(old["in_view"])
        self.assertEqual(old["replaced_by"], a)
        self.assertIn("alternative", old["summary"])
        self.assertEqual(memory.explain_message(a)["alternatives"], [2, 3, 4])

        before = memory.export()
        with self.assertRaises(InvalidInput):
            memory.add_message("assistant", "x", replaces=a)  # an answer, not a question
        with self.assertRaises(InvalidInput):
            memory.add_messages([{"role": "user", "content": "x", "replaces": q}])  # only an answer replaces
        self.assertEqual(memory.export(), before)

    def test_a_regenerate_of_an_answer_never_stored_replaces_nothing(self) -> None:
        memory = Memory("fresh", clock=lambda: NOW)
        q = memory.add_message("user", "Name a colour.")["message"]
        a = memory.add_message("assistant", "Green.", replaces=q)["message"]
        self.assertEqual([m["replaced_by"] for m in memory.messages()], [None, None])
        self.assertEqual(memory.explain_message(a)["alternatives"], [])


if __name__ == "__main__":
    unittest.main()
