"""Adaptive concurrency limits on a fake clock: AIMD and Gradient2, step by step."""

from __future__ import annotations

import asyncio

import pytest

from modelyard.clock import FakeClock
from modelyard.errors import Code, ConfigError, EngineError, GovernanceError, ModelServerError
from modelyard.governance.concurrency import (
    AdaptiveConcurrencyGuard,
    ConcurrencyLimiter,
    ConcurrencyRule,
    Gradient2Limit,
)
from modelyard.governance.guard import Call


def aimd(**overrides: object) -> ConcurrencyRule:
    fields: dict[str, object] = {
        "id": "ranker",
        "initial_limit": 4,
        "min_limit": 2,
        "max_limit": 6,
        "latency_target_ms": 100,
    }
    fields.update(overrides)
    return ConcurrencyRule(**fields)  # type: ignore[arg-type]


def gradient2(**overrides: object) -> ConcurrencyRule:
    fields: dict[str, object] = {
        "id": "ranker",
        "algorithm": "gradient2",
        "initial_limit": 20,
        "min_limit": 1,
        "max_limit": 100,
    }
    fields.update(overrides)
    return ConcurrencyRule(**fields)  # type: ignore[arg-type]


def make(*rules: ConcurrencyRule) -> tuple[AdaptiveConcurrencyGuard, FakeClock]:
    clock = FakeClock()
    return AdaptiveConcurrencyGuard(list(rules), clock, "service.yaml"), clock


def call(model: str = "ranker", version: str | None = "1", interface: str = "infer") -> Call:
    return Call(service="svc", interface=interface, model=model, version=version)


def admit(guard: AdaptiveConcurrencyGuard, n: int = 1, **where: str) -> list[Call]:
    calls = [call(**where) for _ in range(n)]
    for c in calls:
        guard.check(c)
    return calls


def refusal(guard: AdaptiveConcurrencyGuard, **where: str) -> GovernanceError:
    with pytest.raises(GovernanceError) as caught:
        guard.check(call(**where))
    return caught.value


def limiter(guard: AdaptiveConcurrencyGuard) -> ConcurrencyLimiter:
    (only,) = guard.limiters()
    return only


def keep_busy(
    guard: AdaptiveConcurrencyGuard, calls: list[Call], latency: float, times: int
) -> None:
    """Finish the oldest call and start another while the limit allows."""
    for _ in range(times):
        guard.record(calls.pop(0), latency, None)
        if limiter(guard).in_flight < limiter(guard).limit:
            calls.extend(admit(guard))


# -- AIMD ----------------------------------------------------------------------------------


def test_refuses_at_the_limit_with_the_error_line() -> None:
    guard, _ = make(aimd())
    admit(guard, 4)
    error = refusal(guard)
    assert error.code is Code.RESOURCE_EXHAUSTED
    assert error.line() == (
        "[governance] request rejected: 4 calls in flight at concurrency limit 4 for model "
        "ranker version 1 (aimd: initial limit; latency target 100 ms); rule=concurrency/ranker; "
        "change: concurrency.ranker in service.yaml; retry after 0.10s"
    )
    assert limiter(guard).rejections == 1


def test_grows_by_one_after_a_window_of_fast_calls() -> None:
    guard, _ = make(aimd())
    calls = admit(guard, 4)
    keep_busy(guard, calls, 0.1, 3)  # exactly at the target is fast
    assert limiter(guard).limit == 4
    keep_busy(guard, calls, 0.05, 1)  # the 4th fast call: a full window of limit 4
    assert limiter(guard).limit == 5
    calls.extend(admit(guard))
    refusal(guard)
    keep_busy(guard, calls, 0.05, 5)
    assert limiter(guard).limit == 6
    calls.extend(admit(guard))
    assert "grew +1 after 5 calls under the 100 ms target" in refusal(guard).detail


def test_does_not_grow_past_max_limit() -> None:
    guard, _ = make(aimd(initial_limit=6))
    calls = admit(guard, 6)
    keep_busy(guard, calls, 0.05, 30)
    assert limiter(guard).limit == 6


def test_does_not_grow_while_under_half_used() -> None:
    guard, _ = make(aimd())
    calls = admit(guard, 1)
    keep_busy(guard, calls, 0.05, 20)
    assert limiter(guard).limit == 4


