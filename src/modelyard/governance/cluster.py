"""cluster-qps: one limit shared by every instance of a service, counted in Redis.

One Lua script per decision runs the same hierarchical bucket as
``SharedLimit`` (model reserves that spill into a pool, all within one burst)
in the keys ``modelyard:rl:{<service>:<interface>}:pool`` and ``...:m:<model>``
(one hash tag, so Redis Cluster keeps them in one slot), on Redis' own clock
(``TIME``), so instances need not agree on time. Keys expire when unused.

Instances lease tokens in chunks: the script grants min(chunk, whole tokens
available) and the guard spends them locally until they run out or the lease
is ``lease_ttl`` old; expired tokens are dropped, so leasing can under-admit by
up to one chunk per instance and reserve (the models without one share the pool's
lease), and since every token comes from the
script the cluster never admits more than limit x t + burst. (The tokens left
when a chunk fetched ahead arrives, at most half a chunk, live on with it.) A chunk is
``lease_chunk`` tokens, or ``CHUNK_SECONDS`` of the rate at which this
instance spent its last lease when that is more (so a chunk grows in one round
trip when traffic jumps), and never more than limit / (live instances x 10).
After a refusal an instance asks again only once a chunk could be there (at
most ``lease_ttl`` later).

While Redis grants whole chunks (the limit is far from binding), the next chunk
is fetched in the background once half of the lease is spent, so requests never
wait for Redis; a request waits for a round trip only when its lease is empty,
which happens when the limit binds (grants come back short) or traffic jumps.

When Redis errors or times out, the guard enforces limit / live instances
locally with a ``SharedLimit`` and pings Redis in the background every
``probe_interval``, traffic or not, until it answers; then it uses Redis again. Its registry
entry says so (``cluster_limit_local``), and while F of the N live instances
enforce locally, the others lease from Redis at (N - F) / N of the limit (rates,
reserves and burst alike): the cluster still admits the limit, not the limit
plus the local shares, when Redis is unreachable from some hosts only.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from modelyard.clock import Clock
from modelyard.errors import GovernanceError
from modelyard.governance.guard import Call, Quick, rejected
from modelyard.governance.ratelimit import (
    CLUSTER_QPS_RULE,
    LimitShares,
    QpsLimit,
    RateWindow,
    SharedLimit,
    limit_detail,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis
from modelyard.tasks import cancel_and_wait

log = structlog.get_logger("modelyard.governance")

# The script's clock, ``t``: Redis' own, so instances need not agree on time. (The
# tests put a table's times here, as they drive ``SharedLimit`` with a fake clock.)
REDIS_CLOCK = "local t = redis.call('TIME')\n"

# KEYS[1]: pool hash; KEYS[1 + i]: reserve hash of the i-th reserved model.
# ARGV: want, mine (caller's reserve index, 0 for none), offered (calls this
# instance saw since its last trip, for the observed rate), ttl_ms, limit,
# pool_rate, total_capacity, then rate_i, capacity_i for each reserve.
# Returns {granted, seconds to one token, seconds to `want` tokens, observed calls/s}.
# It decides as SharedLimit.try_take and SharedLimit.wait_time do (one table of cases
# tests both). A clock that steps back makes no tokens and keeps the later time.
LEASE_STEPS = """
local want = tonumber(ARGV[1])
local mine = tonumber(ARGV[2])
local offered = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local pool_rate = tonumber(ARGV[6])
local total = tonumber(ARGV[7])
local sec = tonumber(t[1])
local usec = tonumber(t[2])

local pool = redis.call('HMGET', KEYS[1], 'tokens', 'sec', 'usec', 'win', 'cur', 'prev')
local elapsed = 0
local refilled_sec, refilled_usec = t[1], t[2]
if pool[2] then
  elapsed = (sec - tonumber(pool[2])) + (usec - tonumber(pool[3])) / 1000000
  if elapsed < 0 then
    elapsed = 0
    refilled_sec, refilled_usec = pool[2], pool[3]
  end
end

