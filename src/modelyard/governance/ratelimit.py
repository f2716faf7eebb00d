"""Instance rate limiting: token buckets, and one interface limit shared by models.

``TokenBucket`` refills continuously at ``rate`` up to ``capacity`` on the
injected clock. ``SharedLimit`` is one interface limit of L calls/s with
optional per-model reserves r_m (sum r_m <= L): each reserved model has its own
bucket refilled at r_m; the pool refills at L - sum r_m plus whatever overflows
from full reserve buckets, so an idle model's reserve is lent to the others
while a busy model can never take another model's reserve. A call takes from
its model's reserve first, then from the pool. All buckets together hold at
most L x burst_seconds tokens and gain at most L per second, so over any window
t at most L x t + burst calls are admitted.

``InstanceQpsGuard`` is the ``instance-qps`` guard: one ``SharedLimit`` per
interface on this instance.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelyard.clock import Clock
from modelyard.errors import Code, ConfigError, GovernanceError
from modelyard.governance.guard import Call, Quick, rejected

# Tokens; absorbs float error so that a token due at time t is there at t.
_SLACK = 1e-9

CLASSIC_MESSAGE = "the current limit has been reached"

RATE_LIMIT_RULES = "ratelimit/"  # the family every rate-limit rule id belongs to
INSTANCE_QPS_RULE = "ratelimit/instance-qps"
CLUSTER_QPS_RULE = "ratelimit/cluster-qps"


# the rule ids that enforce a key under ``limits.<interface>``
LIMIT_KEYS = {INSTANCE_QPS_RULE: "instance_qps", CLUSTER_QPS_RULE: "cluster_qps"}


def limit_key(rule: str | None) -> str | None:
    """The key under ``limits.<interface>`` that a rate-limit rule id enforces, or None."""
    if not (rule or "").startswith(RATE_LIMIT_RULES):
        return None
    return "cluster_qps" if rule == CLUSTER_QPS_RULE else "instance_qps"


@dataclass(frozen=True, slots=True)
class QpsLimit:
    """One interface's limit, as the service file states it."""

    qps: float
    burst_seconds: float = 1.0
    reserved_qps: Mapping[str, float] = field(default_factory=dict)


def qps_limits(limits: Mapping[str, Mapping[str, Any]], key: str) -> dict[str, QpsLimit]:
    """``QpsLimit`` per interface from the service file's ``limits`` section.

    ``key`` is ``instance_qps`` or ``cluster_qps``; ``burst_seconds`` and
    ``models.<model>.reserved_qps`` apply to whichever limit is asked for.
    """
    out: dict[str, QpsLimit] = {}
    for interface, spec in limits.items():
        if key in spec:
            models = spec.get("models") or {}
            reserved = {model: float(share["reserved_qps"]) for model, share in models.items()}
            burst = float(spec.get("burst_seconds", 1.0))
            out[interface] = QpsLimit(float(spec[key]), burst, reserved)
    return out


class TokenBucket:
    """``capacity`` tokens at most, refilled at ``rate`` tokens per second."""

    __slots__ = ("_clock", "_updated", "capacity", "rate", "tokens")

    def __init__(
        self, rate: float, capacity: float, clock: Clock, *, tokens: float | None = None
    ) -> None:
        if rate < 0 or capacity < 0:
            raise ValueError(
                f"a token bucket needs rate >= 0 and capacity >= 0, got {rate}, {capacity}"
            )
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity if tokens is None else tokens
        self._clock = clock
        self._updated = clock.monotonic()

    def refill(self, now: float | None = None) -> float:
        """Bring the bucket up to ``now``; returns the tokens that overflowed it."""
        if now is None:
            now = self._clock.monotonic()
        elapsed = now - self._updated
        if elapsed > 0:
            self._updated = now
            self.tokens += elapsed * self.rate
        over = self.tokens - self.capacity
        if over > 0:
            self.tokens = self.capacity
            return over
        return 0.0

    def add(self, tokens: float) -> float:
        """Pour in spilled tokens; returns the part that did not fit."""
        self.tokens += tokens
        over = self.tokens - self.capacity
        if over > 0:
            self.tokens = self.capacity
            return over
        return 0.0

    def try_take(self, n: float = 1.0) -> bool:
        self.refill()
        if self.tokens + _SLACK >= n:
            self.tokens -= n
            return True
        return False

    def wait_time(self, n: float = 1.0) -> float:
        """Seconds until ``n`` tokens are there (inf if they never can be)."""
        self.refill()
        deficit = n - self.tokens
        if deficit <= _SLACK:
            return 0.0
        if self.rate <= 0 or n > self.capacity + _SLACK:
            return math.inf
        return deficit / self.rate


