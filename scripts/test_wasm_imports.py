#!/usr/bin/env python3
"""Tests of the purity guard scripts/wasm_imports.py on hand-built modules.

Each test writes a tiny wasm binary and runs the guard as scripts/test does
(a separate process), checking its exit status and what it lists.
Run: python3 scripts/test_wasm_imports.py
"""

import os
import subprocess
import sys
import tempfile
import unittest

GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wasm_imports.py")
HEADER = b"\0asm\x01\x00\x00\x00"


def leb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def name(s):
    raw = s.encode("utf-8")
    return leb(len(raw)) + raw


def section(sid, body):
    return bytes([sid]) + leb(len(body)) + body


def vec(items):
    return leb(len(items)) + b"".join(items)


FUNC_TYPE = section(1, vec([b"\x60\x00\x00"]))  # one type: [] -> []


def func_import(module, field):
    return name(module) + name(field) + b"\x00" + leb(0)


def module(*imports, extra_sections=b""):
    body = HEADER + FUNC_TYPE + extra_sections
    if imports:
        body += section(2, vec(list(imports)))
    return body


class GuardTest(unittest.TestCase):
    def run_guard(self, data, *args):
        with tempfile.NamedTemporaryFile(suffix=".wasm", delete=False) as f:
            f.write(data)
            path = f.name
        try:
            p = subprocess.run(
                [sys.executable, GUARD, *args, path], capture_output=True, text=True
            )
        finally:
            os.unlink(path)
        return p.returncode, p.stdout, p.stderr

    def test_env_import_fails_and_is_named(self):
        code, out, _ = self.run_guard(module(func_import("env", "abort")))
        self.assertEqual(code, 1)
        self.assertIn("env.abort (func)", out)
        self.assertIn("1 from denied module(s) env", out)

    def test_literal_bytes_of_an_env_import_fail(self):
        # (module (type (func)) (import "env" "f" (func (type 0)))), written
        # out by hand, independent of the builder above.
        data = bytes.fromhex("0061736d01000000" "010401600000" "020901" "03656e76" "0166" "0000")
        code, out, _ = self.run_guard(data)
        self.assertEqual(code, 1)
        self.assertIn("env.f (func)", out)

    def test_other_modules_pass_and_are_listed(self):
        code, out, _ = self.run_guard(
            module(
                func_import("wasi_snapshot_preview1", "fd_write"),
                func_import("__wbindgen_placeholder__", "__wbindgen_describe"),
            )
        )
        self.assertEqual(code, 0, out)
        self.assertIn("wasi_snapshot_preview1.fd_write (func)", out)
        self.assertIn("__wbindgen_placeholder__.__wbindgen_describe (func)", out)
        self.assertIn("2 import(s)", out)

    def test_no_import_section_passes(self):
        code, out, _ = self.run_guard(module())
        self.assertEqual(code, 0)
        self.assertIn("0 import(s)", out)

    def test_every_import_kind_is_parsed_after_a_custom_section(self):
        custom = section(0, name("producers") + b"\x00")
        table = name("host") + name("t") + b"\x01\x70\x00" + leb(1)  # funcref, min 1
        memory = name("env") + name("memory") + b"\x02\x01" + leb(17) + leb(300)  # min, max
        glob = name("host") + name("g") + b"\x03\x7f\x00"  # i32, const
        tag = name("host") + name("exn") + b"\x04\x00" + leb(0)
        data = module(table, memory, glob, tag, func_import("host", "last"), extra_sections=custom)
        code, out, _ = self.run_guard(data)
        self.assertEqual(code, 1)
        lines = [l.strip() for l in out.splitlines()]
        self.assertEqual(
            lines[:5],
            [
                "host.t (table)",
                "env.memory (memory)   <- denied",
                "host.g (global)",
                "host.exn (tag)",
                "host.last (func)",
            ],
        )

    def test_deny_names_another_module(self):
        data = module(func_import("env", "x"), func_import("wasi", "y"))
        code, out, _ = self.run_guard(data, "--deny", "wasi")
        self.assertEqual(code, 1)
        self.assertIn("wasi.y (func)   <- denied", out)
        self.assertNotIn("env.x (func)   <-", out)

    def test_truncated_module_is_malformed(self):
        data = module(func_import("env", "abort"))[:-3]
        code, _, err = self.run_guard(data)
        self.assertEqual(code, 2)
        self.assertIn("malformed", err)

    def test_component_and_non_wasm_are_refused(self):
        code, _, err = self.run_guard(b"\0asm\x0d\x00\x01\x00")
        self.assertEqual(code, 2)
        self.assertIn("not a core wasm module", err)
        code, _, err = self.run_guard(b"#!/bin/sh\n")
        self.assertEqual(code, 2)
        self.assertIn("no \\0asm magic", err)


if __name__ == "__main__":
    unittest.main(verbosity=1)