local n = #KEYS - 1
local tokens, rates, caps = {}, {}, {}
local held, spill = 0, 0
for i = 1, n do
  local rate = tonumber(ARGV[6 + 2 * i])
  local cap = tonumber(ARGV[7 + 2 * i])
  local have = tonumber(redis.call('HGET', KEYS[1 + i], 'tokens'))
  if have == nil then have = cap else have = have + rate * elapsed end
  if have > cap then
    spill = spill + have - cap
    have = cap
  end
  tokens[i], rates[i], caps[i] = have, rate, cap
  held = held + have
end
local free = tonumber(pool[1])
if free == nil then free = total - held else free = free + pool_rate * elapsed + spill end
if free > total - held then free = total - held end

local own = 0
if mine > 0 then own = tokens[mine] end
local granted = math.floor(own + free + 1e-9)
if granted > want then granted = want end
if granted > 0 then
  local from_own = math.min(own, granted)
  if mine > 0 then tokens[mine] = own - from_own end
  free = free - (granted - from_own)
  own = own - from_own
end

local rate = pool_rate
if mine > 0 then rate = rate + rates[mine] end
for i = 1, n do
  if i ~= mine and tokens[i] + 1e-9 >= caps[i] then rate = rate + rates[i] end
end
if rate <= 0 then rate = limit end
local have = own + free
local wait_one = math.max(0, 1 - have) / rate
local wait_want = math.max(0, want - have) / rate

local win = tonumber(pool[4]) or sec
local cur = tonumber(pool[5]) or 0
local prev = tonumber(pool[6]) or 0
if sec ~= win then
  if sec == win + 1 then prev = cur else prev = 0 end
  cur = 0
  win = sec
end
cur = cur + offered
local observed = prev * (1 - usec / 1000000) + cur

redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', free),
  'sec', refilled_sec, 'usec', refilled_usec, 'win', win, 'cur', cur, 'prev', prev)
redis.call('PEXPIRE', KEYS[1], ttl)
for i = 1, n do
  redis.call('HSET', KEYS[1 + i], 'tokens', string.format('%.17g', tokens[i]))
  redis.call('PEXPIRE', KEYS[1 + i], ttl)
end
return {granted, string.format('%.9f', wait_one), string.format('%.9f', wait_want),
  string.format('%.3f', observed)}
"""
LEASE_SCRIPT = REDIS_CLOCK + LEASE_STEPS


def lease_limit_args(shares: LimitShares, ttl_ms: int) -> list[str | int]:
    """The script's arguments after want, mine and offered: the limit ``shares`` split."""
    args: list[str | int] = [
        ttl_ms,
        repr(float(shares.limit)),
        repr(float(shares.pool_rate)),
        repr(float(shares.total_capacity)),
    ]
    for model in shares.reserved:
        args += [repr(float(shares.reserved[model])), repr(shares.reserve_capacity[model])]
    return args


# Half a second of traffic per chunk: a round trip costs the instance ~150-200 us of CPU
# in redis-py, and at 0.1 s chunks those trips cost 2-4 % of a tiny model's throughput
# (bench/RESULTS.md); the cap below still bounds what a chunk can hold near the limit.
CHUNK_SECONDS = 0.5


@dataclass(slots=True)
class _Lease:
    tokens: int = 0
    expires: float = 0.0
    denied_until: float = 0.0
    refill_below: int = 0  # fetch the next chunk in the background below this many tokens
    issued: int = 0  # tokens held right after the last grant
    issued_at: float = 0.0
    refill: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class _Interface:
    """One interface's cluster limit: Redis keys, script arguments, leases."""

    __slots__ = (
        "args",
        "factor",
        "keys",
        "leases",
        "local",
        "name",
        "observed",
        "offered",
        "reserve_index",
        "shares",
        "where",
        "window",
    )

    def __init__(self, name: str, shares: LimitShares, prefix: str, where: str, now: float) -> None:
        self.name = name
        self.shares = shares
        self.where = where
        models = list(shares.reserved)
        self.keys = [f"{prefix}:pool", *(f"{prefix}:m:{model}" for model in models)]
        self.reserve_index: dict[str | None, int] = {m: i + 1 for i, m in enumerate(models)}
        self.factor = 1.0
        self.args = self._script_args(shares)
        self.leases: dict[str | None, _Lease] = {}
        self.offered = 0
        self.observed = 0.0
        self.window = RateWindow(now)
        self.local: SharedLimit | None = None

    def script_args(self, factor: float) -> list[str | int]:
        """The script's limit arguments for ``factor`` of the limit (the share of the
        instances that lease from Redis)."""
        if factor != self.factor:
            self.factor = factor
            shares = self.shares if factor == 1.0 else self.shares.scaled(factor)
            self.args = self._script_args(shares)
        return self.args

    def _script_args(self, shares: LimitShares) -> list[str | int]:
        # keys outlive the longer burst, the whole limit's or the share's
        burst = max(self.shares.burst_seconds, shares.burst_seconds)
        return lease_limit_args(shares, int((2 * burst + 10) * 1000))


