"""Untrusted text stays data, through the component: the adversarial corpus
(``tests/fixtures/adversarial.json``) played as in the native test
``tests/untrusted_text.rs`` (same sizes, config and scripted answers), and
its rules checked on the view's facts and recall items.

The model is ``engram::testing::ScriptedModel`` in Python: the rules of
``tests/common/mod.rs`` (``standard_segment``, ``no_recall``), its default
answers, and its hashed-words-and-trigrams embedder.

Run: ``.venv/bin/python -m unittest discover -s hosts/python``.
"""

from __future__ import annotations

import json
import math
import sys
import unicodedata
import unittest
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host import CallableModel, Memory, TaskRequest  # noqa: E402
from test_engram_host import ManualClock  # noqa: E402

CORPUS = json.loads((HERE.parents[1] / "tests" / "fixtures" / "adversarial.json").read_text())["strings"]

# tests/common/mod.rs
T0 = 1_764_000_000_000
MIN = 60_000
NEW = "NEWTOPIC"
FRAMING_TOKENS = 4  # engram::message::FRAMING_TOKENS


def config(ceiling: int, **more: Any) -> Dict[str, Any]:
    """`common::config`: every size given, fades only at the ceiling."""
    return {"ceiling_tokens": ceiling, "fade_ahead": False, **more}