def test_backs_off_on_a_slow_call() -> None:
    guard, clock = make(aimd(initial_limit=10, max_limit=20))
    (c,) = admit(guard)
    clock.advance(0.2)
    guard.record(c, 0.2, None)
    assert limiter(guard).limit == 9
    assert limiter(guard).in_flight == 0
    admit(guard, 9)
    error = refusal(guard)
    assert "(aimd: backed off x0.9 after a 200.0 ms call over the 100 ms target)" in error.detail
    assert error.retry_after == pytest.approx(0.2)


def test_backs_off_once_per_flight_of_slow_calls() -> None:
    guard, clock = make(aimd(initial_limit=10, max_limit=20))
    first, second = admit(guard, 2)
    clock.advance(0.2)
    guard.record(first, 0.2, None)
    guard.record(second, 0.2, None)  # it started before the backoff
    assert limiter(guard).limit == 9
    (third,) = admit(guard)
    clock.advance(0.2)
    guard.record(third, 0.2, None)
    assert limiter(guard).limit == 8  # int(9 * 0.9)


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError(),
        ModelServerError("deadline of 50 ms exceeded", code=Code.DEADLINE_EXCEEDED),
        ModelServerError("queue of model ranker is full", code=Code.RESOURCE_EXHAUSTED),
    ],
)
def test_backs_off_on_a_timeout_or_a_full_queue(error: BaseException) -> None:
    guard, _ = make(aimd(initial_limit=5))
    (c,) = admit(guard)
    guard.record(c, 0.01, error)
    assert limiter(guard).limit == 4


def test_backoff_stops_at_min_limit() -> None:
    guard, clock = make(aimd(initial_limit=3))
    for expected in (2, 2):
        (c,) = admit(guard)
        clock.advance(0.5)
        guard.record(c, 0.5, None)
        assert limiter(guard).limit == expected


def test_other_errors_free_the_slot_without_moving_the_limit() -> None:
    guard, _ = make(aimd())
    errors: list[BaseException] = [
        GovernanceError("request rejected: breaker", code=Code.UNAVAILABLE),
        EngineError("engine failed", code=Code.INTERNAL),
        ModelServerError("bad input", code=Code.INVALID_ARGUMENT),
        asyncio.CancelledError(),
    ]
    for error in errors:
        (c,) = admit(guard)
        guard.record(c, 5.0, error)
    assert (limiter(guard).limit, limiter(guard).in_flight) == (4, 0)


def test_record_without_check_changes_nothing() -> None:
    guard, _ = make(aimd())
    calls = admit(guard, 2)
    guard.record(call(), 0.01, None)  # refused by an earlier guard: never counted in
    guard.record(calls[0], 0.01, None)
    guard.record(calls[0], 0.01, None)  # recorded twice: counted out once
    assert limiter(guard).in_flight == 1


def test_one_limiter_per_model_version() -> None:
    guard, _ = make(aimd())
    admit(guard, 4, version="1")
    refusal(guard, version="1")
    admit(guard, 4, version="2")
    admit(guard, 4, model="scorer")
    assert sorted((lim.model, lim.version) for lim in guard.limiters()) == [
        ("ranker", "1"),
        ("ranker", "2"),
        ("scorer", "1"),
    ]


def test_a_rule_for_the_model_wins_over_the_rule_for_every_model() -> None:
    guard, _ = make(aimd(id="every"), aimd(id="ranker-only", model="ranker", initial_limit=2))
    admit(guard, 2)
    assert refusal(guard).rule == "concurrency/ranker-only"
    admit(guard, 4, model="scorer")
    assert refusal(guard, model="scorer").rule == "concurrency/every"


def test_unmatched_calls_pass() -> None:
    guard, _ = make(aimd(model="ranker"))
    admit(guard, 10, model="scorer")
    admit(guard, 10, interface="metadata")
    assert guard.limiters() == []


# -- Gradient2 -----------------------------------------------------------------------------


