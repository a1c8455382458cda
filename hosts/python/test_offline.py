"""The built-in offline model in the Python host.

A memory opened with no model runs on the offline model inside the component
and makes no model callback; its views, message by message, equal the native
engine's on ``engram::OfflineModel`` (``fixtures/offline_views.json``,
written by ``hosts/rust/tests/offline.rs``, which also checks the Rust host
against the native engine: rewrite it with ``ENGRAM_UPDATE_FIXTURES=1 cargo
test --test offline`` in hosts/rust). With ``embedder="offline"`` and a host
model for the tasks, the host's ``complete`` is called and its ``embed``
never.

Run: ``.venv/bin/python -m unittest discover -s hosts/python`` (the component
must be built: ``scripts/build-component``, or set ``ENGRAM_COMPONENT``).
"""

from __future__ import annotations

import json
import math
import sys
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host import CallableModel, Memory, TaskRequest  # noqa: E402

FIXTURE_PATH = HERE / "fixtures" / "offline_views.json"
FIXTURE = json.loads(FIXTURE_PATH.read_text())
STALE = (
    f"the component differs from {FIXTURE_PATH.name}: if the offline model changed, rewrite it with "
    "ENGRAM_UPDATE_FIXTURES=1 cargo test --test offline (in hosts/rust), which checks it against the "
    "native engine, and rebuild the component (scripts/build-component)"
)


class ManualClock:
    def __init__(self, ms: int):
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


class CountingMemory(Memory):
    """A Memory counting the component's calls of its model import."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.model_calls: Dict[str, int] = {"complete": 0, "embed": 0, "count-tokens": 0}
        super().__init__(*args, **kwargs)

    def _host_complete(self, s: Any, request: Any) -> Any:
        self.model_calls["complete"] += 1
        return super()._host_complete(s, request)

    def _host_embed(self, s: Any, texts: List[str]) -> Any:
        self.model_calls["embed"] += 1
        return super()._host_embed(s, texts)

    def _host_count(self, s: Any, text: str) -> Any:
        self.model_calls["count-tokens"] += 1
        return super()._host_count(s, text)


def replay(memory: Memory, clock: ManualClock) -> List[Any]:
    """Adds the fixture's messages; the rendered view after each."""
    views = []
    for i, step in enumerate(FIXTURE["steps"]):
        clock.ms = step["at"]
        m = step["message"]
        added = memory.add_message(
            m["role"], m.get("content", ""), tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id")
        )
        if added["maintain_error"] is not None:
            raise AssertionError(f"step {i}: {added['maintain_error']}")
        views.append(memory.render_openai())
    return views


def end_counts(memory: Memory) -> Dict[str, int]:
    episodes = memory.episodes()
    return {
        "episodes": len(episodes),
        # Out of the view: sealed, or forgotten (out of the facts block too).
        "out_of_view": sum(1 for e in episodes if e["state"] in ("sealed", "forgotten")),
        "facts": len(memory.facts()),
        "entities": len(memory.entities()),
    }


