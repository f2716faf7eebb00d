"""Circuit breakers: stop calling a model that keeps failing or crawling.

One ``CircuitBreaker`` per (rule, model) moves through three states:

    CLOSED ──window reaches threshold, with ≥ min_requests calls──▶ OPEN
    OPEN ──recovery_s elapsed (seen by the next call)──▶ HALF_OPEN
    HALF_OPEN ──its one probe call succeeds──▶ CLOSED, with fresh stats
    HALF_OPEN ──the probe fails (or is slow, for slow_call_ratio)──▶ OPEN
    HALF_OPEN ──no word from the probe for recovery_s──▶ the next call probes

OPEN, and HALF_OPEN while the probe is out, refuse at once with UNAVAILABLE, or
raise ``Degraded`` when the rule names a fallback. Rule kinds are Sentinel's
(slow_call_ratio, error_ratio, error_count), but a rule trips when the value
reaches the threshold, not only when it passes it. Stats live in a sliding
window of ten buckets on the injected clock, so a call leaves the window between
0.9 * window_s and window_s after it was recorded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Literal

import structlog

from modelyard.clock import Clock
from modelyard.errors import Code, ConfigError, GovernanceError, ModelyardError
from modelyard.governance.guard import Call, Degraded, Fallback, rejected, require_unique_ids

log = structlog.get_logger("modelyard.governance")

BreakerKind = Literal["slow_call_ratio", "error_ratio", "error_count"]
KINDS: tuple[str, ...] = ("slow_call_ratio", "error_ratio", "error_count")
BREAKER_RULES = "breaker/"  # a breaker's rule id: this and the rule's own id
FAILURE_CODES = frozenset({Code.INTERNAL, Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED})
BUCKETS = 10
HISTORY = 64  # transitions kept per breaker


class BreakerState(Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakerRule:
    # how the schema layer names it in errors (rule_checks._typed_rule)
    noun: ClassVar[str] = "breaker rule"

    id: str
    interface: str
    model: str | None = None  # None: every model of the interface, one breaker each
    kind: BreakerKind
    threshold: float  # a ratio in (0, 1], or an error count for error_count
    slow_call_ms: float | None = None  # slow_call_ratio only: slower than this is slow
    window_s: float = 10.0
    min_requests: int = 5
    recovery_s: float = 5.0
    fallback: Fallback | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            self._invalid("kind", f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind == "error_count":
            if self.threshold < 1:
                self._invalid("threshold", f"error count threshold {self.threshold:g} is below 1")
        elif not 0 < self.threshold <= 1:
            self._invalid("threshold", f"ratio threshold {self.threshold:g} is not in (0, 1]")
        if self.kind == "slow_call_ratio" and (self.slow_call_ms is None or self.slow_call_ms <= 0):
            self._invalid("slow_call_ms", "slow_call_ratio needs slow_call_ms > 0")
        if self.window_s <= 0:
            self._invalid("window_s", f"window_s {self.window_s:g} is not positive")
        if self.min_requests < 1:
            self._invalid("min_requests", f"min_requests {self.min_requests} is below 1")
        if self.recovery_s <= 0:
            self._invalid("recovery_s", f"recovery_s {self.recovery_s:g} is not positive")

    def _invalid(self, field: str, detail: str) -> None:
        raise ConfigError(
            f"invalid breaker rule {self.id}: {detail}",
            code=Code.INVALID_ARGUMENT,
            rule=f"{BREAKER_RULES}{self.id}",
            where=f"breakers.{self.id}.{field}",
        )


@dataclass(frozen=True, slots=True)
class Transition:
    """One state change, with the window's numbers when it happened."""

    rule: str
    interface: str
    model: str | None
    from_state: BreakerState
    to_state: BreakerState
    at: float
    reason: str
    calls: int
    bad: int  # failed calls, or slow calls for slow_call_ratio


class SlidingWindow:
    """Calls and bad calls over the last window, in buckets keyed by clock nanoseconds."""

    __slots__ = ("_bad", "_bucket_ns", "_calls", "_stamps")

    def __init__(self, window_s: float, buckets: int = BUCKETS) -> None:
        self._bucket_ns = max(1, round(window_s * 1e9 / buckets))
        self._stamps = [-1] * buckets
        self._calls = [0] * buckets
        self._bad = [0] * buckets

    def add(self, now_ns: int, bad: bool) -> None:
        index = now_ns // self._bucket_ns
        slot = index % len(self._stamps)
        if self._stamps[slot] != index:
            self._stamps[slot] = index
            self._calls[slot] = 0
            self._bad[slot] = 0
        self._calls[slot] += 1
        self._bad[slot] += bad

    def totals(self, now_ns: int) -> tuple[int, int]:
        oldest = now_ns // self._bucket_ns - len(self._stamps) + 1
        calls = bad = 0
        for slot, stamp in enumerate(self._stamps):
            if stamp >= oldest:
                calls += self._calls[slot]
                bad += self._bad[slot]
        return calls, bad

    def clear(self) -> None:
        self._stamps = [-1] * len(self._stamps)


