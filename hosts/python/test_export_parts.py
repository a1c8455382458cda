"""Export and import in parts: ``export_parts`` joins to ``export`` as it
stood when it began (a message added half-way is not in it), ``export_to``
writes a file part by part, ``import_from`` reads it back in small pieces
(cut inside UTF-8 characters) into an empty memory with the same messages,
a source that fails half-way leaves the memory empty, and a cursor from
before an erasure raises InvalidInput."""

from __future__ import annotations

import asyncio
import io
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import AsyncMemory, InvalidInput, Memory, MemoryStore  # noqa: E402

CONFIG = {"ceiling_tokens": 200}


class Clock:
    def __init__(self) -> None:
        self.now = 1_764_000_000_000

    def __call__(self) -> int:
        self.now += 60_000
        return self.now


def converse(memory: Memory, turns: int) -> None:
    for i in range(turns):
        memory.add_message("user", f"Turn {i}: the café in Zürich opens at {7 + i % 5} — naïve façade, 東京 too.")
        memory.add_message("assistant", f"Noted, point {i}.")


def said(memory: Memory) -> list:
    return [(m["id"], m["role"], m["content"]) for m in memory.messages()]


class ExportPartsTest(unittest.TestCase):
    def test_parts_join_to_the_export_as_it_began_and_a_file_round_trips(self) -> None:
        memory = Memory("parts", config=CONFIG, clock=Clock())
        converse(memory, 25)
        whole = memory.export()
        parts = []
        for part in memory.export_parts(1024):
            parts.append(part)
            if len(parts) == 2:
                memory.add_message("user", "added while exporting")
        self.assertGreater(len(parts), 5, f"{len(whole)} bytes in {len(parts)} parts")
        self.assertEqual("".join(parts), whole)
        with self.assertRaises(InvalidInput):
            list(memory.export_parts(-1))

        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "export.json"
            with open(path, "wb") as out:
                written = memory.export_to(out, 4096)
            self.assertEqual(written, path.stat().st_size)
            with open(path, "w", encoding="utf-8") as out:
                self.assertEqual(memory.export_to(out), written)
            self.assertEqual(path.read_text(encoding="utf-8"), memory.export())
            copy = Memory("parts", store=MemoryStore(), config=CONFIG, clock=Clock())
            # 7 bytes at a time: pieces end inside multi-byte characters.
            with open(path, "rb") as f:
                copy.import_from(f, 7)
            self.assertEqual(said(copy), said(memory))
            self.assertEqual(copy.export(), memory.export())
            again = Memory("parts", store=MemoryStore(), config=CONFIG, clock=Clock())
            with open(path, encoding="utf-8") as f:
                again.import_from(f, 1000)
            self.assertEqual(said(again), said(memory))

    def test_a_failing_source_changes_nothing_and_a_stale_cursor_is_refused(self) -> None:
        memory = Memory("parts", config=CONFIG, clock=Clock())
        converse(memory, 15)
        whole = memory.export()

        def failing() -> Iterator[bytes]:
            yield whole[:500].encode()
            raise OSError("disk gone")

        store = MemoryStore()
        copy = Memory("parts", store=store, config=CONFIG, clock=Clock())
        with self.assertRaisesRegex(OSError, "disk gone"):
            copy.import_from(failing())
        with self.assertRaises(InvalidInput):
            copy.import_from([whole[:100], 42])
        with self.assertRaises(InvalidInput):
            copy.import_from([b"\xff\xfe"])
        # Bytes cut inside a character, then text: not one export.
        data = whole.encode()
        cut = data.index("é".encode()) + 1
        with self.assertRaises(InvalidInput):
            copy.import_from([data[:cut], whole[len(data[:cut - 1].decode()) + 1:]])
        # A byte-order mark at the start is dropped, as a JS TextDecoder does.
        bom = Memory("parts", store=MemoryStore(), config=CONFIG, clock=Clock())
        bom.import_from([b"\xef\xbb\xbf" + data])
        self.assertEqual(said(bom), said(memory))
        self.assertEqual(store.data, {}, "a failed import wrote")
        copy.import_from(io.StringIO(whole))
        self.assertEqual(said(copy), said(memory))
        with self.assertRaises(InvalidInput):
            copy.import_from([whole])

        parts = memory.export_parts(1024)
        next(parts)
        memory.erase("message", 3)
        with self.assertRaisesRegex(InvalidInput, "erasure"):
            next(parts)

    def test_async_memory_exports_to_a_file_and_imports_it(self) -> None:
        async def run() -> None:
            memory = await AsyncMemory.open("parts", config=CONFIG, clock=Clock())
            for i in range(10):
                await memory.add_message("user", f"Turn {i}: the café opens at {7 + i % 5}.")
            whole = await memory.export()
            out = io.BytesIO()
            self.assertEqual(await memory.export_to(out, 1024), len(whole.encode()))
            self.assertEqual(out.getvalue().decode(), whole)
            copy = await AsyncMemory.open("parts", store=MemoryStore(), config=CONFIG, clock=Clock())
            await copy.import_from(io.BytesIO(out.getvalue()), 100)
            self.assertEqual(await copy.export(), whole)
            again = await AsyncMemory.open("parts", store=MemoryStore(), config=CONFIG, clock=Clock())
            await again.import_(whole)
            self.assertEqual(await again.export(), whole)

        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
