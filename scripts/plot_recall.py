#!/usr/bin/env python3
"""Evidence recall against the token budget: engram beside plain retrieval.

Reads the tables scripts/bench-quality prints (LoCoMo's "Evidence recall
within a token budget" and LongMemEval's method table), keeps the rows with
the walk off (or no walk: the baselines), writes them as JSON and draws them
as an SVG with two panels. Standard library only.

    python3 scripts/plot_recall.py OUTPUT.txt bench/results/quality-latest.json docs/recall-budget.svg
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TypedDict


class Series(TypedDict):
    name: str
    engram: bool
    recall: list[float]


class Panel(TypedDict):
    dataset: str
    budgets: list[int]
    series: list[Series]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table_after(lines: list[str], start: int) -> tuple[list[str], list[list[str]]]:
    """The markdown table that starts at or after line `start`: header, rows."""
    i = start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    header = _cells(lines[i])
    rows = []
    i += 2
    while i < len(lines) and lines[i].startswith("|"):
        rows.append(_cells(lines[i]))
        i += 1
    return header, rows


def _budgets(header: list[str]) -> list[tuple[int, int]]:
    """(column, budget) for the columns named "N tokens"."""
    out = []
    for col, name in enumerate(header):
        m = re.fullmatch(r"(\d+) tokens", name)
        if m:
            out.append((col, int(m.group(1))))
    return out


def parse(text: str) -> list[Panel]:
    """The recall-per-token panels of a scripts/bench-quality output."""
    lines = text.splitlines()
    panels: list[Panel] = []
    for i, line in enumerate(lines):
        if line.startswith("Evidence recall within a token budget"):
            header, rows = _table_after(lines, i + 1)
            cols = _budgets(header)
            series: list[Series] = []
            for row in rows:
                if row[1] == "on":
                    continue
                engram = row[1] != "-"
                source = "offline facts" if row[0] == "offline" else row[0]
                name = f"engram, {source}" if engram else row[0]
                series.append({"name": name, "engram": engram, "recall": [float(row[c]) for c, _ in cols]})
            panels.append({"dataset": "LoCoMo", "budgets": [b for _, b in cols], "series": series})
        elif line.startswith("LongMemEval dev:"):
            header, rows = _table_after(lines, i + 1)
            cols = _budgets(header)
            series = []
            for row in rows:
                if "walk on" in row[0]:
                    continue
                engram = row[0].startswith("engram")
                name = row[0].replace(", walk off", "")
                series.append({"name": name, "engram": engram, "recall": [float(row[c]) for c, _ in cols]})
            panels.append({"dataset": "LongMemEval", "budgets": [b for _, b in cols], "series": series})
    return panels


ENGRAM_COLOURS = ["#1f5fbf", "#d0562a", "#2a9d4b"]
BASELINE_GREYS = ["#555555", "#888888", "#aaaaaa"]


def svg(panels: list[Panel], width: int = 900, height: int = 420) -> str:
    """Two (or more) panels side by side: x the budget, y evidence recall 0..1."""
    out = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">'
        ),
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
        (
            f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">'
            "Evidence recall within a token budget: engram beside plain retrieval</text>"
        ),
    ]
    pw = width / max(1, len(panels))
    for p, panel in enumerate(panels):
        x0, x1 = p * pw + 55, (p + 1) * pw - 20
        y0, y1 = 50, height - 150
        budgets = panel["budgets"]
        lo, hi = min(budgets), max(budgets)

        def px(b: int, x0: float = x0, x1: float = x1, lo: int = lo, hi: int = hi) -> float:
            return x0 + (x1 - x0) * (b - lo) / (hi - lo or 1)

        def py(r: float, y0: float = y0, y1: float = y1) -> float:
            return y1 - (y1 - y0) * r

        out.append(f'<g class="panel" data-dataset="{panel["dataset"]}">')
        out.append(
            f'<text x="{(x0 + x1) / 2}" y="{y0 - 10}" text-anchor="middle" font-size="13">{panel["dataset"]}</text>'
        )
        for tick in range(0, 11, 2):
            r = tick / 10
            out.append(f'<line x1="{x0}" y1="{py(r):.1f}" x2="{x1}" y2="{py(r):.1f}" stroke="#e4e4e4"/>')
            out.append(f'<text x="{x0 - 6}" y="{py(r) + 4:.1f}" text-anchor="end">{r:.1f}</text>')
        for b in budgets:
            out.append(f'<text x="{px(b):.1f}" y="{y1 + 16}" text-anchor="middle">{b}</text>')
        out.append(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
        out.append(f'<text x="{(x0 + x1) / 2}" y="{y1 + 34}" text-anchor="middle">token budget</text>')
        out.append(
            f'<text x="{x0 - 38}" y="{(y0 + y1) / 2}" text-anchor="middle" '
            f'transform="rotate(-90 {x0 - 38} {(y0 + y1) / 2})">evidence recall</text>'
        )
        e = g = 0
        for k, s in enumerate(panel["series"]):
            if s["engram"]:
                colour, dash, w = ENGRAM_COLOURS[e % 3], "", 2.5
                e += 1
            else:
                colour, dash, w = BASELINE_GREYS[g % 3], ' stroke-dasharray="5 4"', 1.5
                g += 1
            points = " ".join(f"{px(b):.1f},{py(r):.1f}" for b, r in zip(budgets, s["recall"]))
            out.append(
                f'<polyline class="series" data-name="{s["name"]}" points="{points}" fill="none" '
                f'stroke="{colour}" stroke-width="{w}"{dash}/>'
            )
            for b, r in zip(budgets, s["recall"]):
                out.append(f'<circle cx="{px(b):.1f}" cy="{py(r):.1f}" r="3" fill="{colour}"/>')
            ly = y1 + 52 + 15 * k
            out.append(
                f'<line x1="{x0}" y1="{ly - 4}" x2="{x0 + 24}" y2="{ly - 4}" stroke="{colour}" stroke-width="{w}"{dash}/>'
            )
            last = s["recall"][budgets.index(500)] if 500 in budgets else s["recall"][-1]
            out.append(f'<text x="{x0 + 30}" y="{ly}">{s["name"]} ({last:.2f} at 500)</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    panels = parse(Path(argv[1]).read_text())
    if len(panels) < 1:
        print("plot_recall: no recall-per-token table in the output", file=sys.stderr)
        return 1
    Path(argv[2]).write_text(json.dumps({"panels": panels}, indent=2) + "\n")
    Path(argv[3]).write_text(svg(panels))
    print(f"plot_recall: wrote {argv[2]} and {argv[3]} ({', '.join(p['dataset'] for p in panels)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
