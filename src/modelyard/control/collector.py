"""The control plane's view of live instances: one poll a second, kept as short time series.

Every instance answers ``GET /v2/modelyard/stats`` with cumulative counters
and histograms. The collector keeps the previous answer per instance and
turns the difference into rates and percentiles over the last interval:
requests per second, p50 / p99 latency, mean queue and compute time per
request, per model version; admissions and rejections per interface and
rule. Series are bounded (``keep`` points each), so memory stays flat.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from modelyard.web_client import WebError, WebSession


def percentile(bounds: list[float], counts: list[int], q: float) -> float | None:
    """The bucket upper bound holding quantile ``q`` (the last finite bound for +Inf)."""
    total = sum(counts)
    if total <= 0:
        return None
    rank = math.ceil(q * total)
    running = 0
    for index, count in enumerate(counts):
        running += count
        if running >= rank:
            return bounds[min(index, len(bounds) - 1)]
    return bounds[-1]


def _delta(now: list[int], before: list[int] | None) -> list[int]:
    if before is None or len(before) != len(now):
        return list(now)
    return [max(0, a - b) for a, b in zip(now, before, strict=True)]


@dataclass(slots=True)
class Target:
    """One instance to poll, as the state records it."""

    name: str
    service: str
    group: str
    http: str  # host:port
    template: str = ""  # the spec's template it was started from ("" where unknown)


@dataclass(slots=True)
class InstanceView:
    target: Target
    up: bool = False
    error: str | None = None
    polled_at: float = 0.0
    down_since: float | None = None  # monotonic time of the first failed poll since it answered
    stats: dict[str, Any] | None = None  # the newest answer
    series: dict[str, deque[dict[str, Any]]] = field(default_factory=dict)  # model/version ->


@dataclass(slots=True)
class GatewayView:
    """One gateway process's own counters, read on its status port."""

    service: str
    pid: int
    up: bool = False
    error: str | None = None
    stats: dict[str, Any] | None = None  # its live stats' "gateway" block


