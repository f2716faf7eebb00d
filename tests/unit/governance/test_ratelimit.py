"""Instance rate limiting on a fake clock: exact refill, burst, reserves, spill, error line."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from modelyard.clock import FakeClock
from modelyard.errors import Code, ConfigError, GovernanceError
from modelyard.governance.chain import strategy_of
from modelyard.governance.guard import Call
from modelyard.governance.ratelimit import (
    InstanceQpsGuard,
    LimitShares,
    QpsLimit,
    RateWindow,
    SharedLimit,
    TokenBucket,
    limit_key,
    qps_limits,
)

START = 1000.0


def at(clock: FakeClock, ms: int) -> None:
    """Set the clock to START + ms, computed from integers so errors don't add up."""
    clock.now = START + ms / 1000


def assert_never_over(times: list[float], limit: float, burst: float) -> None:
    """Admissions in every window [s, s + w] stay within limit x w + burst."""
    times = sorted(times)
    for width in (0.001, 0.01, 0.1, 1.0, 3.0):
        end = 0
        for start, t0 in enumerate(times):
            while end < len(times) and times[end] <= t0 + width:
                end += 1
            assert end - start <= limit * width + burst + 1e-6, (t0, width, end - start)


# -- TokenBucket ---------------------------------------------------------------------


def test_bucket_refills_to_the_microsecond() -> None:
    clock = FakeClock(START)
    bucket = TokenBucket(rate=10, capacity=1, clock=clock)
    assert bucket.try_take()
    assert not bucket.try_take()
    assert bucket.wait_time() == pytest.approx(0.1)

    clock.advance(0.099_999)
    assert bucket.wait_time() == pytest.approx(1e-6, abs=1e-9)
    assert not bucket.try_take()
    clock.advance(0.000_001)
    assert bucket.wait_time() == 0.0
    assert bucket.try_take()
    assert not bucket.try_take()


def test_bucket_burst_is_its_capacity() -> None:
    clock = FakeClock(START)
    bucket = TokenBucket(rate=100, capacity=50, clock=clock)
    assert sum(bucket.try_take() for _ in range(80)) == 50
    clock.advance(10.0)  # a long idle time still leaves one burst, not 1000 tokens
    assert sum(bucket.try_take() for _ in range(80)) == 50
    clock.advance(0.05)
    assert sum(bucket.try_take() for _ in range(80)) == 5


def test_bucket_spill_and_waits() -> None:
    clock = FakeClock(START)
    bucket = TokenBucket(rate=1, capacity=4, clock=clock, tokens=1)
    assert bucket.add(2.5) == 0.0
    assert bucket.add(1.0) == pytest.approx(0.5)  # what did not fit comes back
    assert bucket.tokens == 4
    assert bucket.wait_time(5) == float("inf")  # more than it can ever hold
    assert bucket.try_take(4)
    assert bucket.wait_time(2) == pytest.approx(2.0)


# -- SharedLimit ---------------------------------------------------------------------


def run_schedule(
    limit: SharedLimit,
    clock: FakeClock,
    seconds: int,
    offered: dict[str, int],
    start_ms: int = 0,
) -> tuple[dict[str, int], dict[str, int], list[float]]:
    """Offer each model ``offered[m]`` calls/s, evenly spaced on a 1 ms grid."""
    admitted = dict.fromkeys(offered, 0)
    refused = dict.fromkeys(offered, 0)
    times: list[float] = []
    for ms in range(start_ms, start_ms + seconds * 1000):
        at(clock, ms)
        for model, qps in offered.items():
            # calls due in this millisecond, so that any rate fits the grid exactly
            due = (ms - start_ms + 1) * qps // 1000 - (ms - start_ms) * qps // 1000
            for _ in range(due):
                if limit.try_take(model):
                    admitted[model] += 1
                    times.append(clock.now)
                else:
                    refused[model] += 1
    return admitted, refused, times


def test_busy_model_cannot_take_a_steady_models_reserve() -> None:
    clock = FakeClock(START)
    limit = SharedLimit(LimitShares.of(100, reserved={"a": 40, "b": 40}), clock)  # pool 20/s
    admitted, refused, times = run_schedule(limit, clock, 10, {"a": 200, "b": 40})

    assert refused["b"] == 0
    assert admitted["b"] == 400
    # a: its reserve and the pool, each a full burst to start with, then 40 + 20 per second
    assert admitted["a"] == pytest.approx(40 + 20 + 60 * 10, abs=2)
    assert_never_over(times, limit=100, burst=100)


