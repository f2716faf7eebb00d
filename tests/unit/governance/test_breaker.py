"""Circuit breakers on a fake clock, at the exact boundaries of each rule."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
import structlog

from modelyard.clock import FakeClock
from modelyard.errors import Code, ConfigError, EngineError, GovernanceError, ModelServerError
from modelyard.governance.breaker import BreakerGuard, BreakerRule, BreakerState
from modelyard.governance.guard import Call, Degraded, Fallback

FAILED = EngineError("engine onnxruntime failed to run", code=Code.INTERNAL)


def slow_rule(**overrides: object) -> BreakerRule:
    fields: dict[str, object] = {
        "id": "slow-ranker",
        "interface": "infer",
        "kind": "slow_call_ratio",
        "threshold": 0.5,
        "slow_call_ms": 100,
        "window_s": 10,
        "min_requests": 4,
        "recovery_s": 5,
    }
    fields.update(overrides)
    return BreakerRule(**fields)  # type: ignore[arg-type]


def error_rule(**overrides: object) -> BreakerRule:
    fields: dict[str, object] = {
        "id": "errors",
        "interface": "infer",
        "kind": "error_ratio",
        "threshold": 0.5,
        "window_s": 10,
        "min_requests": 4,
        "recovery_s": 5,
    }
    fields.update(overrides)
    return BreakerRule(**fields)  # type: ignore[arg-type]


def make(*rules: BreakerRule) -> tuple[BreakerGuard, FakeClock]:
    clock = FakeClock()
    return BreakerGuard(list(rules), clock, "service.yaml"), clock


def call(model: str | None = "ranker") -> Call:
    return Call(service="svc", interface="infer", model=model, version="1")


def check(guard: BreakerGuard, c: Call) -> None:
    guard.check(c)


def refusal(guard: BreakerGuard, c: Call) -> GovernanceError:
    with pytest.raises(GovernanceError) as caught:
        check(guard, c)
    return caught.value


def feed(guard: BreakerGuard, outcomes: Sequence[tuple[float, BaseException | None]]) -> None:
    for latency, error in outcomes:
        c = call()
        check(guard, c)
        guard.record(c, latency, error)


def state(guard: BreakerGuard) -> BreakerState:
    (breaker,) = guard.breakers()
    return breaker.state


def trip(guard: BreakerGuard) -> None:
    feed(guard, [(0.01, FAILED)] * 4)
    assert state(guard) is BreakerState.OPEN


# -- tripping at the threshold -------------------------------------------------------------


def test_slow_call_ratio_trips_exactly_at_threshold() -> None:
    guard, _ = make(slow_rule())
    feed(guard, [(0.2, None), (0.05, None), (0.3, None)])
    assert state(guard) is BreakerState.CLOSED  # 2 of 3 slow, but under min_requests
    feed(guard, [(0.05, None)])
    assert state(guard) is BreakerState.OPEN  # 2 of 4 = 0.50, min_requests reached


def test_slow_call_ratio_below_threshold_stays_closed() -> None:
    guard, _ = make(slow_rule(threshold=0.75))
    feed(guard, [(0.2, None), (0.2, None), (0.05, None), (0.05, None)])
    assert state(guard) is BreakerState.CLOSED


def test_slow_means_strictly_over_slow_call_ms() -> None:
    guard, _ = make(slow_rule(threshold=0.2))
    feed(guard, [(0.1, None)] * 4)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.101, None)])
    assert state(guard) is BreakerState.OPEN


def test_error_ratio_trips_exactly_at_threshold() -> None:
    guard, _ = make(error_rule(min_requests=5, threshold=0.6))
    feed(guard, [(0.01, FAILED), (0.01, None), (0.01, FAILED), (0.01, None)])
    assert state(guard) is BreakerState.CLOSED  # 2 of 4: under min_requests and threshold
    feed(guard, [(0.01, FAILED)])
    assert state(guard) is BreakerState.OPEN  # 3 of 5 = 0.60


def test_error_ratio_one_call_under_min_requests_stays_closed() -> None:
    guard, _ = make(error_rule(min_requests=5, threshold=0.5))
    feed(guard, [(0.01, FAILED)] * 4)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.01, None)])
    assert state(guard) is BreakerState.OPEN  # the 5th call, a success, reaches min_requests


def test_error_count_trips_exactly_at_threshold() -> None:
    guard, _ = make(error_rule(id="count", kind="error_count", threshold=3, min_requests=3))
    feed(guard, [(0.01, None)] * 10 + [(0.01, FAILED)] * 2)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.01, FAILED)])
    assert state(guard) is BreakerState.OPEN


def test_error_count_respects_min_requests() -> None:
    guard, _ = make(error_rule(id="count", kind="error_count", threshold=2, min_requests=4))
    feed(guard, [(0.01, FAILED)] * 3)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.01, None)])
    assert state(guard) is BreakerState.OPEN


def test_calls_outside_the_window_do_not_count() -> None:
    guard, clock = make(error_rule())
    feed(guard, [(0.01, FAILED)] * 3)
    clock.advance(10.0)  # exactly window_s later: those three have left
    feed(guard, [(0.01, FAILED)] * 3)
    assert state(guard) is BreakerState.CLOSED
    clock.advance(9.0)  # the last three are 9 s old: still in
    feed(guard, [(0.01, FAILED)])
    assert state(guard) is BreakerState.OPEN


def test_one_breaker_per_model_for_a_rule_without_model() -> None:
    guard, _ = make(error_rule())
    trip(guard)
    check(guard, call("scorer"))
    assert [(b.model, b.state) for b in guard.breakers()] == [("ranker", BreakerState.OPEN)]


def test_rule_for_one_model_ignores_the_others() -> None:
    guard, _ = make(error_rule(model="ranker"))
    for _ in range(4):
        c = call("scorer")
        check(guard, c)
        guard.record(c, 0.01, FAILED)
    assert guard.breakers() == []
    trip(guard)


# -- refusing while OPEN -------------------------------------------------------------------


def test_open_refuses_fast_with_the_error_line() -> None:
    guard, clock = make(slow_rule(min_requests=50, threshold=0.5))
    feed(guard, [(0.2, None)] * 31 + [(0.05, None)] * 18)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.05, None)])
    clock.advance(1.8)
    error = refusal(guard, call())
    assert not isinstance(error, Degraded)
    assert error.code is Code.UNAVAILABLE
    assert error.line() == (
        "[governance] request rejected: breaker slow-ranker OPEN for model ranker on interface "
        "infer: slow-call ratio 0.62 over threshold 0.50 (31 of 50 calls over 100 ms in 10 s); "
        "recovers in 3.20s; rule=breaker/slow-ranker; change: breakers.slow-ranker in "
        "service.yaml; retry after 3.20s"
    )
    assert error.retry_after == pytest.approx(3.2)


def test_error_line_names_the_kind_and_reached_threshold() -> None:
    guard, _ = make(error_rule())
    trip(guard)
    error = refusal(guard, call())
    assert "error ratio 1.00 over threshold 0.50 (4 of 4 calls failed in 10 s)" in error.detail
    guard, _ = make(error_rule(id="count", kind="error_count", threshold=4))
    trip(guard)
    error = refusal(guard, call())
    assert "error count 4 at threshold 4 (4 of 4 calls failed in 10 s)" in error.detail


def test_open_with_fallback_raises_degraded() -> None:
    fallback = Fallback(model="ranker-lite", version="3")
    guard, _ = make(error_rule(fallback=fallback))
    trip(guard)
    error = refusal(guard, call())
    assert isinstance(error, Degraded)
    assert error.fallback is fallback
    assert error.rule == "breaker/errors"
    assert error.code is Code.UNAVAILABLE
    (breaker,) = guard.breakers()
    assert (breaker.rejections, breaker.fallbacks) == (1, 1)


# -- HALF_OPEN and the probe ---------------------------------------------------------------


def test_half_open_exactly_at_recovery_admits_one_probe() -> None:
    guard, clock = make(error_rule())
    trip(guard)
    clock.advance(4.999)
    refusal(guard, call())
    clock.advance(0.001)  # exactly recovery_s after the trip
    probe = call()
    check(guard, probe)
    assert state(guard) is BreakerState.HALF_OPEN
    second = refusal(guard, call())
    assert "breaker errors HALF_OPEN" in second.detail
    assert "a probe call is in flight" in second.detail


def test_probe_success_closes_with_fresh_stats() -> None:
    guard, clock = make(error_rule())
    trip(guard)
    clock.advance(5)
    probe = call()
    check(guard, probe)
    guard.record(probe, 0.01, None)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.01, FAILED)] * 3)  # the four failures that tripped it are gone
    assert state(guard) is BreakerState.CLOSED


def test_probe_failure_reopens_for_recovery_s() -> None:
    guard, clock = make(error_rule())
    trip(guard)
    clock.advance(5)
    probe = call()
    check(guard, probe)
    clock.advance(0.5)
    guard.record(probe, 0.5, FAILED)
    assert state(guard) is BreakerState.OPEN
    error = refusal(guard, call())
    assert error.retry_after == pytest.approx(5.0)
    assert "probe call failed" in error.detail
    clock.advance(5)
    check(guard, call())
    assert state(guard) is BreakerState.HALF_OPEN


def test_slow_probe_reopens_a_slow_call_breaker() -> None:
    guard, clock = make(slow_rule())
    feed(guard, [(0.2, None)] * 4)
    clock.advance(5)
    probe = call()
    check(guard, probe)
    guard.record(probe, 0.2, None)
    assert state(guard) is BreakerState.OPEN


def test_probe_that_never_reports_is_replaced_after_recovery_s() -> None:
    guard, clock = make(error_rule())
    trip(guard)
    clock.advance(5)
    lost = call()
    check(guard, lost)
    clock.advance(5)
    probe = call()
    check(guard, probe)
    guard.record(lost, 5.0, None)  # a stale probe decides nothing
    assert state(guard) is BreakerState.HALF_OPEN
    guard.record(probe, 0.01, None)
    assert state(guard) is BreakerState.CLOSED


def test_a_call_refused_by_another_breaker_holds_no_probe() -> None:
    short = error_rule(id="short")
    long = error_rule(id="long", kind="error_count", threshold=4, recovery_s=10)
    guard, clock = make(short, long)
    feed(guard, [(0.01, FAILED)] * 4)
    clock.advance(5)
    error = refusal(guard, call())  # short would probe, long is still OPEN
    assert error.rule == "breaker/long"
    by_rule = {b.rule.id: b for b in guard.breakers()}
    assert by_rule["short"].state is BreakerState.HALF_OPEN
    assert by_rule["short"].probe_started is None
    clock.advance(5)
    probe = call()
    check(guard, probe)
    assert sorted(probe.notes) == ["breaker/long", "breaker/short"]
    guard.record(probe, 0.01, None)
    assert {b.state for b in guard.breakers()} == {BreakerState.CLOSED}


# -- what counts ---------------------------------------------------------------------------


def test_governance_and_client_errors_do_not_count() -> None:
    guard, _ = make(error_rule())
    rate_limited = GovernanceError("request rejected: cluster-qps", code=Code.RESOURCE_EXHAUSTED)
    bad_input = ModelServerError("input x has shape [3]", code=Code.INVALID_ARGUMENT)
    unknown = ModelServerError("unknown model", code=Code.NOT_FOUND)
    feed(guard, [(0.01, rate_limited), (0.01, bad_input), (0.01, unknown)] * 4)
    assert guard.breakers() == []  # nothing counted, nothing created
    feed(guard, [(0.01, FAILED)] * 3 + [(0.01, bad_input)] * 4)
    assert state(guard) is BreakerState.CLOSED
    feed(guard, [(0.01, ValueError("boom"))])
    assert state(guard) is BreakerState.OPEN


def test_unavailable_and_deadline_errors_count() -> None:
    guard, _ = make(error_rule())
    unavailable = ModelServerError("model ranker is unloading", code=Code.UNAVAILABLE)
    late = ModelServerError("deadline of 100 ms exceeded", code=Code.DEADLINE_EXCEEDED)
    feed(guard, [(0.01, unavailable), (0.01, late)] * 2)
    assert state(guard) is BreakerState.OPEN


def test_governance_error_on_the_probe_frees_the_probe() -> None:
    guard, clock = make(error_rule())
    trip(guard)
    clock.advance(5)
    probe = call()
    check(guard, probe)
    guard.record(probe, 0.0, GovernanceError("request rejected", code=Code.RESOURCE_EXHAUSTED))
    assert state(guard) is BreakerState.HALF_OPEN
    check(guard, call())  # the next call may probe


def test_cancelled_call_does_not_count() -> None:
    guard, _ = make(error_rule())
    feed(guard, [(0.01, asyncio.CancelledError())] * 4)
    assert guard.breakers() == []


# -- transitions, logs, config -------------------------------------------------------------


def test_transitions_are_recorded_and_logged() -> None:
    guard, clock = make(error_rule())
    with structlog.testing.capture_logs() as logs:
        trip(guard)
        clock.advance(5)
        probe = call()
        check(guard, probe)
        guard.record(probe, 0.01, None)
    (breaker,) = guard.breakers()
    moves = [(t.from_state, t.to_state) for t in breaker.history]
    assert moves == [
        (BreakerState.CLOSED, BreakerState.OPEN),
        (BreakerState.OPEN, BreakerState.HALF_OPEN),
        (BreakerState.HALF_OPEN, BreakerState.CLOSED),
    ]
    opened = breaker.history[0]
    assert (opened.at, opened.calls, opened.bad) == (1000.0, 4, 4)
    assert breaker.history[1].at == 1005.0
    assert breaker.transition_counts[(BreakerState.CLOSED, BreakerState.OPEN)] == 1
    assert [e["event"] for e in logs] == ["breaker_state_changed"] * 3
    assert logs[0]["log_level"] == "warning"
    assert logs[0]["to_state"] == "open"
    assert logs[0]["rule"] == "breaker/errors"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"kind": "latency"}, "kind"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": 0}, "threshold"),
        ({"kind": "slow_call_ratio"}, "slow_call_ms"),
        ({"min_requests": 0}, "min_requests"),
        ({"recovery_s": 0}, "recovery_s"),
    ],
)
def test_invalid_rules_name_the_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        error_rule(**overrides)
    assert caught.value.where == f"breakers.errors.{field}"


def test_duplicate_rule_ids_are_refused() -> None:
    with pytest.raises(ConfigError, match="errors repeated"):
        make(error_rule(), error_rule())


def test_calls_without_a_model_name_the_interface_only() -> None:
    guard, _ = make(error_rule())
    for _ in range(4):
        c = call(None)
        check(guard, c)
        guard.record(c, 0.01, FAILED)
    error = refusal(guard, call(None))
    assert error.detail.startswith("request rejected: breaker errors OPEN for interface infer: ")
    check(guard, call("ranker"))
