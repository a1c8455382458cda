#!/usr/bin/env python3
"""List the imports of a core WebAssembly module; fail on forbidden modules.

The purity guard of engram: the core built for wasm32-unknown-unknown with no
features must import nothing from the module `env` (an `env` import is an
unresolved C or OS symbol that a host would have to provide). This is the
check quinn's CI makes with `wasm-tools print --skeleton`, written here with
the standard library only so that it runs on a fresh machine.

Usage:
    wasm_imports.py [--deny MODULE]... FILE.wasm

Prints one line `module.name (kind)` per import, then a summary line.
Exit status: 0 when no import comes from a denied module (default: `env`),
1 when one does, 2 when the file is not a readable core wasm module.

Binary format: https://webassembly.github.io/spec/core/binary/modules.html
(the import section has id 2; integers are unsigned LEB128).
"""

import sys

MAGIC = b"\0asm"
CORE_VERSION = b"\x01\x00\x00\x00"
IMPORT_SECTION = 2
KINDS = {0: "func", 1: "table", 2: "memory", 3: "global", 4: "tag"}


class Malformed(Exception):
    """The bytes are not a well-formed core wasm module."""


class Reader:
    def __init__(self, data, pos=0, end=None):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def byte(self):
        if self.pos >= self.end:
            raise Malformed(f"unexpected end of data at offset {self.pos}")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def u32(self):
        """Unsigned LEB128, at most 5 bytes."""
        result, shift = 0, 0
        for _ in range(5):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b & 0x80 == 0:
                if result > 0xFFFFFFFF:
                    raise Malformed(f"u32 out of range before offset {self.pos}")
                return result
            shift += 7
        raise Malformed(f"LEB128 longer than 5 bytes before offset {self.pos}")

    def s33(self):
        """Signed LEB128 of at most 33 bits (heap types); value unused."""
        for _ in range(5):
            if self.byte() & 0x80 == 0:
                return
        raise Malformed(f"s33 longer than 5 bytes before offset {self.pos}")

    def take(self, n):
        if self.pos + n > self.end:
            raise Malformed(f"{n} bytes at offset {self.pos} run past the end")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def name(self):
        raw = self.take(self.u32())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Malformed(f"name is not UTF-8: {raw!r}") from e

    def valtype(self):
        t = self.byte()
        if t in (0x63, 0x64):  # (ref null? heaptype) of the GC / typed-refs proposals
            self.s33()

    def limits(self):
        flags = self.byte()
        if flags > 0x07:
            raise Malformed(f"unknown limits flags 0x{flags:02x}")
        self.u64_like()
        if flags & 0x01:
            self.u64_like()

    def u64_like(self):
        """Unsigned LEB128 of up to 64 bits (memory64 limits); value unused."""
        for _ in range(10):
            if self.byte() & 0x80 == 0:
                return
        raise Malformed(f"LEB128 longer than 10 bytes before offset {self.pos}")

    def import_desc(self):
        kind = self.byte()
        if kind == 0:  # func: type index
            self.u32()
        elif kind == 1:  # table: reftype, limits
            self.valtype()
            self.limits()
        elif kind == 2:  # memory: limits
            self.limits()
        elif kind == 3:  # global: valtype, mutability
            self.valtype()
            self.byte()
        elif kind == 4:  # tag: attribute, type index
            self.byte()
            self.u32()
        else:
            raise Malformed(f"unknown import kind 0x{kind:02x} at offset {self.pos - 1}")
        return KINDS[kind]


def imports(data):
    """Every import of the core module `data`, as (module, name, kind)."""
    if data[:4] != MAGIC:
        raise Malformed("not a wasm binary (no \\0asm magic)")
    if data[4:8] != CORE_VERSION:
        raise Malformed(
            f"not a core wasm module (version/layer bytes {data[4:8].hex()}); "
            "a component must be checked with component tooling"
        )
    r = Reader(data, 8)
    found = []
    while r.pos < r.end:
        section = r.byte()
        size = r.u32()
        body = Reader(data, r.pos, r.pos + size)
        if body.end > len(data):
            raise Malformed(f"section {section} of {size} bytes runs past the end")
        if section == IMPORT_SECTION:
            for _ in range(body.u32()):
                module = body.name()
                name = body.name()
                found.append((module, name, body.import_desc()))
            if body.pos != body.end:
                raise Malformed("import section has trailing bytes")
        r.pos = body.end
    return found


def main(argv):
    deny = []
    args = list(argv)
    files = []
    while args:
        a = args.pop(0)
        if a == "--deny":
            if not args:
                print("--deny needs a module name", file=sys.stderr)
                return 2
            deny.append(args.pop(0))
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            files.append(a)
    if len(files) != 1:
        print("usage: wasm_imports.py [--deny MODULE]... FILE.wasm", file=sys.stderr)
        return 2
    deny = deny or ["env"]
    path = files[0]
    try:
        with open(path, "rb") as f:
            data = f.read()
        found = imports(data)
    except OSError as e:
        print(f"{path}: {e.strerror}", file=sys.stderr)
        return 2
    except Malformed as e:
        print(f"{path}: malformed: {e}", file=sys.stderr)
        return 2
    bad = [(m, n) for m, n, _ in found if m in deny]
    for module, name, kind in found:
        mark = "   <- denied" if module in deny else ""
        print(f"  {module}.{name} ({kind}){mark}")
    modules = sorted({m for m, _, _ in found})
    print(
        f"{path}: {len(found)} import(s)"
        + (f" from {', '.join(modules)}" if modules else "")
        + f"; {len(bad)} from denied module(s) {', '.join(deny)}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