def test_idle_models_reserve_spills_to_the_others() -> None:
    clock = FakeClock(START)
    limit = SharedLimit(LimitShares.of(100, reserved={"a": 40, "b": 40}), clock)
    admitted, refused, times = run_schedule(limit, clock, 5, {"a": 500})
    # a gets its reserve, the pool, and b's reserve as it overflows: the whole limit
    assert admitted["a"] == pytest.approx(60 + 100 * 5, abs=2)
    assert refused["a"] > 0
    assert_never_over(times, limit=100, burst=100)


def test_fully_reserved_limit_still_lends_to_models_without_a_reserve() -> None:
    clock = FakeClock(START)
    limit = SharedLimit(LimitShares.of(100, reserved={"a": 50, "b": 50}), clock)
    assert limit.shares.pool_rate == 0
    admitted, _, times = run_schedule(limit, clock, 4, {"c": 300})
    assert admitted["c"] == pytest.approx(1 + 100 * 4, abs=2)
    assert_never_over(times, limit=100, burst=100)


def test_never_more_than_limit_times_window_plus_burst() -> None:
    clock = FakeClock(START)
    limit = SharedLimit(LimitShares.of(100, 0.5, {"a": 30, "b": 20}), clock)
    rng = random.Random(7)
    models = ["a", "b", "c", None]
    times: list[float] = []
    ms = 0
    for _ in range(20_000):
        ms += rng.choice((0, 0, 0, 1, 2, 5, 40))  # clumps, gaps and idle stretches
        at(clock, ms)
        if limit.try_take(rng.choice(models)):
            times.append(clock.now)
    assert len(times) > 0.5 * 100 * ms / 1000
    assert_never_over(times, limit=100, burst=50)


def test_wait_time_counts_reserve_pool_and_spill() -> None:
    clock = FakeClock(START)
    limit = SharedLimit(LimitShares.of(100, reserved={"a": 40, "b": 40}), clock)
    while limit.try_take("a"):
        pass
    # a refills at 40, the pool at 20, plus b's 40 while b's reserve is full
    assert limit.wait_time("a") == pytest.approx(1 / 100)
    while limit.try_take("b"):
        pass
    assert limit.wait_time("a") == pytest.approx(1 / 60)
    assert limit.wait_time(None) == pytest.approx(1 / 20)


def test_reserves_over_the_limit_are_refused_with_the_numbers() -> None:
    clock = FakeClock(START)
    limits = {"infer": QpsLimit(100, reserved_qps={"ranker": 80, "scorer": 40})}
    with pytest.raises(ConfigError) as info:
        InstanceQpsGuard(limits, clock, "service.yaml")
    line = info.value.line()
    assert "reserved_qps adds up to 120/s (ranker 80/s + scorer 40/s)" in line
    assert "instance_qps of interface infer (100/s)" in line
    assert "change: limits.infer.instance_qps in service.yaml" in line


@pytest.mark.parametrize(
    ("qps", "burst", "reserved", "words"),
    [
        (0, 1.0, {}, "needs qps > 0"),
        (10, 0.0, {}, "burst_seconds > 0"),
        (0.5, 1.0, {}, "less than one"),
        (10, 1.0, {"a": 0}, "reserved_qps for model a must be > 0"),
    ],
)
def test_invalid_limits_are_config_errors(
    qps: float, burst: float, reserved: dict[str, float], words: str
) -> None:
    with pytest.raises(ConfigError, match=words):
        LimitShares.of(qps, burst, reserved)


def test_a_share_of_a_limit_keeps_its_split() -> None:
    shares = LimitShares.of(200, 1.0, {"a": 80}).scaled(1 / 4)
    assert (shares.limit, shares.reserved["a"], shares.pool_rate) == (50, 20, 30)
    tiny = LimitShares.of(3, 1.0).scaled(1 / 4)  # 0.75/s: its burst still holds one call
    assert tiny.total_capacity >= 1


