"""The control API's own folding of what instances report."""

from __future__ import annotations

from modelyard.control.api import grouped_rejections


def _event(time: float, rule: str, model: str, instance: str, request_id: str) -> dict[str, object]:
    return {
        "time": time,
        "rule": rule,
        "interface": "infer",
        "model": model,
        "code": 429,
        "instance": instance,
        "request_id": request_id,
    }


def test_rejections_alike_are_one_row_with_their_count_and_newest_request() -> None:
    events = [  # newest first, as the API gathers them
        _event(9.0, "ratelimit/instance-qps", "ranker", "a", "r9"),
        _event(8.0, "breaker/slow", "ranker", "a", "r8"),
        _event(7.0, "ratelimit/instance-qps", "ranker", "b", "r7"),
        _event(6.0, "ratelimit/instance-qps", "scorer", "a", "r6"),
        _event(5.0, "ratelimit/instance-qps", "ranker", "a", "r5"),
    ]
    rows = grouped_rejections(events)
    assert [(r["rule"], r["model"], r["count"]) for r in rows] == [
        ("ratelimit/instance-qps", "ranker", 3),
        ("breaker/slow", "ranker", 1),
        ("ratelimit/instance-qps", "scorer", 1),
    ]
    first = rows[0]
    assert (first["newest"], first["oldest"], first["request_id"]) == (9.0, 5.0, "r9")
    assert first["instances"] == ["a", "b"]
    assert grouped_rejections([]) == []
