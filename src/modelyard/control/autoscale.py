"""Autoscaling evaluation per group, Knative-style (KPA) on in-flight load.

Every observation is the group's total in-flight requests. Two windows average
it: the stable window (default 60 s) and the panic window (default 6 s).

    stable desire = ceil(stable average / target in-flight per instance)
    panic desire  = ceil(panic average / target)

When the panic desire reaches ``panic_threshold`` times the current replicas the
group panics for one stable window: it scales up to the panic desire and never
down. Otherwise it follows the stable desire. The result is clamped at
decision time by min / max replicas and by the instances the group's quota
can still hold; each decision records the constraint that bound it, which
``modelyard platform autoscale explain`` prints.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from modelyard.clock import SYSTEM_CLOCK, Clock


@dataclass(frozen=True, slots=True)
class AutoscaleRule:
    min_replicas: int = 1
    max_replicas: int = 10
    target_in_flight: float = 8.0
    stable_window_s: float = 60.0
    panic_window_s: float = 6.0
    panic_threshold: float = 2.0


@dataclass(frozen=True, slots=True)
class Decision:
    at: float
    current: int
    desired: int  # before clamping
    replicas: int  # after clamping
    mode: str  # "stable" | "panic"
    bound_by: str  # "stable" | "panic" | "min_replicas" | "max_replicas" | "quota" | "no data"
    stable_average: float
    panic_average: float

    def explain(self, at: bool = True) -> str:
        """One sentence; ``at=False`` leaves out the clock reading (a process's monotonic time)."""
        return (
            (f"t={self.at:.1f}s " if at else "")
            + f"{self.mode}: in-flight avg {self.stable_average:.1f} (stable) / "
            f"{self.panic_average:.1f} (panic) → want {self.desired}, set {self.replicas} "
            f"(from {self.current}; bound by {self.bound_by})"
        )


@dataclass(slots=True)
class Autoscaler:
    rule: AutoscaleRule
    clock: Clock = SYSTEM_CLOCK
    _samples: deque[tuple[float, float]] = field(default_factory=deque)
    _panic_until: float = float("-inf")
    decisions: deque[Decision] = field(default_factory=lambda: deque(maxlen=1000))

    def observe(self, in_flight: float) -> None:
        now = self.clock.monotonic()
        self._samples.append((now, in_flight))
        horizon = now - self.rule.stable_window_s
        while self._samples and self._samples[0][0] < horizon:
            self._samples.popleft()

    def peak(self) -> float | None:
        """The highest observation of the stable window (None before any)."""
        return max((value for _, value in self._samples), default=None)

    def _average(self, window: float, now: float) -> float | None:
        values = [v for t, v in self._samples if t >= now - window]
        return sum(values) / len(values) if values else None

    def decide(self, current: int, quota_max: int | None = None) -> Decision:
        """The replica count for now; ``quota_max``: instances the quota can hold."""
        rule = self.rule
        now = self.clock.monotonic()
        stable = self._average(rule.stable_window_s, now)
        panic = self._average(rule.panic_window_s, now)
        if stable is None or panic is None:
            decision = Decision(now, current, current, current, "stable", "no data", 0.0, 0.0)
            self.decisions.append(decision)
            return decision
        want_stable = math.ceil(stable / rule.target_in_flight)
        want_panic = math.ceil(panic / rule.target_in_flight)
        if current > 0 and want_panic >= rule.panic_threshold * current:
            self._panic_until = now + rule.stable_window_s
        if now < self._panic_until:
            mode, desired, bound = "panic", max(want_panic, current), "panic"
        else:
            mode, desired, bound = "stable", want_stable, "stable"
        replicas = desired
        if replicas > rule.max_replicas:
            replicas, bound = rule.max_replicas, "max_replicas"
        if quota_max is not None and replicas > quota_max:
            replicas, bound = max(quota_max, 0), "quota"
        if replicas < rule.min_replicas:
            replicas, bound = rule.min_replicas, "min_replicas"
        decision = Decision(now, current, desired, replicas, mode, bound, stable, panic)
        self.decisions.append(decision)
        return decision
