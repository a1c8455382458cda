"""The clock as the Python host hands it to engram: a clock in seconds (or
any reading before 2000) raises InvalidInput naming the likely mistake and
writes nothing; a clock stepped back is clamped to the memory's last stamp
and reported in ``stats()["storage_warnings"]``. And a closed memory raises
the engram error type. Run by scripts/test-component with the other host
tests.
"""

from __future__ import annotations

import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host import ClosedError, EngramError, InvalidInput, Memory, MemoryStore  # noqa: E402

T0 = 1_772_445_600_000
MIN = 60_000


class Clock:
    """A clock that moves only when told."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


class ClockTest(unittest.TestCase):
    def test_a_clock_in_seconds_is_refused_naming_the_mistake(self) -> None:
        store = MemoryStore()
        memory = Memory("seconds", store=store, clock=lambda: int(time.time()))
        with self.assertRaises(InvalidInput) as raised:
            memory.add_message("user", "Let's plan the Lisbon offsite.")
        message = str(raised.exception)
        self.assertIn("which is before 2000", message)
        self.assertIn("clocks must return milliseconds since the Unix epoch", message)
        self.assertIn("did you pass seconds?", message)
        self.assertEqual(store.data, {}, "nothing written")
        # The same memory with a clock in ms goes on.
        memory.clock = lambda: int(time.time() * 1000)
        memory.add_message("user", "Let's plan the Lisbon offsite.")
        self.assertEqual(len(memory.messages()), 1)

    def test_any_reading_before_2000_is_refused(self) -> None:
        for reading in (0, 1_000, 946_684_799_999, 1_772_445_600.5):
            with self.subTest(reading=reading):
                memory = Memory("early", clock=lambda r=reading: r)
                with self.assertRaises(InvalidInput) as raised:
                    memory.add_message("user", "Hello.")
                self.assertIn("before 2000", str(raised.exception))

    def test_a_clock_stepped_back_is_clamped_and_reported(self) -> None:
        clock = Clock(T0 + 10 * MIN)
        memory = Memory("back", clock=clock)
        memory.add_message("user", "Hello.")
        self.assertEqual(memory.stats()["storage_warnings"], [])
        clock.ms = T0 + 5 * MIN
        memory.add_message("user", "Hello again.")
        self.assertEqual([m["at"] for m in memory.messages()], [T0 + 10 * MIN, T0 + 10 * MIN])
        warning = memory.stats()["storage_warnings"][-1]
        self.assertTrue(warning.startswith("clock:"), warning)
        self.assertIn(f"{5 * MIN} ms before the memory's last stamp", warning)


class ClosedTest(unittest.TestCase):
    def test_a_closed_memory_raises_the_engram_error_type(self) -> None:
        memory = Memory("closed", clock=Clock(T0))
        memory.add_message("user", "Hello.")
        memory.close()
        for call in (lambda: memory.add_message("user", "Again."), memory.messages, memory.take_degraded):
            with self.assertRaises(ClosedError) as raised:
                call()
            self.assertIsInstance(raised.exception, EngramError)
            self.assertNotIsInstance(raised.exception, RuntimeError)
            self.assertEqual(raised.exception.code, "closed")


if __name__ == "__main__":
    unittest.main()
