"""OpenAIModel against a real model: the llama.cpp server with Gemma 3 270M
that scripts/llm-server starts (``ENGRAM_LLM_URL``, ``ENGRAM_LLM_MODEL``;
run by scripts/test-component, skipped without them). 40 messages in two
threads; the model is weak, so what is asserted is the memory's guarantees,
not its facts' quality: nothing lost, every view within its ceiling and a
valid chat, no call failing for a format reason, every degraded step
reported with its cause.
"""

from __future__ import annotations

import os
import sys
import time
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host import Memory, OpenAIModel, TaskRequest  # noqa: E402

URL = os.environ.get("ENGRAM_LLM_URL")
MODEL = os.environ.get("ENGRAM_LLM_MODEL", "gemma-3-270m")

GARDEN = [
    ("I want to plant tomatoes on my balcony this spring.", "Cherry tomatoes do well in pots; give them full sun."),
    ("The balcony faces south and gets sun all afternoon.", "South is ideal; water them in the morning."),
    ("I also want basil next to the tomatoes.", "Basil is a good companion; pinch the flowers off."),
    ("How big should the pots be?", "At least 20 litres for each tomato plant."),
    ("My neighbour Ana gave me compost from her garden.", "Mix it into the potting soil, about a third."),
    ("Last year aphids ate my peppers.", "Soapy water or ladybirds keep aphids down."),
    ("I will sow the seeds indoors on March 10.", "Start them on a warm windowsill."),
    ("Should I use a drip system while I travel?", "A simple drip kit on a timer works well."),
    ("I am allergic to wasps, so no sweet fruit near the door.", "Keep the tomatoes away from the door then."),
    ("Remind me what I planned for the basil.", "Basil next to the tomatoes, flowers pinched off."),
]
TRIP = [
    ("We are going to Lisbon in May with my sister Clara.", "May is a lovely time for Lisbon."),
    ("Clara is vegetarian and hates seafood.", "Lisbon has good vegetarian places in Príncipe Real."),
    ("We land on May 14 and leave on May 21.", "A week gives time for Sintra too."),
    ("Our budget is 1200 euros each, flights included.", "That is comfortable outside the peak weeks."),
    ("I booked a flat in Alfama for the whole week.", "Alfama is hilly; pack good shoes."),
    ("Clara wants to see the Gulbenkian museum.", "It is closed on Tuesdays; plan around that."),
    ("I prefer trams to taxis.", "Tram 28 crosses Alfama; go early to avoid queues."),
    ("We might take a day trip to Sintra on May 17.", "Take the train from Rossio station."),
    ("My passport expires in June 2027.", "It is valid for the trip."),
    ("What did I say about Clara's food?", "She is vegetarian and does not eat seafood."),
]


def conversation() -> list[tuple[str, str, str]]:
    """(thread, role, text): the two threads' exchanges interleaved, 40 messages."""
    out: list[tuple[str, str, str]] = []
    for i in range(10):
        for thread, turns in (("garden", GARDEN), ("trip", TRIP)):
            out.append((thread, "user", turns[i][0]))
            out.append((thread, "assistant", turns[i][1]))
    return out


class Watched(OpenAIModel):
    """The adapter, recording every call that failed in the end."""

    failures: list[tuple[str, str]]

    def complete(self, request: TaskRequest) -> str:
        try:
            return super().complete(request)
        except Exception as e:
            self.failures.append((request.task, str(e)))
            raise


@unittest.skipUnless(URL, "ENGRAM_LLM_URL is not set (scripts/test-component starts scripts/llm-server)")
class RealModel(unittest.TestCase):
    def test_forty_messages_in_two_threads(self) -> None:
        started = time.monotonic()
        assert URL is not None
        model = Watched(URL, model=MODEL, retries=1, timeout=90)
        model.failures = []
        degraded: list[dict[str, Any]] = []
        ceiling = 700
        memory = Memory(
            "real-model",
            model=model,
            embedder="offline",
            # Split and the relevance walk by rule (a 270M model on 2 shared
            # cores takes 3-10 s a request); segment, note, trace, resolve and
            # reconcile still go to it.
            config={"ceiling_tokens": ceiling, "target_episode_tokens": 120, "max_episode_tokens": 300,
                    "model_attempts": 2, "split_with_model": False, "walk_with_model": False},
            model_timeout=90,
            on_degraded=lambda d: degraded.append(dict(d)),
        )
        messages = conversation()
        reported: list[Any] = []
        for thread, role, text in messages:
            added = memory.add_message(role, text, thread=thread)
            reported.extend(added["degraded"])
            view = memory.view(thread=thread)
            self.assertEqual(view["ceiling"], ceiling)
            self.assertTrue(view["tokens"] <= ceiling or view["over_ceiling"], f"{thread}: {view['tokens']} tokens")
            chat = memory.render_openai(thread=thread)
            calls: set[str] = set()
            for m in chat:
                self.assertIn(m["role"], ("system", "user", "assistant", "tool"))
                self.assertIsInstance(m["content"], str)
                for call in m.get("tool_calls") or []:
                    calls.add(call["id"])
                if m["role"] == "tool":
                    self.assertIn(m["tool_call_id"], calls)
            self.assertIn(text, chat[-1]["content"], "the view ends with the message just added")
        memory.maintain()

        kept = memory.messages()
        self.assertEqual(len(kept), len(messages), "nothing lost")
        for name in ("garden", "trip"):
            self.assertEqual(
                [k["content"] for k in kept if k["thread"] == name],
                [text for thread, _, text in messages if thread == name],
            )
        for task, error in model.failures:
            self.assertNotRegex(error, r"(?i)response_format|json_schema", f"{task} failed for a format reason")
        self.assertLessEqual(len(model.events), 1)
        stats = memory.stats()
        self.assertEqual(len(degraded), stats["model"]["degraded_steps"])
        self.assertGreaterEqual(len(degraded), len(reported))
        for d in degraded:
            self.assertTrue(d["task"] and d["error"] and d["effect"] and d["attempts"] >= 1, d)
        self.assertGreater(stats["model"]["calls"].get("segment", 0), 0)
        calls_made = sum(stats["model"]["calls"].values())
        failed = sum(stats["model"]["failed"].values())
        fallback = f"{model.events[0]['status']} -> json_object" if model.events else "none"
        print(
            f"\nreal model (python): {len(messages)} messages, {calls_made} model requests, {failed} failed, "
            f"{len(degraded)} degraded steps, {len(memory.facts())} facts, format fallback: {fallback}, "
            f"{time.monotonic() - started:.0f} s",
            file=sys.stderr,
        )


if __name__ == "__main__":
    unittest.main()
