"""Autoscaler decisions on a recorded load trace, driven by a fake clock."""

from __future__ import annotations

from modelyard.clock import FakeClock
from modelyard.control.autoscale import Autoscaler, AutoscaleRule

RULE = AutoscaleRule(
    min_replicas=1,
    max_replicas=10,
    target_in_flight=10,
    stable_window_s=60,
    panic_window_s=6,
    panic_threshold=2.0,
)


def run_trace(trace: list[float], start: int, quota_max: int | None = None) -> list[int]:
    """One observation per second; a decision every 2 s; returns the replicas chosen."""
    clock = FakeClock(0.0)
    scaler = Autoscaler(RULE, clock)
    replicas = start
    chosen = []
    for second, in_flight in enumerate(trace):
        clock.advance(1.0)
        scaler.observe(in_flight)
        if second % 2 == 1:
            replicas = scaler.decide(replicas, quota_max).replicas
            chosen.append(replicas)
    return chosen


def test_steady_load_settles_at_load_over_target() -> None:
    assert run_trace([40.0] * 120, start=1)[-1] == 4


def test_a_spike_panics_up_fast_and_never_scales_down_while_panicking() -> None:
    trace = [20.0] * 70 + [200.0] * 10 + [20.0] * 20
    chosen = run_trace(trace, start=2)
    at_spike = chosen[35:40]  # decisions during the spike
    assert max(at_spike) >= 10  # the panic window sees 200 in flight within seconds
    after = chosen[40:50]
    assert all(r >= max(at_spike) for r in after)  # panic mode holds, no scale-down


def test_bounds_and_quota_clamp_and_say_which_bound() -> None:
    clock = FakeClock(0.0)
    scaler = Autoscaler(RULE, clock)
    for _ in range(60):
        clock.advance(1.0)
        scaler.observe(500.0)
    over = scaler.decide(10)
    assert (over.desired, over.replicas, over.bound_by) == (50, 10, "max_replicas")
    quota = scaler.decide(10, quota_max=6)
    assert (quota.replicas, quota.bound_by) == (6, "quota")
    assert "bound by quota" in quota.explain()
    idle = Autoscaler(RULE, clock)
    clock.advance(1.0)
    idle.observe(0.0)
    low = idle.decide(3)
    assert (low.replicas, low.bound_by) == (1, "min_replicas")


def test_no_data_keeps_the_current_count() -> None:
    decision = Autoscaler(RULE, FakeClock(0.0)).decide(3)
    assert (decision.replicas, decision.bound_by) == (3, "no data")