def test_a_new_split_keeps_how_full_the_limit_was_and_grants_no_fresh_burst() -> None:
    clock = FakeClock(START)
    whole = LimitShares.of(40, 1.0, {"a": 10})
    limit = SharedLimit(whole.scaled(1 / 2), clock)
    while limit.try_take(None):
        pass
    while limit.try_take("a"):
        pass
    emptied = limit.reshared(whole)  # the count of live instances went from 2 to 1
    assert emptied.shares.limit == 40
    assert emptied.tokens_left() == pytest.approx(0.0, abs=1e-9)
    at(clock, 250)  # a quarter second at the new rate, nothing more
    taken = 0
    while emptied.try_take("a"):  # a takes its reserve and the pool
        taken += 1
    assert taken == 10
    half = SharedLimit(whole, clock).reshared(whole.scaled(1 / 2))  # full stays full
    assert half.tokens_left() == pytest.approx(half.shares.total_capacity)


def test_limits_section_of_the_service_file() -> None:
    section: dict[str, dict[str, Any]] = {
        "infer": {
            "instance_qps": 500,
            "cluster_qps": 1000,
            "burst_seconds": 2,
            "models": {"ranker": {"reserved_qps": 400}},
        },
        "metadata": {"cluster_qps": 50},
    }
    assert qps_limits(section, "instance_qps") == {"infer": QpsLimit(500, 2, {"ranker": 400})}
    assert qps_limits(section, "cluster_qps") == {
        "infer": QpsLimit(1000, 2, {"ranker": 400}),
        "metadata": QpsLimit(50),
    }


# -- observed rate and the guard -----------------------------------------------------


def test_rate_window_interpolates_two_seconds() -> None:
    window = RateWindow(START)
    for _ in range(100):
        window.hit(START + 0.2)
    assert window.rate(START + 0.9) == 100
    window.hit(START + 1.5)
    assert window.rate(START + 1.5) == pytest.approx(100 * 0.5 + 1)
    assert window.rate(START + 2.25) == pytest.approx(1 * 0.75)
    assert window.rate(START + 9.0) == 0


def check(guard: InstanceQpsGuard, call: Call) -> Callable[[], None]:
    def run() -> None:
        guard.check(call)

    return run


def test_refusal_line_names_rate_limit_rule_and_where() -> None:
    clock = FakeClock(START)
    guard = InstanceQpsGuard(
        {"infer": QpsLimit(100, reserved_qps={"ranker": 40})}, clock, "service.yaml"
    )
    call = Call(service="shop", interface="infer", model="ranker")

    errors = []
    for _ in range(131):
        try:
            guard.check(call)
        except GovernanceError as exc:
            errors.append(exc)
    assert guard.admitted == 100
    assert guard.rejected == {"ratelimit/instance-qps": 31}
    last = errors[-1]
    assert last.code is Code.RESOURCE_EXHAUSTED
    assert last.rule == "ratelimit/instance-qps"
    assert last.where == "limits.infer.instance_qps in service.yaml"
    assert last.retry_after == pytest.approx(0.01)
    assert last.line() == (
        "[governance] request rejected: instance-qps 131/s over limit 100/s for interface infer "
        "(model ranker, reserved 40/s) (strategy: instance-qps, code: 429, "
        "msg: the current limit has been reached); rule=ratelimit/instance-qps; "
        "change: limits.infer.instance_qps in service.yaml; retry after 0.01s"
    )

    clock.advance(0.01)
    check(guard, call)()  # one token back after exactly retry_after


def test_a_rate_limit_rule_names_the_limit_it_enforces() -> None:
    """Rate-limit headers and `explain` find the limit behind a refusal by its rule id."""
    assert limit_key("ratelimit/instance-qps") == "instance_qps"
    assert limit_key("ratelimit/cluster-qps") == "cluster_qps"
    assert limit_key("breaker/slow-ranker") is None
    assert limit_key(None) is None
    assert strategy_of("ratelimit/cluster-qps") == "cluster-qps"
    assert strategy_of("breaker/slow-ranker") == "breaker"


def test_guard_leaves_unlimited_interfaces_alone() -> None:
    clock = FakeClock(START)
    guard = InstanceQpsGuard({"infer": QpsLimit(1)}, clock)
    for _ in range(10):
        check(guard, Call(service="shop", interface="health"))()
    check(guard, Call(service="shop", interface="infer", model="m"))()
    with pytest.raises(GovernanceError, match="model m\\) \\(strategy: instance-qps, code: 429"):
        check(guard, Call(service="shop", interface="infer", model="m"))()