class ClusterQpsGuard:
    """The ``cluster-qps`` guard: per-interface limits shared by all instances."""

    learns_from_outcomes = False  # record() is a no-op: the chain skips it

    rule = CLUSTER_QPS_RULE
    strategy = "cluster-qps"

    def __init__(
        self,
        service: str,
        limits: Mapping[str, QpsLimit],
        redis_url: str,
        clock: Clock,
        live_instances: Callable[[], int],
        service_file: str = "service.yaml",
        *,
        limiting_locally: Callable[[], int] = lambda: 0,
        chunk: int = 20,
        lease_ttl: float = 1.0,
        socket_timeout: float = 0.05,
        probe_interval: float = 1.0,
        key_prefix: str = "modelyard:rl",
    ) -> None:
        self.service = service
        self.service_file = service_file
        self.chunk = chunk
        self.lease_ttl = lease_ttl
        self.probe_interval = probe_interval
        self._clock = clock
        self._live_instances = live_instances
        self._limiting_locally = limiting_locally
        # imported here: redis (with the OpenTelemetry parts it loads) costs a server
        # start about 0.1 s, and only a service with a cluster limit uses it
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError

        self._failures: tuple[type[Exception], ...] = (RedisError, OSError)
        self._redis: Redis = Redis.from_url(
            redis_url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_timeout,
            retry=Retry(NoBackoff(), 0),  # a failed call falls back at once; probes retry
        )
        self._script = self._redis.register_script(LEASE_SCRIPT)
        kwargs = self._redis.connection_pool.connection_kwargs
        self._redis_address = f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
        now = clock.monotonic()
        self._interfaces: dict[str, _Interface] = {}
        for interface, limit in limits.items():
            where = f"limits.{interface}.cluster_qps in {service_file}"
            shares = LimitShares.of(
                limit.qps,
                limit.burst_seconds,
                limit.reserved_qps,
                subject=f"cluster_qps of interface {interface}",
                rule=self.rule,
                where=where,
            )
            prefix = f"{key_prefix}:{{{service}:{interface}}}"
            self._interfaces[interface] = _Interface(interface, shares, prefix, where, now)
        self._fallback = False
        self._fallback_instances = 1
        self._probe_task: asyncio.Task[None] | None = None
        self.admitted = 0
        self.rejected: dict[str, int] = {self.rule: 0}
        self.fallback_decisions = 0
        self.redis_round_trips = 0
        self._refills: set[asyncio.Task[None]] = set()  # chunks being fetched ahead
        self._closed = False

    @property
    def in_fallback(self) -> bool:
        return self._fallback

    def check(self, call: Call) -> Awaitable[None] | None:
        iface = self._interfaces.get(call.interface)
        if iface is None:
            return None
        lease = self._lease_of(iface, call.model)
        if self._take(iface, lease, call.model):
            return None
        now = self._clock.monotonic()
        iface.offered += 1
        iface.window.hit(now)
        if self._fallback:
            self._check_locally(iface, call, now)
            return None
        if now < lease.denied_until:
            raise self._refusal(iface, call, lease.denied_until - now)
        return self._check_with_redis(iface, lease, call)

    def quick(self, call: Call) -> Quick | None:
        iface = self._interfaces.get(call.interface)
        if iface is None:
            return None
        return functools.partial(self._take, iface, self._lease_of(iface, call.model), call.model)

    @staticmethod
    def _lease_of(iface: _Interface, model: str | None) -> _Lease:
        # a model without a reserve draws on the pool as every other one does: they share
        # one lease, so model names (callers choose them) split neither memory nor the pool
        key = model if model in iface.reserve_index else None
        lease = iface.leases.get(key)
        if lease is None:
            lease = iface.leases[key] = _Lease()
        return lease

    def _take(self, iface: _Interface, lease: _Lease, model: str | None, n: int = 1) -> bool:
        """Admit ``n`` calls from the lease if it can (False: it changed nothing); fetch the
        next chunk once the lease runs low. More than one call only while Redis gives whole
        chunks (far from the limit) and the lease holds them above its refill mark."""
        now = self._clock.monotonic()
        if self._fallback or now >= lease.expires:
            return False
        if n == 1:
            if lease.tokens < 1:
                return False
        elif not lease.refill_below or lease.tokens < lease.refill_below + n:
            return False
        iface.offered += n
        iface.window.hit(now, n)
        lease.tokens -= n
        self.admitted += n
        if lease.tokens < lease.refill_below and lease.refill is None and not self._closed:
            task = asyncio.get_running_loop().create_task(self._prefetch(iface, lease, model))
            lease.refill = task
            self._refills.add(task)
            task.add_done_callback(self._refills.discard)
        return True

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        return None

    async def aclose(self) -> None:
        self._closed = True
        for task in [self._probe_task, *self._refills]:
            if task is not None and not task.done():
                await cancel_and_wait(task)
        await self._redis.aclose()

    async def _check_with_redis(self, iface: _Interface, lease: _Lease, call: Call) -> None:
        async with lease.lock:
            await self._decide_with_redis(iface, lease, call)

    async def _decide_with_redis(self, iface: _Interface, lease: _Lease, call: Call) -> None:
        now = self._clock.monotonic()
        if lease.tokens > 0 and now < lease.expires:  # another waiter renewed the lease
            lease.tokens -= 1
            self.admitted += 1
            return
        if now < lease.denied_until:
            raise self._refusal(iface, call, lease.denied_until - now)
        if self._fallback:
            self._check_locally(iface, call, now)
            return
        try:
            wait_one = await self._lease(iface, lease, call.model, now)
        except self._failures as exc:
            self._enter_fallback(exc)
            self._check_locally(iface, call, now)
            return
        if lease.tokens > 0:
            lease.tokens -= 1
            self.admitted += 1
            return
        raise self._refusal(iface, call, wait_one)

    async def _prefetch(self, iface: _Interface, lease: _Lease, model: str | None) -> None:
        """Fetch the next chunk while the rest of the lease is spent."""
        try:
            async with lease.lock:
                now = self._clock.monotonic()
                if self._fallback or lease.tokens >= lease.refill_below:
                    return
                try:
                    await self._lease(iface, lease, model, now)
                except self._failures as exc:
                    self._enter_fallback(exc)
        finally:
            lease.refill = None

    async def _lease(
        self, iface: _Interface, lease: _Lease, model: str | None, now: float
    ) -> float:
        """One round trip: add the granted tokens to the lease; the wait for one token."""
        instances = self._instances()
        limiting_locally = self._others_limiting_locally(instances)
        factor = (instances - limiting_locally) / instances
        cap = iface.shares.limit / (instances * 10)
        left = lease.tokens if now < lease.expires else 0
        elapsed = now - lease.issued_at
        spending = (lease.issued - left) / elapsed if lease.issued and elapsed > 0 else 0.0
        want = max(1, int(min(cap, max(self.chunk, spending * CHUNK_SECONDS))))
        offered, iface.offered = iface.offered, 0
        if factor != iface.factor:
            log.info(
                "cluster_limit_share",
                service=self.service,
                interface=iface.name,
                leasing=f"{factor:.0%} of the limit",
                limiting_locally=limiting_locally,
                live_instances=instances,
            )
        granted, wait_one, wait_want, observed = await self._script(
            keys=iface.keys,
            args=[want, iface.reserve_index.get(model, 0), offered, *iface.script_args(factor)],
        )
        self.redis_round_trips += 1
        iface.observed = float(observed)
        now = self._clock.monotonic()
        if granted > 0:
            lease.tokens = granted + (lease.tokens if now < lease.expires else 0)
            lease.expires = now + self.lease_ttl
            lease.issued, lease.issued_at = lease.tokens, now
        # fetch ahead only while Redis has whole chunks to give: near the limit it would
        # only add round trips
        lease.refill_below = want // 2 if granted >= want else 0
        if granted == 0:
            lease.denied_until = now + min(float(wait_want), self.lease_ttl)
        return float(wait_one)

    def _check_locally(self, iface: _Interface, call: Call, now: float) -> None:
        self.fallback_decisions += 1
        local = iface.local
        if local is None:
            share = iface.shares.scaled(1.0 / self._fallback_instances)
            local = iface.local = SharedLimit(share, self._clock)
        if local.try_take(call.model, 1.0, now):
            self.admitted += 1
            return
        raise self._refusal(iface, call, local.wait_time(call.model), local=local)

    def _enter_fallback(self, exc: BaseException) -> None:
        if self._fallback:
            return
        self._fallback = True
        self._fallback_instances = self._instances()
        for iface in self._interfaces.values():
            iface.local = None
        if not self._closed and (self._probe_task is None or self._probe_task.done()):
            self._probe_task = asyncio.get_running_loop().create_task(self._probe_until_answered())
        log.warning(
            "cluster_limit_fallback",
            state="entered",
            service=self.service,
            redis=self._redis_address,
            error=f"{type(exc).__name__}: {exc}",
            live_instances=self._fallback_instances,
            enforcing="limit / live instances on this instance",
        )

    async def _probe_until_answered(self) -> None:
        """Ping Redis every ``probe_interval``, with traffic or without, until it answers: an
        idle instance must not stay in fallback, its entry saying the others lease less."""
        while True:
            await asyncio.sleep(self.probe_interval)
            try:
                await self._redis.ping()
                break
            except self._failures:
                instances = self._instances()
                if instances != self._fallback_instances:
                    self._fallback_instances = instances
                    for iface in self._interfaces.values():
                        if iface.local is not None:  # as full as it was: no fresh burst
                            share = iface.shares.scaled(1.0 / instances)
                            iface.local = iface.local.reshared(share)
        self._fallback = False
        for iface in self._interfaces.values():
            iface.leases.clear()
            iface.local = None
        log.warning(
            "cluster_limit_fallback",
            state="left",
            service=self.service,
            redis=self._redis_address,
            fallback_decisions=self.fallback_decisions,
        )

    def _instances(self) -> int:
        try:
            return max(1, int(self._live_instances()))
        except Exception:  # the registry's problem must not become a refused request
            return 1

    def _others_limiting_locally(self, instances: int) -> int:
        """The other live instances that enforce their share without Redis (at most all
        but this one)."""
        try:
            return min(max(0, int(self._limiting_locally())), instances - 1)
        except Exception:  # the registry's problem must not become a refused request
            return 0

    def _refusal(
        self,
        iface: _Interface,
        call: Call,
        retry_after: float,
        local: SharedLimit | None = None,
    ) -> GovernanceError:
        self.rejected[self.rule] += 1
        limit = iface.shares.limit
        reserved = iface.shares.reserved.get(call.model, 0.0) if call.model is not None else 0.0
        if local is None:
            # the cluster's count at the last trip, plus this instance's calls not yet reported
            observed = iface.observed + iface.offered
            extra = ""
            if iface.factor < 1.0:
                extra = (
                    f"redis unreachable from some instances: they enforce their shares "
                    f"locally, the instances on Redis lease {iface.factor:.0%} of the limit "
                    f"{limit:g}/s"
                )
                limit *= iface.factor
                reserved *= iface.factor
        else:
            instances = self._fallback_instances
            observed = iface.window.rate(self._clock.monotonic()) * instances
            extra = (
                f"redis unreachable: this instance enforces {local.shares.limit:g}/s, "
                f"1 of {instances} live instances"
            )
        detail = limit_detail(
            self.strategy, observed, limit, iface.name, call.model, reserved, extra
        )
        if math.isinf(retry_after):
            retry_after = self.lease_ttl
        return rejected(detail, rule=self.rule, where=iface.where, retry_after=retry_after)