class OfflineModelTest(unittest.TestCase):
    def open(self, clock: ManualClock, **kwargs: Any) -> CountingMemory:
        return CountingMemory(FIXTURE["namespace"], clock=clock, config=FIXTURE["config"], **kwargs)

    def test_no_model_runs_offline_with_the_native_views_and_no_callbacks(self) -> None:
        clock = ManualClock(FIXTURE["steps"][0]["at"])
        memory = self.open(clock)
        self.assertEqual((memory.complete_source, memory.embed_source), ("offline", "offline"))
        started = time.perf_counter()
        views = replay(memory, clock)
        elapsed = time.perf_counter() - started
        print(f"\noffline replay of {len(views)} messages in the Python host: {elapsed * 1000:.0f} ms",
              file=sys.stderr)
        self.assertEqual(memory.model_calls, {"complete": 0, "embed": 0, "count-tokens": 0})
        for i, (got, want) in enumerate(zip(views, FIXTURE["views"])):
            self.assertEqual(got, want, f"view after step {i}: {STALE}")
        self.assertEqual(len(views), len(FIXTURE["views"]))
        end = end_counts(memory)
        self.assertEqual(end, FIXTURE["end"], STALE)
        # The memory did its work on its own: episodes, a view with the
        # latest message, no step degraded.
        self.assertGreaterEqual(end["episodes"], 2)
        self.assertGreaterEqual(end["out_of_view"], 1)
        self.assertGreaterEqual(end["facts"], 1)
        self.assertTrue(all(f["sentence"] for f in memory.facts()))
        self.assertEqual(views[-1][-1]["content"], FIXTURE["steps"][-1]["message"]["content"])
        stats = memory.stats()
        self.assertEqual(stats["model"]["degraded_steps"], 0)
        self.assertLessEqual(stats["view_tokens"], stats["ceiling"])
        self.assertEqual(memory.model_calls["complete"], 0)
        memory.close()

    def test_offline_embedder_calls_the_host_complete_but_never_its_embed(self) -> None:
        asked: List[str] = []
        embeds: List[List[str]] = []
        counts: List[str] = []

        def complete(r: TaskRequest) -> str:
            asked.append(r.task)
            # The offline model's own answer, through the component's
            # `offline` interface: the memory must then equal the offline one.
            return Memory.offline_complete(r)

        def embed(texts: List[str]) -> List[List[float]]:
            embeds.append(texts)
            raise AssertionError("embed was called")

        def count(text: str) -> None:
            counts.append(text)
            return None  # engram estimates, as the offline model does

        clock = ManualClock(FIXTURE["steps"][0]["at"])
        memory = self.open(clock, model=CallableModel(complete, embed, count), embedder="offline")
        self.assertEqual((memory.complete_source, memory.embed_source), ("host", "offline"))
        views = replay(memory, clock)
        self.assertEqual(embeds, [])
        self.assertEqual(memory.model_calls["embed"], 0)
        self.assertGreater(len(asked), 0)
        self.assertIn("segment", asked)
        self.assertEqual(memory.model_calls["complete"], len(asked))
        self.assertGreater(len(counts), 0, "token counts are asked of the host when it answers the tasks")
        self.assertEqual(views, FIXTURE["views"], STALE)
        self.assertEqual(end_counts(memory), FIXTURE["end"])
        memory.close()

    def test_a_host_model_is_used_for_both_halves_by_default(self) -> None:
        calls: List[str] = []

        def complete(r: TaskRequest) -> str:
            calls.append(r.task)
            return Memory.offline_complete(r)

        def embed(texts: List[str]) -> List[List[float]]:
            calls.append("embed")
            return Memory.offline_embed(texts)

        clock = ManualClock(FIXTURE["steps"][0]["at"])
        memory = self.open(clock, model=CallableModel(complete, embed))
        self.assertEqual((memory.complete_source, memory.embed_source), ("host", "host"))
        views = replay(memory, clock)
        self.assertIn("embed", calls)
        self.assertIn("segment", calls)
        # The offline answers through host callbacks: the same memory again.
        self.assertEqual(views, FIXTURE["views"], STALE)

    def test_model_and_embedder_choices(self) -> None:
        memory = Memory("choices", model="offline", clock=lambda: 1_772_445_600_000)
        self.assertEqual((memory.complete_source, memory.embed_source), ("offline", "offline"))
        memory.add_message("user", "Fernwork launches Loam on April 15.")
        self.assertEqual(memory.messages()[0]["content"], "Fernwork launches Loam on April 15.")
        memory.close()
        with self.assertRaises(ValueError):
            Memory("choices", model="gpt-4o-mini")
        with self.assertRaises(ValueError):
            Memory("choices", embedder="openai")

    def test_the_offline_embedder_gives_unit_vectors(self) -> None:
        texts = ["Loam launches on April 15.", "The launch of Loam is on April 15.", "Jonas designs the PCB."]
        vectors = Memory.offline_embed(texts)
        self.assertEqual(len(vectors), 3)
        self.assertEqual({len(v) for v in vectors}, {256})
        for v in vectors:
            self.assertAlmostEqual(math.sqrt(sum(x * x for x in v)), 1.0, places=4)
        self.assertEqual(Memory.offline_embed(texts[:1])[0], vectors[0])

        def cos(a: List[float], b: List[float]) -> float:
            return sum(x * y for x, y in zip(a, b))

        # A restatement is nearer than an unrelated sentence.
        self.assertGreater(cos(vectors[0], vectors[1]), cos(vectors[0], vectors[2]))


if __name__ == "__main__":
    unittest.main()
