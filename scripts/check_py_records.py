"""The Python host's record TypedDicts against the generated declarations.

Usage: check_py_records.py RECORDS_D_TS RECORDS_PY

js/types/records.d.ts is generated from the Rust types (scripts/check-types
fails when it drifts from them); this check holds
hosts/python/engram_host/records.py to it: every object record declared
there that records.py has (by the same name, or the one in RENAMED) has the
same field names, and every union of names (``"a" | "b"``) has the same
values as the ``Literal`` of that name. So a field added, renamed or dropped
in Rust fails scripts/check-types until both hosts' types follow.

Where Python's shape differs on purpose (the component's WIT records, see
records.py's docstring), the difference is listed in DIFFERENT with its
reason; nothing else may differ. Exits 1 with one line per difference.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

# Python name for a d.ts record of another name.
RENAMED: dict[str, str] = {}

# (record, field): why the Python record lacks it (or has it extra).
DIFFERENT: dict[tuple[str, str], str] = {
    ("Stats", "round_trips"): "added by the host (its own store calls), as in the npm package",
    ("EpisodeExplanation", "thread"): "the component's WIT record (wit/engram.wit) has no thread",
    ("FactExplanation", "thread"): "the component's WIT record (wit/engram.wit) has no thread",
}


def declarations(text: str) -> dict[str, str]:
    """`export type NAME = BODY;` bodies by name, comments removed."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = re.sub(r"^//.*$", "", text, flags=re.MULTILINE)
    out: dict[str, str] = {}
    for m in re.finditer(r"^export type (\w+)(?:<[^>]*>)? = ", text, flags=re.MULTILINE):
        depth, i = 0, m.end()
        while i < len(text):
            c = text[i]
            if c in "{[(<":
                depth += 1
            elif c in "}])>":
                depth -= 1
            elif c == ";" and depth == 0:
                break
            i += 1
        out[m.group(1)] = text[m.end() : i].strip()
    return out


def object_fields(body: str) -> list[str] | None:
    """The top-level field names of `{ a: T, b?: U, }`, or None for another form."""
    body = body.strip()
    if not body.startswith("{"):
        return None
    fields, depth, start = [], 0, True
    i = 0
    while i < len(body):
        c = body[i]
        if c in "{[(<":
            depth += 1
            start = depth == 1
        elif c in "}])>":
            depth -= 1
            if depth == 0 and i != len(body) - 1:
                return None  # `{ ... } | { ... }`: a union, not one object
        elif c == "," and depth == 1:
            start = True
        elif start and depth == 1 and not c.isspace():
            m = re.match(r'"?(\w+)"?\??:', body[i:])
            if m:
                fields.append(m.group(1))
                i += m.end() - 1
            start = False
        i += 1
    return fields


def names_union(body: str) -> list[str] | None:
    """The values of `"a" | "b"`, or None for another form."""
    parts = [p.strip() for p in body.split("|")]
    if all(re.fullmatch(r'"\w+"', p) for p in parts):
        return [p.strip('"') for p in parts]
    return None


def main(dts: str, py: str) -> int:
    spec = importlib.util.spec_from_file_location("records_under_check", py)
    assert spec and spec.loader
    records = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(records)
    problems: list[str] = []
    checked = 0
    for name, body in declarations(Path(dts).read_text()).items():
        pyname = RENAMED.get(name, name)
        target = getattr(records, pyname, None)
        if target is None:
            continue
        fields = object_fields(body)
        if fields is not None and hasattr(target, "__required_keys__"):
            keys = set(target.__required_keys__) | set(target.__optional_keys__)
            for f in sorted(set(fields) - keys):
                if (name, f) not in DIFFERENT:
                    problems.append(f"{pyname}: no field {f!r} (the Rust record {name} has it)")
            for f in sorted(keys - set(fields)):
                if (name, f) not in DIFFERENT:
                    problems.append(f"{pyname}: field {f!r} is not in the Rust record {name}")
            checked += 1
            continue
        values = names_union(body)
        if values is not None and hasattr(target, "__args__"):
            if list(target.__args__) != values:
                problems.append(f"{pyname}: {list(target.__args__)} where the Rust type {name} has {values}")
            checked += 1
    for p in problems:
        print(p)
    if problems:
        print(f"{py}: {len(problems)} differences from {dts}", file=sys.stderr)
        return 1
    print(f"hosts/python/engram_host/records.py: {checked} records as the Rust types declare them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
