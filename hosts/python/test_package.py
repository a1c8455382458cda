"""The package as users get it: records in the npm package's shapes (the
field names of js/index.d.ts), bad input as InvalidInput, the component found
next to the module with no environment variable, and asyncio through
AsyncMemory. Run by scripts/test-component with the other host tests.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Set

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import wasmtime  # noqa: E402

from engram_host import (  # noqa: E402
    AsyncMemory,
    CallableModel,
    InvalidInput,
    Memory,
    TaskRequest,
    default_component_path,
)
from test_offline import FIXTURE, ManualClock  # noqa: E402

INDEX_D_TS = (HERE.parents[1] / "js" / "index.d.ts").read_text()


def js_fields(interface: str) -> Set[str]:
    """The field names of ``export interface <name> { ... }`` in js/index.d.ts."""
    m = re.search(r"export interface " + interface + r" \{\n(.*?)\n\}", INDEX_D_TS, re.S)
    assert m, f"no interface {interface} in js/index.d.ts"
    return set(re.findall(r"^  (\w+)\??:", m.group(1), re.M))


def offline_replay() -> tuple[Memory, List[Dict[str, Any]]]:
    """The offline fixture's 20 messages on the offline model; every Added."""
    clock = ManualClock(FIXTURE["steps"][0]["at"])
    memory = Memory(FIXTURE["namespace"], clock=clock, config=FIXTURE["config"])
    added = []
    for step in FIXTURE["steps"]:
        clock.ms = step["at"]
        m = step["message"]
        added.append(memory.add_message(m["role"], m.get("content", ""), tool_calls=m.get("tool_calls"),
                                        tool_call_id=m.get("tool_call_id")))
    return memory, added