@dataclass(frozen=True, slots=True)
class LimitShares:
    """How one limit splits into reserve buckets and the pool (rates and capacities)."""

    limit: float
    burst_seconds: float
    reserved: Mapping[str, float]  # model -> reserved calls/s
    reserve_capacity: Mapping[str, float]  # model -> reserve bucket capacity, tokens
    pool_rate: float
    total_capacity: float  # limit x burst_seconds: all buckets together

    @classmethod
    def of(
        cls,
        limit: float,
        burst_seconds: float = 1.0,
        reserved: Mapping[str, float] | None = None,
        *,
        subject: str = "the limit",
        rule: str = "ratelimit/config",
        where: str | None = None,
    ) -> LimitShares:
        reserved = dict(reserved or {})

        def invalid(detail: str) -> ConfigError:
            return ConfigError(detail, code=Code.INVALID_ARGUMENT, rule=rule, where=where)

        if not (0 < limit < math.inf and 0 < burst_seconds < math.inf):
            raise invalid(
                f"{subject} needs qps > 0 and burst_seconds > 0, "
                f"got {_num(limit)}/s and {_num(burst_seconds)}s"
            )
        total = limit * burst_seconds
        if total < 1.0:
            raise invalid(
                f"{subject} {_num(limit)}/s with burst_seconds {_num(burst_seconds)} holds "
                f"{_num(total)} calls, less than one; raise qps or burst_seconds"
            )
        for model, qps in reserved.items():
            if not 0 < qps < math.inf:
                raise invalid(f"reserved_qps for model {model} must be > 0, got {_num(qps)}")
        reserved_sum = sum(reserved.values())
        if reserved_sum > limit * (1 + 1e-12):
            parts = " + ".join(f"{model} {_num(qps)}/s" for model, qps in reserved.items())
            raise invalid(
                f"reserved_qps adds up to {_num(reserved_sum)}/s ({parts}), "
                f"more than {subject} ({_num(limit)}/s)"
            )
        pool_rate = max(0.0, limit - reserved_sum)
        scale = 1.0
        if reserved_sum > 0 and pool_rate * burst_seconds < 1.0:
            # Reserves cover (almost) the whole limit: shrink their burst by one call so
            # the pool can always hold a spilled token for models without a reserve.
            scale = (total - 1.0) / (reserved_sum * burst_seconds)
        capacity = {model: qps * burst_seconds * scale for model, qps in reserved.items()}
        return cls(limit, burst_seconds, reserved, capacity, pool_rate, total)

    def scaled(self, factor: float) -> LimitShares:
        """The same split for ``limit x factor`` (a share of a cluster limit)."""
        reserved = {model: qps * factor for model, qps in self.reserved.items()}
        limit = self.limit * factor
        burst = max(self.burst_seconds, 1.0 / limit)  # a share still holds one call
        return LimitShares.of(limit, burst, reserved)