class CircuitBreaker:
    """The state of one rule for one (interface, model)."""

    def __init__(self, rule: BreakerRule, model: str | None) -> None:
        self.rule = rule
        self.interface = rule.interface
        self.model = model
        self.state = BreakerState.CLOSED
        self.window = SlidingWindow(rule.window_s)
        self.opened_at = 0.0
        self.tripped_on = ""  # the window's numbers when it last tripped
        self.trip_reason = ""  # why it is OPEN now
        self._slow_ms = rule.slow_call_ms or 0.0
        self.probe_token = 0
        self.probe_started: float | None = None
        self.history: deque[Transition] = deque(maxlen=HISTORY)
        self.transition_counts: dict[tuple[BreakerState, BreakerState], int] = {}
        self.rejections = 0  # every refused call
        self.fallbacks = 0  # the refused calls answered with the rule's fallback
        self.note_key = f"{BREAKER_RULES}{rule.id}"

    @property
    def changed_at(self) -> float | None:
        """Clock time of the last state change; None while it has been CLOSED since creation."""
        return self.history[-1].at if self.history else None

    def admits(self, now: float) -> bool | None:
        """True: admit; None: admit as the probe; False: refuse."""
        if self.state is BreakerState.CLOSED:
            return True
        if self.state is BreakerState.OPEN:
            if now < self.opened_at + self.rule.recovery_s:
                return False
            self._move(BreakerState.HALF_OPEN, now, f"recovery {self.rule.recovery_s:g} s elapsed")
        # A probe that never reported (its call was dropped) must not hold HALF_OPEN forever.
        if self.probe_started is None or now >= self.probe_started + self.rule.recovery_s:
            return None
        return False

    def take_probe(self, now: float) -> int:
        self.probe_token += 1
        self.probe_started = now
        return self.probe_token

    def on_result(self, now: float, latency: float, failed: bool | None, probe: int | None) -> None:
        """Feed one outcome; failed is None when it says nothing of the model."""
        rule = self.rule
        slow = latency * 1000 > self._slow_ms
        bad = slow if rule.kind == "slow_call_ratio" else bool(failed)
        if self.state is BreakerState.HALF_OPEN:
            if probe is None or probe != self.probe_token:
                return
            self.probe_started = None
            if failed is None:
                return
            if failed or bad:
                what = "failed" if failed else f"took {latency * 1000:.0f} ms"
                self.trip_reason = f"probe call {what}, first opened on {self.tripped_on}"
                self.opened_at = now
                self._move(BreakerState.OPEN, now, self.trip_reason, 1, 1)
            else:
                self.window.clear()
                self._move(BreakerState.CLOSED, now, "probe call succeeded", 1, 0)
            return
        if self.state is BreakerState.OPEN or failed is None:
            return
        now_ns = round(now * 1e9)
        self.window.add(now_ns, bad)
        calls, bads = self.window.totals(now_ns)
        if calls < rule.min_requests:
            return
        value = bads if rule.kind == "error_count" else bads / calls
        if value >= rule.threshold:
            self.tripped_on = self.trip_reason = self._reason(value, calls, bads)
            self.opened_at = now
            self._move(BreakerState.OPEN, now, self.trip_reason, calls, bads)

    def refusal(self, now: float, service_file: str) -> GovernanceError:
        rule = self.rule
        where = f"model {self.model} on interface {self.interface}"
        if self.model is None:
            where = f"interface {self.interface}"
        if self.state is BreakerState.OPEN:
            wait = self.opened_at + rule.recovery_s - now
            detail = f"{self.trip_reason}; recovers in {wait:.2f}s"
        else:
            started = now if self.probe_started is None else self.probe_started
            wait = started + rule.recovery_s - now
            detail = (
                f"a probe call is in flight, opened on {self.tripped_on}; next probe in {wait:.2f}s"
            )
        return rejected(
            f"breaker {rule.id} {self.state.name} for {where}: {detail}",
            code=Code.UNAVAILABLE,
            rule=f"{BREAKER_RULES}{rule.id}",
            where=f"breakers.{rule.id} in {service_file}",
            retry_after=max(wait, 0.0),
        )

    def _reason(self, value: float, calls: int, bads: int) -> str:
        rule = self.rule
        reached = "over" if value > rule.threshold else "at"
        window = f"in {rule.window_s:g} s"
        if rule.kind == "slow_call_ratio":
            return (
                f"slow-call ratio {value:.2f} {reached} threshold {rule.threshold:.2f} "
                f"({bads} of {calls} calls over {rule.slow_call_ms:g} ms {window})"
            )
        if rule.kind == "error_ratio":
            return (
                f"error ratio {value:.2f} {reached} threshold {rule.threshold:.2f} "
                f"({bads} of {calls} calls failed {window})"
            )
        return (
            f"error count {bads} {reached} threshold {rule.threshold:g} "
            f"({bads} of {calls} calls failed {window})"
        )

    def _move(
        self, to: BreakerState, now: float, reason: str, calls: int = 0, bad: int = 0
    ) -> None:
        before = self.state
        self.state = to
        pair = (before, to)
        self.transition_counts[pair] = self.transition_counts.get(pair, 0) + 1
        self.history.append(
            Transition(
                self.rule.id, self.interface, self.model, before, to, now, reason, calls, bad
            )
        )
        emit = log.warning if to is BreakerState.OPEN else log.info
        emit(
            "breaker_state_changed",
            rule=f"{BREAKER_RULES}{self.rule.id}",
            interface=self.interface,
            model=self.model,
            from_state=before.value,
            to_state=to.value,
            reason=reason,
            calls=calls,
            bad=bad,
        )


