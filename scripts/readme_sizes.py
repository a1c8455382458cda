#!/usr/bin/env python3
"""The sizes the docs state, checked against the built artefacts.

Every user-facing doc (README.md, docs/*.md but the dated records of
docs/BENCH.md and docs/DECISIONS.md, js/README.md, hosts/*/README.md)
states the size of the npm package's .wasm (the engine's, or the offline
model's) or of the WASI component only
as `**RAW B, GZIP B gzip**` (gzip -9, as scripts/build-js and
scripts/build-component measure), right after a lead naming the artefact
(LEADS below). This fails when a stated figure is more than 2 % away from
the built file (a toolchain's own noise stays within that; a change of the
core's size does not), when a figure follows no known lead, and when one
of those docs says "gzip" anywhere else (a size stated outside a checked
figure). `--write` puts the measured figures in. Run by scripts/test after
the host parts built both; `scripts/size` prints what the artefacts are
made of.

    python3 scripts/readme_sizes.py [--write]
"""

import gzip
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPM = ("npm .wasm", ROOT / "js/pkg/web/engram_bg.wasm")
OFFLINE = ("offline model .wasm", ROOT / "js/pkg/offline/engram_offline_bg.wasm")
COMPONENT = ("component", ROOT / "target/wasm32-wasip2/release/engram.wasm")
# The text just before a figure, and the artefact it names.
LEADS = [
    ("The package's `.wasm` is ", NPM),
    ("`js/pkg/web/engram_bg.wasm` (the same module serves Node): ", NPM),
    ("`js/pkg/offline/engram_offline_bg.wasm`: ", OFFLINE),
    ("`target/wasm32-wasip2/release/engram.wasm`, ", COMPONENT),
    ("**Size** (`scripts/build-component`): ", COMPONENT),
]
# Dated records (figures of a commit, kept as history): not current sizes.
RECORDS = {"docs/BENCH.md", "docs/bench-history.md", "docs/DECISIONS.md"}
FIGURES = re.compile(r"\*\*([\d,]+) B, ([\d,]+) B gzip\*\*")
TOLERANCE = 0.02


def docs() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "js/README.md"]
    found += sorted((ROOT / "docs").glob("*.md"))
    found += sorted((ROOT / "hosts").glob("*/README.md"))
    return [p for p in found if p.exists() and str(p.relative_to(ROOT)) not in RECORDS]


def measure(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    return len(data), len(gzip.compress(data, compresslevel=9, mtime=0))


def main() -> int:
    write = "--write" in sys.argv[1:]
    failures = []
    measured = {}
    for doc in docs():
        name = doc.relative_to(ROOT)
        text = doc.read_text(encoding="utf-8")
        figures = list(FIGURES.finditer(text))
        covered = [(m.start(), m.end()) for m in figures]
        for at in (m.start() for m in re.finditer("gzip", text)):
            if not any(a <= at < b for a, b in covered):
                line = text.count("\n", 0, at) + 1
                failures.append(
                    f"{name}:{line}: says gzip outside a checked figure "
                    "(state sizes as '**N B, N B gzip**' after a lead in scripts/readme_sizes.py)"
                )
        out, last = [], 0
        for m in figures:
            artefact = next((a for lead, a in LEADS if text.endswith(lead, 0, m.start())), None)
            line = text.count("\n", 0, m.start()) + 1
            if artefact is None:
                failures.append(f"{name}:{line}: a size figure after no known lead")
                continue
            what, path = artefact
            if not path.exists():
                failures.append(f"{what}: {path.relative_to(ROOT)} is not built")
                continue
            raw, gz = measured.setdefault(what, measure(path))
            stated = [int(g.replace(",", "")) for g in m.groups()]
            print(f"{name}:{line}: {what} built {raw:,} B, {gz:,} B gzip; stated {stated[0]:,} B, {stated[1]:,} B gzip")
            out += [text[last : m.start()], f"**{raw:,} B, {gz:,} B gzip**"]
            last = m.end()
            if write:
                continue
            for kind, built, said in (("raw", raw, stated[0]), ("gzip", gz, stated[1])):
                if abs(built - said) > TOLERANCE * built:
                    failures.append(
                        f"{name}:{line}: {what} {kind} size is {built:,} B, the doc says {said:,} B "
                        f"(more than {TOLERANCE:.0%} off): run scripts/readme_sizes.py --write"
                    )
        if write and figures:
            doc.write_text("".join(out) + text[last:], encoding="utf-8")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