class SharedLimit:
    """One limit shared by models (split by ``LimitShares.of``), with per-model reserves that
    spill into a pool."""

    __slots__ = ("_clock", "_pool", "_reserve_list", "_reserves", "_updated", "shares")

    def __init__(self, shares: LimitShares, clock: Clock) -> None:
        self.shares = shares
        self._clock = clock
        self._reserves = {
            model: TokenBucket(qps, shares.reserve_capacity[model], clock)
            for model, qps in shares.reserved.items()
        }
        self._reserve_list = tuple(self._reserves.values())
        held = sum(bucket.tokens for bucket in self._reserve_list)
        self._pool = TokenBucket(shares.pool_rate, shares.total_capacity - held, clock)
        self._updated = clock.monotonic()

    def reshared(self, shares: LimitShares) -> SharedLimit:
        """This limit split anew as ``shares``, each bucket as full, in proportion, as this
        one's together: a new split must never hand out a fresh burst."""
        now = self._clock.monotonic()
        self._refill(now)
        capacity = self.shares.total_capacity
        fraction = min(1.0, self.tokens_left() / capacity) if capacity > 0 else 0.0
        limit = SharedLimit(shares, self._clock)
        for bucket in (*limit._reserve_list, limit._pool):
            bucket.tokens *= fraction
        return limit

    def reserved_qps(self, model: str | None) -> float:
        return self.shares.reserved.get(model, 0.0) if model is not None else 0.0

    def _refill(self, now: float) -> None:
        if now <= self._updated:
            return
        self._updated = now
        spill = 0.0
        held = 0.0
        for bucket in self._reserve_list:
            spill += bucket.refill(now)
            held += bucket.tokens
        pool = self._pool
        # The pool holds what the reserves do not, so all buckets stay within one burst.
        pool.capacity = self.shares.total_capacity - held
        pool.refill(now)
        pool.add(spill)

    def try_take(
        self, model: str | None, n: float = 1.0, now: float | None = None, keep: float = 0.0
    ) -> bool:
        """Take ``n`` tokens for ``model`` if ``n + keep`` are there (``keep`` stay)."""
        self._refill(self._clock.monotonic() if now is None else now)
        pool = self._pool
        reserve = self._reserves.get(model) if model is not None else None
        if reserve is None:
            if pool.tokens + _SLACK >= n + keep:
                pool.tokens -= n
                return True
            return False
        own = reserve.tokens
        if own + pool.tokens + _SLACK < n + keep:
            return False
        if own >= n:
            reserve.tokens = own - n
        else:
            reserve.tokens = 0.0
            pool.tokens -= n - own
        return True

    def tokens_left(self) -> float:
        """The tokens in the pool and the reserves together, as of the last refill."""
        return self._pool.tokens + sum(bucket.tokens for bucket in self._reserve_list)

    def wait_time(self, model: str | None, n: float = 1.0) -> float:
        """Seconds until ``model`` could take ``n`` tokens at today's refill rates."""
        self._refill(self._clock.monotonic())
        reserve = self._reserves.get(model) if model is not None else None
        have = self._pool.tokens
        rate = self._pool.rate
        if reserve is not None:
            have += reserve.tokens
            rate += reserve.rate
        deficit = n - have
        if deficit <= _SLACK:
            return 0.0
        for bucket in self._reserve_list:
            if bucket is not reserve and bucket.tokens + _SLACK >= bucket.capacity:
                rate += bucket.rate  # a full reserve spills into the pool
        if rate <= 0:
            rate = self.shares.limit  # only when another reserve fills; a hint, not a promise
        return deficit / rate


class RateWindow:
    """Calls per second over the last second: two 1 s windows, interpolated."""

    __slots__ = ("_current", "_previous", "_start")

    def __init__(self, now: float) -> None:
        self._start = math.floor(now)
        self._current = 0
        self._previous = 0

    def _roll(self, now: float) -> None:
        elapsed = now - self._start
        if elapsed >= 1.0:
            self._previous = self._current if elapsed < 2.0 else 0
            self._current = 0
            self._start = math.floor(now)

    def hit(self, now: float, n: int = 1) -> None:
        if now - self._start >= 1.0:
            self._roll(now)
        self._current += n

    def rate(self, now: float) -> float:
        self._roll(now)
        return self._previous * (1.0 - (now - self._start)) + self._current