def failure(error: BaseException | None) -> bool | None:
    """True: the model failed; False: it answered; None: the outcome says nothing of it."""
    if error is None:
        return False
    if isinstance(error, GovernanceError):
        return None
    if isinstance(error, ModelyardError):
        return True if error.code in FAILURE_CODES else None
    if isinstance(error, Exception):
        return True
    return None  # CancelledError and the like: the caller left, the model did not fail


class BreakerGuard:
    """Guard: refuse calls to (interface, model) pairs whose breaker is not CLOSED."""

    def __init__(self, rules: list[BreakerRule], clock: Clock, service_file: str) -> None:
        require_unique_ids([rule.id for rule in rules], "breakers", service_file)
        self.rules = list(rules)
        self._clock = clock
        self._service_file = service_file
        # Filled by record() from outcomes that count, so unknown model names cost nothing.
        self._by_key: dict[tuple[str, str | None], tuple[CircuitBreaker, ...]] = {}

    def check(self, call: Call) -> None:
        breakers = self._by_key.get((call.interface, call.model))
        if breakers is None:
            return
        for breaker in breakers:
            if breaker.state is not BreakerState.CLOSED:
                self._check_not_closed(call, breakers)
                return

    def _check_not_closed(self, call: Call, breakers: tuple[CircuitBreaker, ...]) -> None:
        now = self._clock.monotonic()
        probes: list[CircuitBreaker] = []
        for breaker in breakers:
            verdict = breaker.admits(now)
            if verdict is False:
                raise self._refuse(breaker, now)
            if verdict is None:
                probes.append(breaker)
        # Probes are taken only once every breaker admitted, so a refused call holds none.
        for breaker in probes:
            call.notes[breaker.note_key] = breaker.take_probe(now)

    def _refuse(self, breaker: CircuitBreaker, now: float) -> GovernanceError:
        breaker.rejections += 1
        error = breaker.refusal(now, self._service_file)
        if breaker.rule.fallback is None:
            return error
        breaker.fallbacks += 1
        return Degraded(error, breaker.rule.fallback)

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        failed = failure(error)
        key = (call.interface, call.model)
        breakers = self._by_key.get(key)
        if breakers is None:
            if failed is None:
                return
            breakers = self._by_key[key] = tuple(
                CircuitBreaker(rule, call.model)
                for rule in self.rules
                if rule.interface == call.interface and rule.model in (None, call.model)
            )
        if not breakers:
            return
        now = self._clock.monotonic()
        for breaker in breakers:
            breaker.on_result(now, latency, failed, call.notes.get(breaker.note_key))

    def breakers(self) -> list[CircuitBreaker]:
        """Every breaker created so far, for metrics: state, transition_counts, rejections."""
        return [breaker for breakers in self._by_key.values() for breaker in breakers]
