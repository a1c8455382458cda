#!/usr/bin/env python3
"""Takes the core module out of a WebAssembly component, or puts one back.

    python3 scripts/component_core.py extract COMPONENT CORE.wasm
    python3 scripts/component_core.py replace COMPONENT CORE.wasm OUT

The component that `cargo build --target wasm32-wasip2` links holds one
large core module (the crate) beside small adapter modules; `extract`
writes the largest. `replace` writes the component with that module's
bytes swapped for CORE.wasm's: valid when CORE.wasm has the same imports
and exports (what wasm-opt keeps), since the component refers to the module
by its index and to its items by name. scripts/build-component uses it to
run wasm-opt over the crate's code (wasm-opt does not read components).
"""

import sys
from pathlib import Path

COMPONENT_HEADER = b"\x00asm\x0d\x00\x01\x00"
CORE_MODULE_SECTION = 1


def leb(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def put_leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def largest_module(data: bytes) -> tuple[int, int, int]:
    """(section start, payload start, payload end) of the largest core module."""
    if data[:8] != COMPONENT_HEADER:
        sys.exit("not a WebAssembly component")
    best = None
    i = 8
    while i < len(data):
        start = i
        section = data[i]
        size, i = leb(data, i + 1)
        if section == CORE_MODULE_SECTION and (best is None or size > best[2] - best[1]):
            best = (start, i, i + size)
        i += size
    if best is None:
        sys.exit("the component holds no core module")
    return best


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "extract":
        data = Path(args[1]).read_bytes()
        _, a, b = largest_module(data)
        Path(args[2]).write_bytes(data[a:b])
    elif len(args) == 4 and args[0] == "replace":
        data = Path(args[1]).read_bytes()
        start, _, end = largest_module(data)
        core = Path(args[2]).read_bytes()
        out = data[:start] + bytes([CORE_MODULE_SECTION]) + put_leb(len(core)) + core + data[end:]
        Path(args[3]).write_bytes(out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
