"""Adaptive concurrency limits: learn how many calls a model version can run at once.

Opt-in, one ``ConcurrencyLimiter`` per (model, version). ``check`` refuses a
call when the calls in flight have reached the limit (RESOURCE_EXHAUSTED, never
queued), else counts it in flight; ``record`` counts it out and moves the limit
from its latency:

    aimd       +1 once a window of `limit` calls finished under latency_target_ms;
               * backoff on a call over the target, a timeout or a full queue,
               at most once per flight of calls
    gradient2  Netflix concurrency-limits' Gradient2: gradient = tolerance *
               long-term RTT / short-term RTT, clamped to [0.5, 1];
               limit = limit * gradient + queue_size, smoothed

The limit stays within [min_limit, max_limit] and does not grow while fewer
than half of it is in use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from modelyard.clock import Clock
from modelyard.errors import Code, ConfigError, GovernanceError, ModelServerError, ModelyardError
from modelyard.governance.guard import Call, rejected, require_unique_ids

Algorithm = Literal["aimd", "gradient2"]
ALGORITHMS: tuple[str, ...] = ("aimd", "gradient2")
CONCURRENCY_RULES = "concurrency/"  # a limit's rule id: this and the rule's own id
NOTE = "concurrency"  # call.notes key: (limiter, clock seconds when admitted)
MAX_LIMITERS = 4096  # past this, idle limiters of unknown (model, version) pairs are dropped


@dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyRule:
    # how the schema layer names it in errors (rule_checks._typed_rule)
    noun: ClassVar[str] = "concurrency rule"

    id: str
    model: str | None = None  # None: every model, one limiter per (model, version)
    interface: str = "infer"
    algorithm: Algorithm = "aimd"
    initial_limit: int = 20
    min_limit: int = 1
    max_limit: int = 200
    latency_target_ms: float | None = None  # aimd: calls slower than this back off
    backoff: float = 0.9  # aimd
    tolerance: float = 1.5  # gradient2: how much latency growth counts as no queueing
    smoothing: float = 0.2  # gradient2
    queue_size: int = 4  # gradient2
    long_window: int = 600  # gradient2: samples in the long-term RTT average

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            self._invalid("algorithm", f"algorithm {self.algorithm!r} is not aimd or gradient2")
        if not 1 <= self.min_limit <= self.initial_limit <= self.max_limit:
            self._invalid(
                "initial_limit",
                f"limits must satisfy 1 <= min_limit {self.min_limit} <= initial_limit "
                f"{self.initial_limit} <= max_limit {self.max_limit}",
            )
        if self.algorithm == "aimd":
            if self.latency_target_ms is None or self.latency_target_ms <= 0:
                self._invalid("latency_target_ms", "aimd needs latency_target_ms > 0")
            if not 0 < self.backoff < 1:
                self._invalid("backoff", f"backoff {self.backoff:g} is not in (0, 1)")
        else:
            if self.tolerance < 1:
                self._invalid("tolerance", f"tolerance {self.tolerance:g} is below 1")
            if not 0 < self.smoothing <= 1:
                self._invalid("smoothing", f"smoothing {self.smoothing:g} is not in (0, 1]")
            if self.queue_size < 0:
                self._invalid("queue_size", f"queue_size {self.queue_size} is negative")
            if self.long_window < 1:
                self._invalid("long_window", f"long_window {self.long_window} is below 1")

    def _invalid(self, field: str, detail: str) -> None:
        raise ConfigError(
            f"invalid concurrency rule {self.id}: {detail}",
            code=Code.INVALID_ARGUMENT,
            rule=f"{CONCURRENCY_RULES}{self.id}",
            where=f"concurrency.{self.id}.{field}",
        )


class AimdLimit:
    """Additive increase per window of fast calls, multiplicative decrease per slow flight."""

    def __init__(self, rule: ConcurrencyRule) -> None:
        self.rule = rule
        self.limit = rule.initial_limit
        self.target_s = (rule.latency_target_ms or 0.0) / 1000
        self.successes = 0
        self.last_backoff_at = float("-inf")
        self.reason = f"initial limit; latency target {rule.latency_target_ms:g} ms"

    def update(
        self, latency: float, in_flight: int, started: float, now: float, overloaded: bool
    ) -> None:
        rule = self.rule
        target_ms = rule.latency_target_ms
        if overloaded or latency > self.target_s:
            # Calls already in flight at the last backoff were slowed by the old limit.
            if started < self.last_backoff_at:
                return
            self.limit = max(rule.min_limit, int(self.limit * rule.backoff))
            self.successes = 0
            self.last_backoff_at = now
            why = f"a {latency * 1000:.1f} ms call over the {target_ms:g} ms target"
            if overloaded:
                why = "a call that timed out or found the model's queue full"
            self.reason = f"backed off x{rule.backoff:g} after {why}"
            return
        if in_flight * 2 < self.limit:
            return
        self.successes += 1
        if self.successes < self.limit:
            return
        if self.limit < rule.max_limit:
            self.reason = f"grew +1 after {self.successes} calls under the {target_ms:g} ms target"
            self.limit += 1
        self.successes = 0


class Gradient2Limit:
    """Netflix concurrency-limits' Gradient2, fed one latency sample per call."""

    def __init__(self, rule: ConcurrencyRule) -> None:
        self.rule = rule
        self.estimate = float(rule.initial_limit)
        self.limit = rule.initial_limit
        self.long_rtt = 0.0
        self.samples = 0
        self.reason = "initial limit; no latency samples yet"

    def update(
        self, latency: float, in_flight: int, started: float, now: float, overloaded: bool
    ) -> None:
        rule = self.rule
        short_rtt = max(latency, 1e-6)
        long_rtt = self._add_long(short_rtt)
        # After a long overload, pull the long-term RTT down instead of waiting for the average.
        if long_rtt / short_rtt > 2:
            self.long_rtt *= 0.95
        if in_flight < self.estimate / 2:
            return
        gradient = max(0.5, min(1.0, rule.tolerance * long_rtt / short_rtt))
        target = self.estimate * gradient + rule.queue_size
        estimate = self.estimate * (1 - rule.smoothing) + target * rule.smoothing
        self.estimate = max(float(rule.min_limit), min(float(rule.max_limit), estimate))
        self.limit = int(self.estimate)
        self.reason = (
            f"long-term RTT {long_rtt * 1000:.1f} ms, short-term RTT {short_rtt * 1000:.1f} ms, "
            f"gradient {gradient:.2f}"
        )

    def _add_long(self, rtt: float) -> float:
        warmup = min(10, self.rule.long_window)
        if self.samples < warmup:
            self.samples += 1
            self.long_rtt += (rtt - self.long_rtt) / self.samples
        else:
            factor = 2 / (self.rule.long_window + 1)
            self.long_rtt = self.long_rtt * (1 - factor) + rtt * factor
        return self.long_rtt


