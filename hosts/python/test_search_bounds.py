"""A search limit far out of range (1e9) is refused with InvalidInput naming
the range before it reaches an allocation (it trapped the component before),
and the memory goes on."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engram_host import InvalidInput, Memory  # noqa: E402


class SearchBoundsTest(unittest.TestCase):
    def test_a_search_limit_out_of_range_is_refused_with_its_range(self) -> None:
        memory = Memory("bounds", clock=lambda: 1_764_000_000_000)
        memory.add_message("user", "Ana moved to Porto last spring.")
        for limit in (1_000_000_000, 1_001, 0):
            with self.assertRaises(InvalidInput) as caught:
                memory.search("Ana", limit=limit)
            self.assertIn("1..=1000", str(caught.exception))
        self.assertIsInstance(memory.search("Ana", limit=1_000), list)


if __name__ == "__main__":
    unittest.main()
