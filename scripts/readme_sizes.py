#!/usr/bin/env python3
"""The sizes the README states, checked against the built artefacts.

README.md states the npm package's .wasm and the WASI component as
`**RAW B, GZIP B gzip**` (gzip -9, as scripts/build-js and
scripts/build-component measure). This fails when a stated figure is more
than 2 % away from the built file (a toolchain's own noise stays within
that; a change of the core's size does not), and `--write` puts the
measured figures in. Run by scripts/test after the host parts built both.

    python3 scripts/readme_sizes.py [--write]
"""

import gzip
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# (what, file, the README text just before the figures)
ARTEFACTS = [
    ("npm .wasm", ROOT / "js/pkg/web/engram_bg.wasm", "The package's `.wasm` is "),
    ("component", ROOT / "target/wasm32-wasip2/release/engram.wasm", "`target/wasm32-wasip2/release/engram.wasm`, "),
]
FIGURES = re.compile(r"\*\*([\d,]+) B, ([\d,]+) B gzip\*\*")
TOLERANCE = 0.02


def measure(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    return len(data), len(gzip.compress(data, compresslevel=9, mtime=0))


def main() -> int:
    write = "--write" in sys.argv[1:]
    text = README.read_text(encoding="utf-8")
    failures = []
    for what, path, lead in ARTEFACTS:
        if not path.exists():
            failures.append(f"{what}: {path.relative_to(ROOT)} is not built")
            continue
        at = text.find(lead)
        m = FIGURES.match(text, at + len(lead)) if at >= 0 else None
        if m is None:
            failures.append(f"{what}: README has no '**N B, N B gzip**' after {lead!r}")
            continue
        raw, gz = measure(path)
        stated = [int(g.replace(",", "")) for g in m.groups()]
        print(f"{what}: built {raw:,} B, {gz:,} B gzip; README says {stated[0]:,} B, {stated[1]:,} B gzip")
        if write:
            text = text[: m.start()] + f"**{raw:,} B, {gz:,} B gzip**" + text[m.end():]
            continue
        for name, built, said in (("raw", raw, stated[0]), ("gzip", gz, stated[1])):
            if abs(built - said) > TOLERANCE * built:
                failures.append(
                    f"{what}: {name} size is {built:,} B, the README says {said:,} B "
                    f"(more than {TOLERANCE:.0%} off): run scripts/readme_sizes.py --write"
                )
    if write:
        README.write_text(text, encoding="utf-8")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
