"""The package as users get it: records in the npm package's shapes (the
field names of js/index.d.ts) and of their TypedDicts (engram_host.records,
every field's type), bad input as InvalidInput, the component found
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
import types
import typing
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import wasmtime  # noqa: E402

import engram_host.records as records  # noqa: E402
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
RECORDS_D_TS = (HERE.parents[1] / "js" / "types" / "records.d.ts").read_text()


def js_fields(record: str) -> Set[str]:
    """The field names of the npm package's record ``record``: its
    ``export type <name> = { ... };`` in js/types/records.d.ts (generated
    from the Rust types), with those ``export interface <name> extends ...``
    in js/index.d.ts adds (``Stats.round_trips``)."""
    fields: Set[str] = set()
    m = re.search(r"^export type " + record + r" = \{\n(.*?), \};$", RECORDS_D_TS, re.S | re.M)
    if m:
        fields |= set(re.findall(r"^  (\w+)\??:", m.group(1), re.M))
    m = re.search(r"export interface " + record + r"(?: extends \w+)? \{\n(.*?)\n\}", INDEX_D_TS, re.S)
    if m:
        fields |= set(re.findall(r"^  (\w+)\??:", m.group(1), re.M))
    assert fields, f"no record {record} in js/types/records.d.ts or js/index.d.ts"
    return fields


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


def mismatches(value: Any, hint: Any, path: str) -> List[str]:
    """Where ``value`` does not have type ``hint`` (a record's TypedDict, or
    a field's type: unions, literals, lists, dicts, scalars); [] when it has."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return []
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a {hint.__name__}"]
        keys = set(value)
        out = [f"{path}: {hint.__name__} lacks {k!r}" for k in sorted(hint.__required_keys__ - keys)]
        out += [f"{path}: {k!r} is no field of {hint.__name__}" for k in sorted(keys - hint.__required_keys__
                                                                               - hint.__optional_keys__)]
        fields = typing.get_type_hints(hint)
        for k in sorted(keys & set(fields)):
            out += mismatches(value[k], fields[k], f"{path}.{k}")
        return out
    if origin in (typing.Union, types.UnionType):
        found = [mismatches(value, a, path) for a in args]
        return [] if any(not m for m in found) else [f"{path}: {value!r} is none of {hint}: {found}"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [m for i, x in enumerate(value) for m in mismatches(x, args[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a dict"]
        return [m for k, x in value.items() for m in mismatches(k, args[0], f"{path} key") + mismatches(x, args[1], f"{path}[{k!r}]")]
    if hint is type(None):
        return [] if value is None else [f"{path}: {value!r} is not None"]
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, hint)
    return [] if ok else [f"{path}: {value!r} is not a {hint.__name__}"]


class RecordTypesTest(unittest.TestCase):
    """What each call returns has its TypedDict's fields, each of its type
    (engram_host.records: what mypy checks users' code against)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.memory, cls.added = offline_replay()

    def check(self, value: Any, hint: Any, what: str) -> None:
        self.assertEqual(mismatches(value, hint, what), [])

    def test_every_record_a_call_returns_has_its_types(self) -> None:
        m = self.memory
        facts = m.facts()
        self.assertTrue(facts and m.episodes() and m.entities() and m.recalls(), "the replay made each kind")
        self.check(self.added, List[records.Added], "add_message")
        self.check(m.maintain(), records.Maintained, "maintain")
        self.check(m.pending(), records.Pending, "pending")
        self.check(m.stats(), records.Stats, "stats")
        self.check(m.view(), records.View, "view")
        self.check(m.view_at(FIXTURE["steps"][10]["at"]), records.View, "view_at")
        self.check(m.render_openai(), List[records.OpenAIMessage], "render_openai")
        self.check(m.threads(), List[records.ThreadInfo], "threads")
        hits = m.search("Loam launch price", limit=20)
        self.assertEqual({h["item"]["kind"] for h in hits}, {"fact", "passage", "message"})
        self.check(hits, List[records.SearchHit], "search")
        self.check(m.recalls(), List[records.RecallBlock], "recalls")
        self.check(m.episodes(), List[records.EpisodeInfo], "episodes")
        self.check(m.messages(), List[records.Message], "messages")
        self.check(facts, List[records.Fact], "facts")
        self.check(m.entities(), List[records.Entity], "entities")
        self.check(m.traces(), List[records.Trace], "traces")
        self.check(m.fades(), List[records.Fade], "fades")
        for f in facts:
            self.check(m.explain_fact(f["id"]), records.FactExplanation, "explain_fact")
            self.check(m.explain_recall(f["id"]), List[records.RecallExplanation], "explain_recall")
        for e in m.episodes():
            self.check(m.explain_episode(e["id"]), records.EpisodeExplanation, "explain_episode")
        self.check(Memory.note_tool(), records.NoteTool, "note_tool")
        note = m.note([{"subject": "Loam", "predicate": "costs", "object": "$39", "sentence": "Loam costs $39."}])
        self.check(note, records.NoteOutcome, "note")

    def test_tool_calls_batches_erasures_and_failures_have_their_types(self) -> None:
        memory = Memory("types", clock=ManualClock(FIXTURE["steps"][0]["at"]))
        memory.add_message("user", "What does a Loam sensor cost?")
        memory.add_message("assistant", "", tool_calls=[{"id": "c1", "name": "price", "arguments": "{}"}])
        memory.add_message("tool", "$39", tool_call_id="c1")
        rendered = memory.render_openai()
        self.assertEqual([r["role"] for r in rendered], ["user", "assistant", "tool"])
        self.check(rendered, List[records.OpenAIMessage], "render_openai with tool calls")
        self.check(memory.view(), records.View, "view with tool calls")
        self.check(memory.messages(), List[records.Message], "messages with tool calls")
        self.check(memory.add_messages([{"role": "user", "content": "And shipping?", "client_id": "m9"}]),
                   records.Batch, "add_messages")
        self.check(memory.erase("message", 1), records.Erased, "erase")
        self.check(memory.end_turn(), Optional[records.DistilledBlock], "end_turn")

        def fail(_r: TaskRequest) -> str:
            raise ConnectionError("no model here")

        degraded = Memory("degraded-types", model=CallableModel(fail, lambda ts: [[1.0, 0.0] for _ in ts]),
                          clock=ManualClock(FIXTURE["steps"][0]["at"]), config={"model_attempts": 1})
        degraded.add_message("user", "Plan the Lisbon offsite.")
        degraded.add_message("user", "Also the budget, which is 12000 euros.")
        steps = degraded.stats()
        self.check(steps, records.Stats, "stats after failures")
        self.assertIsNotNone(steps["model"]["last_error"])


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