def estimate_tokens(text: str) -> int:
    """`engram::text::estimate_tokens`."""
    return max(-(-len(text.encode()) // 4), len(text.split()))


def sized(marker: str, tokens: int) -> str:
    """`common::sized`: `marker` and filler words, exactly `tokens` tokens
    framing included."""
    words = tokens - FRAMING_TOKENS
    s = marker + " w" * max(0, words - len(marker.split()))
    assert estimate_tokens(s) + FRAMING_TOKENS == tokens, f"marker {marker!r} is too long for {tokens} tokens"
    return s


# ---- engram::testing::ScriptedModel, in Python ------------------------------


def words(text: str) -> List[str]:
    """`engram::text::words`: lower-cased runs of letters and digits."""
    out, cur = [], []
    for c in text:
        if c.isalnum():
            cur.append(c)
        elif cur:
            out.append("".join(cur).lower())
            cur = []
    if cur:
        out.append("".join(cur).lower())
    return out


def fnv(s: str) -> int:
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def hash_embed(text: str, dimension: int = 64) -> List[float]:
    """`engram::testing::HashEmbedder`: hashed words and character trigrams,
    L2-normalised."""
    v = [0.0] * dimension

    def add(feature: str, w: float) -> None:
        h = fnv(feature)
        v[h % dimension] += w if h >> 63 == 0 else -w

    for word in words(text):
        add(word, 1.0)
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            add(padded[i:i + 3], 0.4)
    norm = math.sqrt(sum(x * x for x in v))
    if norm > 0:
        return [x / norm for x in v]
    v[0] = 1.0
    return v


def numbered_items(content: str) -> int:
    """`engram::testing::numbered_items`."""
    n = 0
    for line in rust_lines(content):
        digits = len(line) - len(line.lstrip("0123456789"))
        if digits and line[digits:].startswith(". "):
            n += 1
    return n


def new_message(content: str) -> str:
    """`engram::testing::new_message`: the new message's text in a segment
    request."""
    i = content.find("\nNew message")
    if i < 0:
        return content
    lines = content[i + 1:].split("\n")
    line = lines[1] if len(lines) > 1 else ""
    return line.split(": ", 1)[1] if ": " in line else line


def scripted_model() -> CallableModel:
    """ScriptedModel with `standard_segment` and `no_recall`; every other task
    gets the scripted default."""

    def complete(req: TaskRequest) -> str:
        if req.task == "segment":  # standard_segment
            return json.dumps({"boundary": 0.95 if NEW in new_message(req.content) else 0.1})
        if req.task == "relevance":  # no_recall
            return json.dumps({"relevant": []})
        if req.task in ("note", "trace"):
            return '{"facts": []}'
        if req.task == "resolve":
            return '{"same_as": null}'
        if req.task == "reconcile":
            return '{"judgments": []}'
        if req.task == "split":
            lines = rust_lines(req.content)
            msg = lines[-1].strip() if lines else ""
            return json.dumps({"parts": [msg or "message"]})
        if req.task == "distill":
            return json.dumps({"kept": list(range(1, numbered_items(req.content) + 1))})
        raise AssertionError(f"unexpected task {req.task}")

    return CallableModel(complete=complete, embed=lambda texts: [hash_embed(t) for t in texts])


# ---- the rules of the corpus --------------------------------------------------


def invisible(c: str) -> bool:
    o = ord(c)
    return ((unicodedata.category(c) == "Cc" and c != "\n") or 0x200B <= o <= 0x200F or 0x202A <= o <= 0x202E
            or 0x2060 <= o <= 0x206F or o in (0xFEFF, 0x061C))


def rust_lines(text: str) -> List[str]:
    """`str::lines`: split at '\\n', one trailing '\\r' dropped per line, no
    empty line after a final '\\n'."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class Fx:
    """The native tests' `Fx`, over the component."""

    def __init__(self, cfg: Dict[str, Any]):
        self.clock = ManualClock(T0)
        self.memory = Memory("test", model=scripted_model(), clock=self.clock, config=cfg)

    def minutes(self, n: int) -> None:
        self.clock.ms += n * MIN

    def user(self, text: str) -> Dict[str, Any]:
        return self.memory.add_message("user", text)

    def assistant(self, text: str) -> Dict[str, Any]:
        return self.memory.add_message("assistant", text)

    def turn(self, topic: str, user_tokens: int, assistant_tokens: int) -> None:
        self.user(sized(f"{NEW} {topic}", user_tokens))
        self.minutes(1)
        self.assistant(sized(topic, assistant_tokens))
        self.minutes(1)


class UntrustedTextTest(unittest.TestCase):
    def check(self, view: Dict[str, Any], milestones: int) -> None:
        """The rules of the corpus on every facts and recall item of `view`
        (`milestones`: how many milestone facts the memory really holds)."""
        tags = 0
        checked = 0
        for it in view["items"]:
            if it["kind"] not in ("facts", "recall"):
                continue
            checked += 1
            text = it["text"]
            self.assertFalse(any(invisible(c) for c in text), f"invisible characters in {text!r}")
            self.assertNotIn("<|", text)
            self.assertNotIn("|>", text)
            for n, line in enumerate(rust_lines(text)):
                ours = (n == 0 or line == "" or line.startswith("- ") or line.startswith("  - earlier")
                        or line == "From the conversation:" or line.endswith(":"))
                self.assertTrue(ours, f"a line the memory did not frame: {line!r}")
                for bad in ("#", ">", "* ", "system:", "user:", "assistant:", "<|"):
                    self.assertFalse(line.startswith(bad), f"line starts with {bad!r}: {line!r}")
                if n == 0:
                    self.assertIn("quoted data, not instructions", line)
                tags += line.count("[done]") + line.count("[engram]")
        self.assertGreater(checked, 0, "the view has a facts or recall item")
        self.assertEqual(tags, milestones, "only the memory's own milestone tags")

    def test_hostile_facts_and_names_render_as_data_in_the_facts_block(self) -> None:
        fx = Fx(config(20_000))
        # Two big turns: the second reaches the ceiling and episode 1 leaves.
        fx.turn("garden", 5_000, 5_000)
        fx.turn("taxes", 5_000, 5_000)
        first = next(e for e in fx.memory.episodes() if e["id"] == 1)
        self.assertEqual(first["state"], "sealed")
        facts = [
            {"subject": f"{s[:200]} {i}", "predicate": "says", "object": "the user", "sentence": s[:1_500]}
            for i, s in enumerate(CORPUS)
        ]
        facts.append({"subject": "Launch", "predicate": "is", "object": "approved",
                      "sentence": "The launch is approved.", "kind": "done"})
        fx.memory.note(facts, episode=1)  # hostile facts are still facts
        view = fx.memory.view()
        shown = sum(len(i["facts"]) for i in view["items"] if i["kind"] == "facts")
        self.assertEqual(shown, len(facts), "every fact is in the facts block")
        self.check(view, 1)
        # The OpenAI rendering sends the same text.
        rendered = fx.memory.render_openai()
        block = next(i for i in view["items"] if i["kind"] == "facts")
        self.assertIn({"role": "system", "content": block["text"]}, rendered)

    def test_hostile_messages_quoted_in_a_recall_block_render_as_data(self) -> None:
        # Candidates are kept by rank, so whatever matches is shown.
        fx = Fx(config(6_000, walk_with_model=False, split_with_model=False))
        for i, s in enumerate(CORPUS):
            fx.user(f"{NEW} hostile {i}: {s[:2_000]}")
            fx.minutes(1)
            fx.assistant(sized(f"reply {i}", 1_200))
            fx.minutes(1)
        view = fx.memory.view()
        block = next((i for i in view["items"] if i["kind"] == "recall"), None)
        self.assertIsNotNone(block, "recall blocks quoting the hostile messages are in view")
        self.assertIn("From the conversation:", block["text"])
        self.assertIn("hostile", block["text"])
        self.check(view, 0)


if __name__ == "__main__":
    unittest.main()
