"""Refused requests' warning lines are bounded per rule and second; the rest are counted."""

from __future__ import annotations

from typing import Any

from modelyard.refusal_log import RefusalLog


class _Lines:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


def test_a_rule_writes_its_first_lines_of_a_second_and_then_how_many_it_left_out() -> None:
    now = [100.0]
    refusals, logger = RefusalLog(per_second=3, clock=lambda: now[0]), _Lines()
    for n in range(10):
        refusals.warning(logger, "request_failed", rule="protocol/json", n=n)
    refusals.warning(logger, "request_failed", rule="protocol/shape", n=99)  # its own count
    assert [f["n"] for _, f in logger.lines] == [0, 1, 2, 99]
    now[0] += 1.5
    refusals.warning(logger, "request_failed", rule="protocol/json", n=10)
    events = [(e, f.get("rule"), f.get("left_out"), f.get("n")) for e, f in logger.lines[4:]]
    assert events == [
        ("refusals_left_out", "protocol/json", 7, None),
        ("request_failed", "protocol/json", None, 10),
    ]
    assert "7 more refusals of rule protocol/json" in logger.lines[4][1]["detail"]


def test_a_second_that_passed_is_said_even_when_its_rule_does_not_come_again() -> None:
    now = [0.0]
    refusals, logger = RefusalLog(per_second=1, clock=lambda: now[0]), _Lines()
    for _ in range(5):
        refusals.warning(logger, "rpc_failed", rule="protocol/a")
    now[0] = 2.0
    refusals.warning(logger, "rpc_failed", rule="protocol/b")
    said = [(event, f["rule"], f.get("left_out")) for event, f in logger.lines]
    assert said == [
        ("rpc_failed", "protocol/a", None),
        ("refusals_left_out", "protocol/a", 4),
        ("rpc_failed", "protocol/b", None),
    ]


def test_a_flood_that_stops_is_said_by_the_timer_its_first_left_out_line_started() -> None:
    now = [50.0]
    timers: list[tuple[float, Any]] = []
    refusals = RefusalLog(
        per_second=2, clock=lambda: now[0], later=lambda delay, run: timers.append((delay, run))
    )
    logger = _Lines()
    for _ in range(6):
        refusals.warning(logger, "request_failed", rule="protocol/json")
        now[0] += 0.1
    assert len(timers) == 1 and 0.4 < timers[0][0] <= 1.01  # to the end of the second
    timers[0][1]()  # too early (a timer may be): nothing ended yet
    assert [event for event, _ in logger.lines] == ["request_failed"] * 2
    now[0] = 51.02
    timers[0][1]()
    assert logger.lines[-1][0] == "refusals_left_out" and logger.lines[-1][1]["left_out"] == 4
    refusals.warning(logger, "request_failed", rule="protocol/json")  # a new second
    assert [event for event, _ in logger.lines].count("refusals_left_out") == 1  # said once