class Collector:
    def __init__(self, keep: int = 300, timeout: float = 0.8) -> None:
        self.keep = keep
        self.views: dict[str, InstanceView] = {}
        self.gateway_views: dict[int, GatewayView] = {}  # pid ->
        # service -> interface -> deque of {t, admitted/s, rejected/s by rule}
        self.governance: dict[str, dict[str, deque[dict[str, Any]]]] = {}
        self._client = WebSession(timeout)
        self._previous_governance: dict[str, dict[str, Any]] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    async def poll(self, targets: list[Target]) -> None:
        names = {t.name for t in targets}
        for gone in set(self.views) - names:
            del self.views[gone]
        for target in targets:
            self.views.setdefault(target.name, InstanceView(target))
        await asyncio.gather(*(self._poll_one(self.views[t.name]) for t in targets))
        self._fold_governance()

    async def _poll_one(self, view: InstanceView) -> None:
        try:
            response = await self._client.get(f"http://{view.target.http}/v2/modelyard/stats")
            if response.status != 200:
                raise WebError(f"answered {response.status} {response.reason}")
            stats = response.json()
        except (WebError, ValueError) as exc:
            view.up, view.error = False, f"{type(exc).__name__}: {exc}"
            if view.down_since is None:
                view.down_since = time.monotonic()
            return
        now = time.time()
        previous, elapsed = view.stats, now - view.polled_at
        view.up, view.error, view.polled_at, view.stats = True, None, now, stats
        view.down_since = None
        if previous is None or elapsed <= 0:
            return
        before = {(m["name"], m["version"]): m for m in previous.get("models", [])}
        for model in stats.get("models", []):
            key = (model["name"], model["version"])
            old = before.get(key)
            point = _model_point(model, old, elapsed, now)
            series = view.series.setdefault("/".join(key), deque(maxlen=self.keep))
            series.append(point)

    async def poll_gateways(self, targets: list[tuple[str, int, str]]) -> None:
        """Each gateway process's counters: (service, pid, host:status_port) per process."""
        pids = {pid for _, pid, _ in targets}
        for gone in set(self.gateway_views) - pids:
            del self.gateway_views[gone]
        views = [self.gateway_views.setdefault(pid, GatewayView(service, pid))
                 for service, pid, _ in targets]  # fmt: skip
        await asyncio.gather(
            *(self._poll_gateway(view, address)
              for view, (_, _, address) in zip(views, targets, strict=True))
        )  # fmt: skip

    async def _poll_gateway(self, view: GatewayView, address: str) -> None:
        try:
            response = await self._client.get(f"http://{address}/v2/modelyard/stats")
            if response.status != 200:
                raise WebError(f"answered {response.status} {response.reason}")
            view.stats = response.json().get("gateway")
            view.up, view.error = True, None
        except (WebError, ValueError) as exc:
            view.up, view.error = False, f"{type(exc).__name__}: {exc}"

    def gateway_totals(self, service: str) -> dict[str, Any]:
        """The service's gateway processes' counters summed (those that answered): calls,
        answers, governance refusals handed on and other errors, by rule."""
        total: dict[str, Any] = {"calls": 0, "answered": 0, "refused": {}, "errors": {},
                                 "processes": 0}  # fmt: skip
        for view in self.gateway_views.values():
            if view.service != service or not view.up or not view.stats:
                continue
            total["processes"] += 1
            total["calls"] += view.stats.get("calls", 0)
            total["answered"] += view.stats.get("answered", 0)
            for key in ("refused", "errors"):
                for rule, count in (view.stats.get(key) or {}).items():
                    total[key][rule] = total[key].get(rule, 0) + count
        return total

    def governance_totals(self) -> dict[str, dict[str, Any]]:
        """Every service's governance counters summed over its up instances (zero if none).

        Per service: admitted by interface, rejected by interface and rule,
        rejections_total, counted_since (the earliest instance's start: counters do not reset
        on a rule change), and each breaker with the instance it lives on.
        """
        totals: dict[str, dict[str, Any]] = {}
        for view in self.views.values():
            total = totals.setdefault(
                view.target.service,
                {"admitted": {}, "rejected": {}, "breakers": [], "rejections_total": 0},
            )
            block = (view.stats or {}).get("governance") if view.up else None
            if not block:
                continue
            for interface, count in block.get("admitted", {}).items():
                total["admitted"][interface] = total["admitted"].get(interface, 0) + count
            for interface, rules in block.get("rejected", {}).items():
                mine = total["rejected"].setdefault(interface, {})
                for rule, count in rules.items():
                    mine[rule] = mine.get(rule, 0) + count
            total["rejections_total"] += block.get("rejections_total", 0)
            since = block.get("counted_since")
            if since is not None:
                total["counted_since"] = min(since, total.get("counted_since", since))
            for breaker in block.get("breakers", []):
                total["breakers"].append({**breaker, "instance": view.target.name})
        return totals

    def _fold_governance(self) -> None:
        """Difference the summed counters since the last poll into per-second series."""
        now = time.time()
        totals = self.governance_totals()
        for total in totals.values():
            total["at"] = now
        for service, total in totals.items():
            previous = self._previous_governance.get(service)
            self._previous_governance[service] = total
            if previous is None:
                continue
            elapsed = max(1e-3, now - previous["at"])
            interfaces = set(total["admitted"]) | set(total["rejected"])
            for interface in interfaces:
                admitted = total["admitted"].get(interface, 0) - previous["admitted"].get(
                    interface, 0
                )
                rejected = {
                    rule: max(0, count - previous["rejected"].get(interface, {}).get(rule, 0))
                    / elapsed
                    for rule, count in total["rejected"].get(interface, {}).items()
                }
                series = self.governance.setdefault(service, {}).setdefault(
                    interface, deque(maxlen=self.keep)
                )
                series.append(
                    {
                        "t": now,
                        "admitted_per_s": max(0, admitted) / elapsed,
                        "rejected_per_s": rejected,
                    }
                )

    def in_flight(self, service: str, group: str, template: str | None = None) -> float:
        """The requests in flight on the group's live instances (on the template's, given
        one)."""
        return float(
            sum(
                (v.stats or {}).get("instance", {}).get("in_flight", 0)
                for v in self.views.values()
                if v.up
                and v.target.service == service
                and v.target.group == group
                and template in (None, v.target.template)
            )
        )


def _model_point(
    model: dict[str, Any], old: dict[str, Any] | None, elapsed: float, now: float
) -> dict[str, Any]:
    histograms = model.get("histograms", {})
    old_histograms = (old or {}).get("histograms", {})

    def delta(name: str) -> tuple[list[float], list[int]]:
        hist = histograms.get(name) or {"bounds": [], "counts": []}
        before = old_histograms.get(name, {}).get("counts")
        return hist["bounds"], _delta(hist["counts"], before)

    bounds, latency = delta("request_seconds")
    success = model.get("success", 0) - (old or {}).get("success", 0)
    failure = model.get("failure", 0) - (old or {}).get("failure", 0)
    p50 = percentile(bounds, latency, 0.50)
    p99 = percentile(bounds, latency, 0.99)
    queue_ns = model.get("queue_ns", 0) - (old or {}).get("queue_ns", 0)
    compute_ns = model.get("compute_ns", 0) - (old or {}).get("compute_ns", 0)
    count = max(1, success)
    return {
        "t": now,
        "requests_per_s": max(0, success) / elapsed,
        "failures_per_s": max(0, failure) / elapsed,
        "p50_ms": None if p50 is None else p50 * 1000,
        "p99_ms": None if p99 is None else p99 * 1000,
        "queue_ms": max(0, queue_ns) / count / 1e6 if success > 0 else None,
        "compute_ms": max(0, compute_ns) / count / 1e6 if success > 0 else None,
    }
