"""The only place modelyard reads time; tests inject ``FakeClock``."""

from __future__ import annotations

import time


class Clock:
    """Real time. The readings are the C functions themselves, with no Python frame
    around them: a request reads the clock several times."""

    monotonic = staticmethod(time.monotonic)
    monotonic_ns = staticmethod(time.monotonic_ns)
    wall = staticmethod(time.time)


class FakeClock(Clock):
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def monotonic_ns(self) -> int:
        return int(self.now * 1e9)

    def wall(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


SYSTEM_CLOCK = Clock()