def test_gradient2_grows_by_queue_size_smoothed_while_latency_is_steady() -> None:
    guard, _ = make(gradient2())
    calls = admit(guard, 15)
    keep_busy(guard, calls, 0.01, 1)
    algorithm = limiter(guard).algorithm
    assert isinstance(algorithm, Gradient2Limit)
    # gradient 1: 20 * 0.8 + (20 * 1 + 4) * 0.2
    assert algorithm.estimate == pytest.approx(20.8)
    assert limiter(guard).limit == 20
    keep_busy(guard, calls, 0.01, 1)
    assert algorithm.estimate == pytest.approx(21.6)
    assert limiter(guard).limit == 21


def test_gradient2_shrinks_when_latency_rises() -> None:
    guard, _ = make(gradient2(max_limit=20))
    calls = admit(guard, 20)
    keep_busy(guard, calls, 0.01, 10)  # warm-up: long-term RTT is the plain average, 10 ms
    algorithm = limiter(guard).algorithm
    assert isinstance(algorithm, Gradient2Limit)
    before = algorithm.estimate
    keep_busy(guard, calls, 0.04, 1)
    long_rtt = 0.01 + (0.04 - 0.01) * 2 / 601
    gradient = max(0.5, 1.5 * long_rtt / 0.04)
    assert gradient == 0.5
    assert algorithm.estimate == pytest.approx(before * 0.8 + (before * 0.5 + 4) * 0.2)
    assert algorithm.estimate < before
    assert "short-term RTT 40.0 ms, gradient 0.50" in algorithm.reason


def test_gradient2_pulls_long_rtt_down_after_an_overload() -> None:
    guard, _ = make(gradient2())
    calls = admit(guard, 10)
    keep_busy(guard, calls, 0.1, 10)
    algorithm = limiter(guard).algorithm
    assert isinstance(algorithm, Gradient2Limit)
    keep_busy(guard, calls, 0.01, 1)
    ema = 0.1 * (1 - 2 / 601) + 0.01 * 2 / 601
    assert algorithm.long_rtt == pytest.approx(ema * 0.95)


def test_gradient2_does_not_move_while_under_half_used() -> None:
    guard, _ = make(gradient2())
    calls = admit(guard, 9)
    keep_busy(guard, calls, 0.01, 5)
    algorithm = limiter(guard).algorithm
    assert isinstance(algorithm, Gradient2Limit)
    assert algorithm.estimate == 20.0


def test_gradient2_respects_bounds() -> None:
    guard, _ = make(gradient2(initial_limit=20, max_limit=21))
    calls = admit(guard, 15)
    keep_busy(guard, calls, 0.01, 50)
    assert limiter(guard).limit == 21
    guard, _ = make(gradient2(initial_limit=4, min_limit=3, max_limit=4, queue_size=0))
    calls = admit(guard, 4)
    keep_busy(guard, calls, 0.001, 10)
    assert limiter(guard).limit == 4
    keep_busy(guard, calls, 1.0, 50)
    assert limiter(guard).limit == 3


def test_gradient2_refuses_at_the_limit() -> None:
    guard, _ = make(gradient2(initial_limit=2))
    admit(guard, 2)
    error = refusal(guard)
    assert error.line() == (
        "[governance] request rejected: 2 calls in flight at concurrency limit 2 for model "
        "ranker version 1 (gradient2: initial limit; no latency samples yet); "
        "rule=concurrency/ranker; change: concurrency.ranker in service.yaml"
    )


# -- config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"algorithm": "vegas"}, "algorithm"),
        ({"initial_limit": 10}, "initial_limit"),
        ({"min_limit": 0}, "initial_limit"),
        ({"latency_target_ms": None}, "latency_target_ms"),
        ({"backoff": 1.0}, "backoff"),
    ],
)
def test_invalid_rules_name_the_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        aimd(**overrides)
    assert caught.value.where == f"concurrency.ranker.{field}"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"tolerance": 0.9}, "tolerance"),
        ({"smoothing": 0}, "smoothing"),
        ({"queue_size": -1}, "queue_size"),
        ({"long_window": 0}, "long_window"),
    ],
)
def test_invalid_gradient2_rules_name_the_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        gradient2(**overrides)
    assert caught.value.where == f"concurrency.ranker.{field}"


def test_duplicate_rule_ids_are_refused() -> None:
    with pytest.raises(ConfigError, match="ranker repeated"):
        make(aimd(), gradient2())
