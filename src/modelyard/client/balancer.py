"""Which instance gets the next request: power of two choices, and passive outlier ejection.

``Balancer.pick`` draws two distinct hosts at random and takes the one with
fewer outstanding requests (the first drawn on a tie). Weights are a traffic
split, not a hint: when the hosts' weights differ (a canary at 10 %, bigger
machines), it first draws a weight class (the hosts of one weight) in
proportion to its total weight, then picks within it. A less busy host
therefore cannot draw more than its weight's share, as an idle canary beside
loaded stable instances would if load were compared across weights. Hosts that
fail are ejected for a while, as Envoy's outlier detection does:

- ``consecutive_failures`` failures in a row, or a failure percentage of at
  least ``failure_percentage`` over a window of ``interval`` seconds with at least
  ``failure_percentage_min_requests`` results, eject a host;
- an ejection lasts ``base_ejection_time`` times the number of times the host
  was ejected (at most ``max_ejection_time``); the count goes down by one for
  each ``interval`` the host then stays in;
- at most ``max_ejection_percent`` of the hosts are out at once (always one may be);
- when fewer than ``panic_threshold`` percent of a model's hosts are in, the
  balancer ignores ejections for that model and uses them all.

``Balancer.pick_nearby`` keeps a caller in its own data centre: it picks among
the ``local`` hosts that are in, not failing in a row and not yet tried, and
spills over to every host only when there is none.

Only what the caller reports as a failure counts: the client reports
connection errors and UNAVAILABLE, not a model's own errors, which every host
would repeat. Pure logic: time comes from the injected clock, randomness from
the injected ``random.Random``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from modelyard.clock import SYSTEM_CLOCK, Clock


@dataclass(frozen=True, slots=True)
class OutlierPolicy:
    consecutive_failures: int = 5
    failure_percentage: float = 50.0
    failure_percentage_min_requests: int = 20
    interval: float = 10.0
    base_ejection_time: float = 30.0
    max_ejection_time: float = 300.0
    max_ejection_percent: float = 50.0
    panic_threshold: float = 50.0


class Host:
    """One instance as the balancer sees it: its weight, its load and its failures."""

    __slots__ = (
        "calm_since",
        "consecutive_failures",
        "ejected_until",
        "ejections",
        "key",
        "local",
        "outstanding",
        "weight",
        "window_failures",
        "window_requests",
        "window_start",
    )

    def __init__(self, key: str, weight: float = 1.0) -> None:
        self.key = key
        self.local = False  # in the caller's own data centre
        self.weight = weight
        self.outstanding = 0
        self.consecutive_failures = 0
        self.window_start = 0.0
        self.window_requests = 0
        self.window_failures = 0
        self.ejected_until = 0.0
        self.ejections = 0  # the multiplier of the next ejection time
        self.calm_since = 0.0

    def ejected(self, now: float) -> bool:
        return self.ejected_until > now

    def __repr__(self) -> str:
        return f"Host({self.key!r}, weight={self.weight}, outstanding={self.outstanding})"


H = TypeVar("H", bound=Host)


def _rendezvous_weight(affinity: str, key: str) -> bytes:
    return hashlib.blake2b(f"{affinity}\0{key}".encode(), digest_size=8).digest()


class Balancer:
    def __init__(
        self,
        policy: OutlierPolicy | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy or OutlierPolicy()
        self.clock = clock
        self.rng = rng or random.Random()
        self.hosts: dict[str, Host] = {}
        self._ejection_horizon = 0.0  # no host is ejected at or after this time

    # ---- membership -----------------------------------------------------

    def add(self, host: Host) -> None:
        self.hosts[host.key] = host

    def remove(self, key: str) -> None:
        self.hosts.pop(key, None)

    # ---- picking --------------------------------------------------------

    def pick(self, candidates: Sequence[H], exclude: Collection[Host] = ()) -> H | None:
        """The host for the next request among ``candidates``, never one in ``exclude``."""
        now = self.clock.monotonic()
        if now >= self._ejection_horizon:
            pool = [h for h in candidates if h not in exclude] if exclude else candidates
        else:
            pool = self._healthy_pool(candidates, exclude, now)
        if not pool:
            return None
        weight = pool[0].weight
        for host in pool:
            if host.weight != weight:
                pool = self._weight_class(pool)
                break
        if len(pool) == 1:
            return pool[0]
        first, second = self._two(pool)
        # fewer outstanding per unit of weight wins, without dividing
        if second.outstanding * first.weight < first.outstanding * second.weight:
            return second
        return first

    def _weight_class(self, pool: Sequence[H]) -> Sequence[H]:
        """The hosts of one weight, drawn in proportion to the class's total weight."""
        classes: dict[float, list[H]] = {}
        for host in pool:  # weights a rounding apart are one class; NaN or negative weigh 0
            weight = round(host.weight, 9) if host.weight > 0 else 0.0
            classes.setdefault(weight, []).append(host)
        total = sum(weight * len(hosts) for weight, hosts in classes.items())
        if total <= 0:
            return pool
        target = self.rng.random() * total
        for weight, hosts in classes.items():
            target -= weight * len(hosts)
            if target < 0 and weight > 0:
                return hosts
        return next(hosts for weight, hosts in reversed(classes.items()) if weight > 0)

    def pick_nearby(self, candidates: Sequence[H], exclude: Collection[Host] = ()) -> H | None:
        """``pick`` among the local hosts that are in and untried; among all when none is.
        A local host failing in a row counts as out though the ejection cap keeps it in."""
        now = self.clock.monotonic()
        failing = self.policy.consecutive_failures
        nearby = [
            h
            for h in candidates
            if h.local
            and h.weight > 0  # a host weighted out (a canary at 0 %) takes none of it
            and not h.ejected(now)
            and h.consecutive_failures < failing
            and h not in exclude
        ]
        return self.pick(nearby) if nearby else self.pick(candidates, exclude)

    def pick_for(
        self, affinity: str, candidates: Sequence[H], exclude: Collection[Host] = ()
    ) -> H | None:
        """The host that ``affinity`` (a sequence id) sticks to: rendezvous hashing, so a
        key stays on its host while that host is a candidate, whatever else comes or goes.
        An ejected host keeps its keys: their state is there, and nowhere else."""
        pool = [h for h in candidates if h not in exclude]
        if not pool:
            return None
        return max(pool, key=lambda host: _rendezvous_weight(affinity, host.key))

    def _healthy_pool(
        self, candidates: Sequence[H], exclude: Collection[Host], now: float
    ) -> list[H]:
        healthy = [h for h in candidates if not h.ejected(now)]
        panic = len(healthy) * 100 < self.policy.panic_threshold * len(candidates)
        if not panic:
            pool = [h for h in healthy if h not in exclude]
            if pool:
                return pool
        # panic, or every healthy host already tried: an ejected host beats none
        return [h for h in candidates if h not in exclude]

    def _two(self, pool: Sequence[H]) -> tuple[H, H]:
        total = 0.0
        for host in pool:
            total += host.weight
        if total <= 0:
            first, second = self.rng.sample(range(len(pool)), 2)
            return pool[first], pool[second]
        first_host = self._draw(pool, total, None)
        return first_host, self._draw(pool, total - first_host.weight, first_host)

    def _draw(self, pool: Sequence[H], total: float, skip: Host | None) -> H:
        target = self.rng.random() * total
        last: H | None = None
        for host in pool:
            if host is skip:
                continue
            target -= host.weight
            last = host
            if target < 0:
                return host
        assert last is not None
        return last  # rounding left a sliver past the end

    # ---- outcomes -------------------------------------------------------

    def start(self, host: Host) -> None:
        host.outstanding += 1

    def finish(self, host: Host, failed: bool | None) -> None:
        """The outcome of a request on ``host``: failed, succeeded, or ``None`` to not count it."""
        host.outstanding -= 1
        if failed is None:
            return
        now = self.clock.monotonic()
        if host.ejected(now):
            return  # started before the ejection, or a panic pick: not news
        policy = self.policy
        if now - host.window_start >= policy.interval:
            host.window_start = now
            host.window_requests = 0
            host.window_failures = 0
        host.window_requests += 1
        if not failed:
            host.consecutive_failures = 0
            if host.ejections and now - host.calm_since >= policy.interval:
                host.ejections -= 1
                host.calm_since = now
            return
        host.consecutive_failures += 1
        host.window_failures += 1
        if host.consecutive_failures >= policy.consecutive_failures or (
            host.window_requests >= policy.failure_percentage_min_requests
            and host.window_failures * 100 >= policy.failure_percentage * host.window_requests
        ):
            self._eject(host, now)

    def _eject(self, host: Host, now: float) -> None:
        policy = self.policy
        out = sum(1 for h in self.hosts.values() if h.ejected(now))
        limit = max(1, int(len(self.hosts) * policy.max_ejection_percent / 100))
        if out >= limit:
            return
        host.ejections += 1
        duration = min(
            policy.base_ejection_time * host.ejections,
            max(policy.base_ejection_time, policy.max_ejection_time),
        )
        host.ejected_until = now + duration
        host.calm_since = host.ejected_until
        host.consecutive_failures = 0
        host.window_start = host.ejected_until
        host.window_requests = 0
        host.window_failures = 0
        self._ejection_horizon = max(self._ejection_horizon, host.ejected_until)

    def ejected(self) -> list[Host]:
        """The hosts out now."""
        now = self.clock.monotonic()
        return [h for h in self.hosts.values() if h.ejected(now)]