class ConcurrencyLimiter:
    """Calls in flight and the adaptive limit of one (model, version)."""

    def __init__(self, rule: ConcurrencyRule, model: str | None, version: str | None) -> None:
        self.rule = rule
        self.model = model
        self.version = version
        self.in_flight = 0
        self.rejections = 0
        self.last_latency: float | None = None
        self.algorithm: AimdLimit | Gradient2Limit = (
            AimdLimit(rule) if rule.algorithm == "aimd" else Gradient2Limit(rule)
        )

    @property
    def limit(self) -> int:
        return self.algorithm.limit

    def finish(
        self, latency: float, error: BaseException | None, started: float, now: float
    ) -> None:
        overloaded = overload(error)
        if overloaded is not None:
            self.last_latency = latency
            self.algorithm.update(latency, self.in_flight, started, now, overloaded)
        self.in_flight -= 1

    def refusal(self, service_file: str) -> GovernanceError:
        rule = self.rule
        target = (
            f"model {self.model}"
            if self.version is None
            else (f"model {self.model} version {self.version}")
        )
        retry_after = self.last_latency
        if retry_after is None and isinstance(self.algorithm, AimdLimit):
            retry_after = self.algorithm.target_s
        return rejected(
            f"{self.in_flight} calls in flight at concurrency limit {self.limit} for {target} "
            f"({rule.algorithm}: {self.algorithm.reason})",
            code=Code.RESOURCE_EXHAUSTED,
            rule=f"{CONCURRENCY_RULES}{rule.id}",
            where=f"concurrency.{rule.id} in {service_file}",
            retry_after=retry_after,
        )


def overload(error: BaseException | None) -> bool | None:
    """False: a normal sample; True: the model was overloaded; None: no sample."""
    if error is None:
        return False
    if isinstance(error, TimeoutError):
        return True
    if isinstance(error, GovernanceError) or not isinstance(error, ModelyardError):
        return None
    if error.code is Code.DEADLINE_EXCEEDED:
        return True
    if isinstance(error, ModelServerError) and error.code is Code.RESOURCE_EXHAUSTED:
        return True  # the model's queue was full
    return None


class AdaptiveConcurrencyGuard:
    """Guard: refuse calls to a model version whose calls in flight reached its limit.

    The chain must call ``record`` for every call this guard admitted, including
    calls a later guard refused, or the slot it holds is never given back.
    """

    def __init__(self, rules: list[ConcurrencyRule], clock: Clock, service_file: str) -> None:
        require_unique_ids([rule.id for rule in rules], "concurrency", service_file)
        self.rules = list(rules)
        self._clock = clock
        self._service_file = service_file
        self._limiters: dict[tuple[str, str | None, str | None], ConcurrencyLimiter | None] = {}

    def check(self, call: Call) -> None:
        key = (call.interface, call.model, call.version)
        try:
            limiter = self._limiters[key]
        except KeyError:
            limiter = self._new_limiter(key)
        if limiter is None:
            return
        if limiter.in_flight >= limiter.limit:
            limiter.rejections += 1
            raise limiter.refusal(self._service_file)
        limiter.in_flight += 1
        call.notes[NOTE] = (limiter, self._clock.monotonic())

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        admitted = call.notes.pop(NOTE, None)
        if admitted is None:
            return
        limiter, started = admitted
        limiter.finish(latency, error, started, self._clock.monotonic())

    def limiters(self) -> list[ConcurrencyLimiter]:
        """Every limiter so far, for metrics: limit, in_flight, rejections."""
        return [limiter for limiter in self._limiters.values() if limiter is not None]

    def _new_limiter(self, key: tuple[str, str | None, str | None]) -> ConcurrencyLimiter | None:
        interface, model, version = key
        matching = [r for r in self.rules if r.interface == interface and r.model == model]
        matching = matching or [
            r for r in self.rules if r.interface == interface and r.model is None
        ]
        limiter = ConcurrencyLimiter(matching[0], model, version) if matching else None
        if len(self._limiters) >= MAX_LIMITERS:
            # Model names come from callers; keep the map bounded without losing calls in flight.
            self._limiters = {
                k: v for k, v in self._limiters.items() if v is not None and v.in_flight > 0
            }
        self._limiters[key] = limiter
        return limiter
