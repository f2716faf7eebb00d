"""Refused requests' warning lines, bounded: at most ``PER_SECOND`` lines a second for
each rule; the rest are counted, and one line says how many of a rule's were left out once
its second has passed: at the next refusal, or, when none comes, from a timer started as
the rule first left a line out (so a flood that stops is still said).

A caller that sends malformed requests as fast as it can would otherwise choose how much
the server writes (Triton's HTTP fuzzing, 80,420 requests, wrote 41 MB of warnings). The
metrics and the governance counters still count every refusal; the log keeps the first
ones of each second, which say what fired and where to change it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

PER_SECOND = 10  # lines a rule may write in a second
MAX_RULES = 1024  # rules tracked at once (rules are the server's, a config's at most)


def _timer(delay: float, run: Callable[[], None]) -> None:
    timer = threading.Timer(delay, run)
    timer.daemon = True
    timer.start()


class RefusalLog:
    def __init__(
        self,
        per_second: int = PER_SECOND,
        clock: Callable[[], float] = time.monotonic,
        later: Callable[[float, Callable[[], None]], None] = _timer,
    ) -> None:
        self.per_second = per_second
        self._clock = clock
        self._later = later  # later(delay_s, run): the timer that says a second's count
        self._lock = threading.Lock()
        # rule -> [when its second began, lines written in it, lines left out]
        self._seconds: dict[str, list[float]] = {}
        self._swept = clock()

    def warning(self, logger: Any, event: str, **fields: Any) -> None:
        """``logger.warning(event, **fields)`` unless the rule of ``fields`` has written
        its lines this second."""
        rule = str(fields.get("rule") or "")
        now = self._clock()
        with self._lock:
            ended = self._sweep(now) if now - self._swept >= 1.0 else []
            second = self._seconds.get(rule)
            if second is not None and now - second[0] >= 1.0:  # its second has passed
                del self._seconds[rule]
                ended += [(rule, int(second[2]))] if second[2] else []
                second = None
            if second is None:
                if len(self._seconds) >= MAX_RULES:
                    ended += self._sweep(now, everything=True)
                second = self._seconds[rule] = [now, 0, 0]
            write = second[1] < self.per_second
            second[1 if write else 2] += 1
            first_left_out = not write and second[2] == 1
        if first_left_out:
            self._later(max(second[0] + 1.0 - now, 0.0) + 0.01, lambda: self._said(logger))
        self._say(logger, ended)
        if write:
            logger.warning(event, **fields)

    def _said(self, logger: Any) -> None:
        """The counts of the seconds that have passed, when no refusal came after them."""
        with self._lock:
            ended = self._sweep(self._clock())
        self._say(logger, ended)

    def _say(self, logger: Any, ended: list[tuple[str, int]]) -> None:
        for rule, left_out in ended:
            logger.warning(
                "refusals_left_out", rule=rule, left_out=left_out,
                detail=f"{left_out} more refusals of rule {rule} in one second were "
                f"not written (at most {self.per_second} a second)",
            )  # fmt: skip

    def _sweep(self, now: float, everything: bool = False) -> list[tuple[str, int]]:
        """End the seconds that have passed (all of them: ``everything``); the rules that
        left lines out, and how many."""
        self._swept = now
        ended = [rule for rule, s in self._seconds.items() if everything or now - s[0] >= 1.0]
        left_out = [(rule, int(self._seconds[rule][2])) for rule in ended]
        for rule in ended:
            del self._seconds[rule]
        return [(rule, n) for rule, n in left_out if n]


REFUSALS = RefusalLog()
