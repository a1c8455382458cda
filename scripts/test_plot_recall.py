#!/usr/bin/env python3
"""scripts/plot_recall.py on a small bench-quality output: the tables it
reads, the JSON it writes and the SVG it draws. Run by scripts/test."""

from __future__ import annotations

import importlib.util
import json
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("plot_recall", HERE / "plot_recall.py")
assert spec and spec.loader
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)

OUTPUT = """LoCoMo dev: 2 conversations

Evidence recall within a token budget of retrieved text (search's items in order, those that fit):

| note source | walk | 200 tokens | 500 tokens | 1000 tokens | 500: multi-hop |
|---|---|---|---|---|---|
| observations | off | 0.700 | 0.800 | 0.900 | 0.5 (4) |
| observations | on | 0.100 | 0.100 | 0.100 | 0.5 (4) |
| BM25 over turns | - | 0.400 | 0.500 | 0.600 | 0.3 (4) |

LongMemEval dev: 30 questions, 14932 turns

| method | recall@5 | 200 tokens | 500 tokens | 1000 tokens |
|---|---|---|---|---|
| engram, offline facts, walk off | 0.8 | 0.820 | 0.910 | 0.920 |
| engram, offline facts, walk on | 0.8 | 0.100 | 0.100 | 0.100 |
| BM25 over turns | 0.7 | 0.580 | 0.770 | 0.810 |
"""
SVG = "{http://www.w3.org/2000/svg}"


class PlotRecall(unittest.TestCase):
    def test_the_tables_become_panels_with_the_walk_off_rows_and_the_baselines(self) -> None:
        panels = plot.parse(OUTPUT)
        self.assertEqual([p["dataset"] for p in panels], ["LoCoMo", "LongMemEval"])
        self.assertEqual(panels[0]["budgets"], [200, 500, 1000])
        self.assertEqual(
            [(s["name"], s["engram"], s["recall"]) for s in panels[0]["series"]],
            [("engram, observations", True, [0.7, 0.8, 0.9]), ("BM25 over turns", False, [0.4, 0.5, 0.6])],
        )
        self.assertEqual([s["name"] for s in panels[1]["series"]], ["engram, offline facts", "BM25 over turns"])

    def test_the_svg_has_a_white_background_a_line_per_series_and_higher_recall_drawn_higher(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "out.md").write_text(OUTPUT)
            args = ["plot_recall.py", f"{d}/out.md", f"{d}/q.json", f"{d}/p.svg"]
            self.assertEqual(plot.main(args), 0)
            data = json.loads((Path(d) / "q.json").read_text())
            root = ET.parse(Path(d) / "p.svg").getroot()
        self.assertEqual(len(data["panels"]), 2)
        background = root.find(f"{SVG}rect")
        assert background is not None
        self.assertEqual(background.get("fill"), "white")
        for panel in root.iter(f"{SVG}g"):
            lines = {p.get("data-name"): p.get("points", "") for p in panel.iter(f"{SVG}polyline")}
            self.assertEqual(len(lines), 2, panel.get("data-dataset"))
            engram, baseline = ([float(xy.split(",")[1]) for xy in pts.split()] for pts in lines.values())
            # SVG's y grows downwards: the higher recall has the smaller y.
            self.assertTrue(all(e < b for e, b in zip(engram, baseline)), lines)

    def test_an_output_without_a_recall_table_is_an_error_and_writes_nothing(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "out.md").write_text("no tables here\n")
            self.assertEqual(plot.main(["plot_recall.py", f"{d}/out.md", f"{d}/q.json", f"{d}/p.svg"]), 1)
            self.assertFalse((Path(d) / "p.svg").exists())


if __name__ == "__main__":
    unittest.main()