def limit_detail(
    strategy: str,
    observed: float,
    limit: float,
    interface: str,
    model: str | None,
    reserved: float,
    extra: str = "",
) -> str:
    """``instance-qps 131/s over limit 100/s for interface infer (model ...) (strategy: ...)``"""
    parts = []
    if model is not None:
        parts.append(f"model {model}")
    if reserved > 0:
        parts.append(f"reserved {_num(reserved)}/s")
    if extra:
        parts.append(extra)
    who = f" ({', '.join(parts)})" if parts else ""
    return (
        f"{strategy} {observed:.0f}/s over limit {_num(limit)}/s for interface {interface}{who} "
        f"(strategy: {strategy}, code: 429, msg: {CLASSIC_MESSAGE})"
    )


def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


# a run of n calls is taken at once only while the bucket holds this many times n tokens
_AHEAD_HEADROOM = 64


class InstanceQpsGuard:
    """The ``instance-qps`` guard: per-interface limits on this instance."""

    learns_from_outcomes = False  # record() is a no-op: the chain skips it

    rule = INSTANCE_QPS_RULE
    strategy = "instance-qps"

    def __init__(
        self,
        limits: Mapping[str, QpsLimit],
        clock: Clock,
        service_file: str = "service.yaml",
    ) -> None:
        self._clock = clock
        self.service_file = service_file
        now = clock.monotonic()
        self._limits: dict[str, SharedLimit] = {}
        self._windows: dict[str, RateWindow] = {}
        self._where: dict[str, str] = {}
        for interface, limit in limits.items():
            where = f"limits.{interface}.instance_qps in {service_file}"
            shares = LimitShares.of(
                limit.qps,
                limit.burst_seconds,
                limit.reserved_qps,
                subject=f"instance_qps of interface {interface}",
                rule=self.rule,
                where=where,
            )
            self._limits[interface] = SharedLimit(shares, clock)
            self._windows[interface] = RateWindow(now)
            self._where[interface] = where
        self.admitted = 0
        self.rejected: dict[str, int] = {self.rule: 0}

    def check(self, call: Call) -> None:
        shared = self._limits.get(call.interface)
        if shared is None:
            return
        window = self._windows[call.interface]
        if self._take(shared, window, call.model):
            return
        now = self._clock.monotonic()
        window.hit(now)
        raise self._refusal(shared, call, now)

    def quick(self, call: Call) -> Quick | None:
        shared = self._limits.get(call.interface)
        if shared is None:
            return None
        return functools.partial(self._take, shared, self._windows[call.interface], call.model)

    def _take(self, shared: SharedLimit, window: RateWindow, model: str | None, n: int = 1) -> bool:
        """Admit ``n`` calls if their tokens are there (False: it changed nothing); more
        than one only while ``_AHEAD_HEADROOM`` times as many tokens are there."""
        now = self._clock.monotonic()
        keep = 0.0 if n == 1 else n * (_AHEAD_HEADROOM - 1.0)
        if not shared.try_take(model, n, now, keep):
            return False
        window.hit(now, n)
        self.admitted += n
        return True

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        return None

    def _refusal(self, shared: SharedLimit, call: Call, now: float) -> GovernanceError:
        self.rejected[self.rule] += 1
        detail = limit_detail(
            self.strategy,
            self._windows[call.interface].rate(now),
            shared.shares.limit,
            call.interface,
            call.model,
            shared.reserved_qps(call.model),
        )
        return rejected(
            detail,
            rule=self.rule,
            where=self._where[call.interface],
            retry_after=shared.wait_time(call.model),
        )