class RecordShapesTest(unittest.TestCase):
    """Each record has exactly the fields of its js/index.d.ts interface."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.memory, cls.added = offline_replay()

    def test_added_maintained_pending_stats_have_the_js_fields(self) -> None:
        for a in self.added:
            self.assertEqual(set(a), js_fields("Added"))
            if a["maintained"] is not None:
                self.assertEqual(set(a["maintained"]), js_fields("Maintained"))
        self.assertEqual(set(self.memory.maintain()), js_fields("Maintained"))
        self.assertEqual(set(self.memory.pending()), js_fields("Pending"))
        stats = self.memory.stats()
        self.assertEqual(set(stats), js_fields("Stats"))
        self.assertEqual(set(stats["model"]), js_fields("ModelHealth"))
        self.assertEqual(set(stats["pending"]), js_fields("Pending"))

    def test_counts_are_lists_as_in_js(self) -> None:
        stats = self.memory.stats()
        episodes = self.memory.episodes()
        states = ["live", "leaving", "sealed", "forgotten"]
        self.assertEqual(stats["episodes"], [sum(1 for e in episodes if e["state"] == s) for s in states])
        facts = self.memory.facts()
        self.assertEqual(stats["facts"], [sum(1 for f in facts if f["retired"] is None),
                                          sum(1 for f in facts if f["retired"] is not None)])
        traces = self.memory.traces()
        declined = sum(self.memory.explain_fact(f["id"])["declined"] for f in facts)
        self.assertEqual(stats["traces"], [len(traces) + declined, sum(1 for t in traces if t["yes"])])

    def test_distilled_blocks_are_pairs_and_recall_items_have_ids(self) -> None:
        pairs = [a["distilled"] for a in self.added if a["distilled"] is not None]
        self.assertTrue(pairs, "the offline replay distills at least one recall block")
        for block, distillation in pairs:
            self.assertIsInstance(block, int)
            self.assertEqual(set(distillation), js_fields("Distillation"))
            for item in distillation["kept"]:
                self.assertEqual(set(item), {"kind", "id"})
        for a in self.added:
            if a["maintained"] is not None:
                for pair in a["maintained"]["distilled"]:
                    self.assertEqual(len(pair), 2)
        for b in self.memory.recalls():
            self.assertEqual(set(b), js_fields("RecallBlock"))
            for r in b["items"]:
                self.assertEqual(set(r["item"]), {"kind", "id"})
                for h in r["hits"]:
                    self.assertEqual(set(h), js_fields("Hit"))
                    self.assertIn(h["list"], ("fact_words", "fact_meaning", "passage_words", "passage_meaning"))
        for t in self.memory.traces():
            self.assertEqual(set(t), js_fields("Trace"))
            self.assertIn(t["cause"]["kind"], ("encoding", "fact", "recall"))
        for e in self.memory.entities():
            for alias in e["aliases"]:
                self.assertIn(alias["resolution"]["how"], ("new", "exact", "similar", "judged"))

    def test_degraded_steps_have_the_js_fields(self) -> None:
        def fail(_r: TaskRequest) -> str:
            raise ConnectionError("no model here")

        memory = Memory("degraded", model=CallableModel(fail, lambda ts: [[1.0, 0.0] for _ in ts]),
                        clock=ManualClock(FIXTURE["steps"][0]["at"]), config={"model_attempts": 1})
        memory.add_message("user", "Plan the Lisbon offsite.")
        added = memory.add_message("user", "Also the budget, which is 12000 euros.")
        self.assertTrue(added["degraded"])
        for d in added["degraded"]:
            self.assertEqual(set(d), js_fields("Degraded"))


class BadInputTest(unittest.TestCase):
    def test_a_bad_role_is_invalid_input_never_a_wasmtime_error(self) -> None:
        memory = Memory("roles")
        for call in (
            lambda: memory.add_message("robot", "beep"),
            lambda: memory.add_message(None, "beep"),  # type: ignore[arg-type]
            lambda: memory.add_message(3, "beep"),  # type: ignore[arg-type]
            lambda: memory.add_openai_message({"role": "developer", "content": "x"}),
            lambda: memory.add_message("assistant", "x", tool_calls=[{"id": 1, "name": "f", "arguments": "{}"}]),
        ):
            with self.assertRaises(InvalidInput) as raised:
                call()
            self.assertNotIsInstance(raised.exception, wasmtime.WasmtimeError)
        self.assertEqual(memory.stats()["messages"], 0, "nothing was added")


class ComponentLookupTest(unittest.TestCase):
    def test_the_module_finds_the_component_next_to_itself_and_the_env_var_overrides(self) -> None:
        real = default_component_path()
        with tempfile.TemporaryDirectory() as tmp:
            pkg = Path(tmp) / "site" / "engram_host"
            pkg.mkdir(parents=True)
            for module in (HERE / "engram_host").glob("*.py"):  # the package's modules, as a wheel has them
                shutil.copyfile(module, pkg / module.name)
            shutil.copyfile(real, pkg / "engram.wasm")
            env = {k: v for k, v in os.environ.items() if k != "ENGRAM_COMPONENT"}
            code = ("import engram_host as e; print(e.default_component_path()); "
                    "m = e.Memory('x'); m.add_message('user', 'hello'); print(m.stats()['messages'])")
            out = subprocess.run([sys.executable, "-c", code], cwd=tmp, env={**env, "PYTHONPATH": str(pkg.parent)},
                                 capture_output=True, text=True, check=True).stdout.split()
            self.assertEqual(out, [str(pkg / "engram.wasm"), "1"])
            other = Path(tmp) / "other.wasm"
            out = subprocess.run([sys.executable, "-c", "import engram_host as e; print(e.default_component_path())"],
                                 cwd=tmp, env={**env, "PYTHONPATH": str(pkg.parent), "ENGRAM_COMPONENT": str(other)},
                                 capture_output=True, text=True, check=True).stdout.split()
            self.assertEqual(out, [str(other)])


class AsyncMemoryTest(unittest.TestCase):
    def test_calls_run_in_a_thread_in_call_order_and_the_loop_goes_on(self) -> None:
        def slow_segment(request: TaskRequest) -> str:
            time.sleep(0.05)
            return '{"boundary": 0.1}' if request.task == "segment" else Memory.offline_complete(request)

        threads: Set[int] = set()

        def embed(texts: List[str]) -> List[List[float]]:
            threads.add(threading.get_ident())
            return Memory.offline_embed(texts)

        async def main() -> Dict[str, Any]:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.005)
                    ticks += 1

            tick = asyncio.create_task(ticker())
            async with await AsyncMemory.open("async", model=CallableModel(slow_segment, embed)) as memory:
                added = await asyncio.gather(*(memory.add_message("user", f"Message {i} about the Lisbon offsite.")
                                               for i in range(4)))
                view = await memory.view()
                episodes = await memory.episodes()
                tool = await memory.note_tool()  # any other method, through __getattr__
                stats = await memory.stats()
            tick.cancel()
            return {"added": added, "view": view, "episodes": episodes, "tool": tool, "stats": stats, "ticks": ticks,
                    "closed": memory.sync._closed}

        out = asyncio.run(main())
        self.assertEqual([a["message"] for a in out["added"]], [1, 2, 3, 4], "calls run in the order made")
        self.assertEqual(out["stats"]["messages"], 4)
        self.assertEqual(len(out["view"]["items"]), 4)
        self.assertIsInstance(out["episodes"], list)
        self.assertEqual(out["tool"]["function"]["name"], "note")
        self.assertGreater(out["ticks"], 5, "the event loop ran while the model was slow")
        self.assertNotIn(threading.get_ident(), threads, "callbacks did not run on the event loop's thread")
        self.assertTrue(out["closed"])


if __name__ == "__main__":
    unittest.main()
