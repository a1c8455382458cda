#!/usr/bin/env python3
"""Where a store's bytes go: reads a store dump of the scale bench
(`DIR/store-N.kv`, see bench/scale_model.rs `write_kv`), decodes every
segment and tail entry (src/base/codec/, entries of encoding 3 or 4) and prints
bytes per fact by key kind, then by value kind inside the log.

    python3 bench/store_bytes.py DIR/store-100000.kv 100000 [--fields]

`--fields` also prints every event field on its own. Dependency-free; about
10 s at 100k facts.
"""

import collections
import re
import struct
import sys

UNIT, FALSE, TRUE, UINT, NINT, F64, F32, STR, BYTES, SEQ, MAP, NAME_NEW, NAME_REF = range(13)
NAME_SHORT = 16


def varint(b, pos):
    n = shift = 0
    while True:
        x = b[pos]
        pos += 1
        n |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return n, pos


class Entry:
    """One encoded entry; adds each value's bytes to `out[path]`."""

    def __init__(self, b, out):
        self.b, self.out, self.names = b, out, []

    def name(self, pos):
        t = self.b[pos]
        pos += 1
        if t in (NAME_NEW, STR):
            n, pos = varint(self.b, pos)
            s = self.b[pos : pos + n].decode()
            if t == NAME_NEW:
                self.names.append(s)
            return s, pos + n
        if t == NAME_REF:
            i, pos = varint(self.b, pos)
            return self.names[i], pos
        if t >= NAME_SHORT:
            return self.names[t - NAME_SHORT], pos
        raise ValueError(f"expected a name, found tag {t}")

    def value(self, pos, path):
        t = self.b[pos]
        if t in (UNIT, FALSE, TRUE):
            self.out[path] += 1
            return None, pos + 1
        if t in (UINT, NINT):
            _, end = varint(self.b, pos + 1)
        elif t == F64:
            end = pos + 9
        elif t == F32:
            end = pos + 5
        elif t in (STR, BYTES):
            n, end = varint(self.b, pos + 1)
            end += n
        elif t in (NAME_NEW, NAME_REF) or t >= NAME_SHORT:
            s, end = self.name(pos)
            self.out[path] += end - pos
            return s, end
        elif t == SEQ:
            n, p = varint(self.b, pos + 1)
            self.out[path + "/framing"] += p - pos
            for _ in range(n):
                _, p = self.value(p, path + "[]")
            return None, p
        elif t == MAP:
            n, p = varint(self.b, pos + 1)
            here = path
            framing = p - pos
            for _ in range(n):
                k0 = p
                key, p = self.name(p)
                if key == "type":
                    kind, p = self.name(p)
                    here = f"{path}{{{kind}}}"
                    self.out[here + "/names"] += p - k0
                    continue
                framing += p - k0
                _, p = self.value(p, f"{here}.{key}")
            self.out[here + "/names"] += framing
            return None, p
        else:
            raise ValueError(f"unknown tag {t} at {pos}")
        self.out[path] += end - pos
        return None, end


def group(path):
    if path.endswith(".embedding"):
        for kind in ("fact_added", "entity_added", "passages_indexed"):
            if kind in path:
                return "vectors: " + kind.split("_")[0]
    texts = (
        "fact_added}.sentence",
        "message}.content",
        ".predicate",
        "entity_added}.name",
        "aliases[].name",
        "aliases[].normal",
        "passages[].text",
    )
    if any(path.endswith(t) for t in texts):
        return "text (sentences, messages, predicates, names)"
    for kind, label in (
        ("{trace}", "traces"),
        ("{declined}", "declined counts"),
        ("{fact_added}", "facts: other fields"),
    ):
        if kind in path:
            return label
    return "other events, entry and segment framing"


def main():
    path, facts = sys.argv[1], int(sys.argv[2])
    keys, fields = collections.Counter(), collections.Counter()
    with open(path, "rb") as f:
        while True:
            b = f.read(4)
            if not b:
                break
            k = f.read(struct.unpack("<I", b)[0]).decode()
            v = f.read(struct.unpack("<Q", f.read(8))[0])
            keys[re.sub(r"/\d+$", "/N", k)] += len(k) + len(v)
            if "/seg/" in k:
                pos = 5
                _, pos = varint(v, pos)
                _, pos = varint(v, pos)
                pos += 8
                fields["segment headers and keys"] += pos + len(k)
                while pos < len(v):
                    n, p = varint(v, pos)
                    fields["segment headers and keys"] += p - pos
                    Entry(v[p : p + n], fields).value(0, "entry")
                    pos = p + n
            elif "/log/" in k:
                fields["segment headers and keys"] += 13 + len(k)
                Entry(v[13:], fields).value(0, "entry")
    per = lambda n: f"{n / facts:8.1f}"
    print("by key:")
    for k, n in keys.most_common():
        print(f"  {k:44} {per(n)} B/fact")
    print(f"  {'total':44} {per(sum(keys.values()))} B/fact")
    groups = collections.Counter()
    for k, n in fields.items():
        groups[group(k)] += n
    print("in the log, by value kind:")
    for k, n in groups.most_common():
        print(f"  {k:44} {per(n)} B/fact")
    if "--fields" in sys.argv:
        for k, n in fields.most_common():
            print(f"  {k:70} {per(n)}")


if __name__ == "__main__":
    main()
