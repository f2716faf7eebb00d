"""Copies of models across a group whose instances keep their models within a budget.

An instance started with residency (a template's ``memory_budget``: ``serve
--model-residency lru``) loads a model when a request names it and unloads the least
recently used idle ones; callers send a model no instance holds to one instance only
(rendezvous on its name, client/client.py), so a cold model has one copy. This module
decides the other half, from what the collector reads of each instance every poll:

* each model's request rate is what the group's instances counted of it over the last
  ``WINDOW_S`` (their residency rows' running ``requests``, which hold across loads and
  unloads);
* a model becomes hot when it draws ``HOT_SHARE`` of the group's requests and stays hot
  until it draws less than ``COOL_SHARE`` (so a model near the line does not come and go
  with each second's draw), and of those the busiest are hot while their footprints
  together fit in ``BUDGET_SHARE`` of the smallest budget;
* every instance that lacks a hot model is asked to load it (``POST
  /v2/repository/models/NAME/load``), all it lacks in one round; an instance keeps a
  copy so loaded for ``PLACED_S`` before its own policy may unload it (server/residency.py),
  and the plane loads each hot copy again every ``RENEW_S`` while it stays hot;
* a model that is not hot keeps one copy: the copies the plane placed are unloaded
  (``POST .../unload``) from every instance but one, the copy callers made if there is
  one (where rendezvous sends it), else the one asked for most. Old hot models' kept
  copies and the new hot models' fit beside each other (each set within half the smallest
  budget), so a shift in what is hot does not make an instance unload a hot copy.
"""

from __future__ import annotations

import statistics
import zlib
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

BUDGET_SHARE = 0.5  # of the smallest budget of a group: what its hot models may take together
HOT_SHARE = 0.05  # of the group's requests: a model drawing this much becomes hot
COOL_SHARE = 0.025  # a hot model drawing less than this is hot no more
WINDOW_S = 5.0  # the rates are of the requests over this many seconds
# a hot model's copy is loaded again this often (an instance keeps a placed copy 30 s)
RENEW_S = 10.0


@dataclass(slots=True)
class ResidentInstance:
    """One instance with residency, as its live stats say."""

    name: str
    service: str
    group: str
    http: str
    budget: int
    held: int
    models: dict[str, dict[str, Any]] = field(default_factory=dict)  # its residency rows

    @classmethod
    def from_stats(
        cls, name: str, service: str, group: str, http: str, stats: dict[str, Any]
    ) -> ResidentInstance | None:
        residency = (stats.get("instance") or {}).get("residency")
        if not residency:
            return None
        return cls(
            name,
            service,
            group,
            http,
            int(residency["budget_bytes"]),
            int(residency["held_bytes"]),
            dict(residency.get("models", {})),
        )

    def holds(self, model: str) -> bool:
        return bool(self.models.get(model, {}).get("resident"))

    def pins(self, model: str) -> bool:
        return bool(self.models.get(model, {}).get("pinned"))


class RequestWindow:
    """Each model's requests a second over the last ``seconds``, from the running counts
    of a group's instances (polled: ``observe`` each poll)."""

    def __init__(self, seconds: float = WINDOW_S) -> None:
        self.seconds = seconds
        self._counts: dict[tuple[str, str], int] = {}  # (instance, model) -> its count
        # per poll: when, and the requests counted since the poll before per (instance, model)
        self._points: deque[tuple[float, dict[tuple[str, str], int]]] = deque()
        self._since: float | None = None  # when the first kept point's interval began

    def observe(self, instances: Iterable[ResidentInstance], now: float) -> None:
        new: dict[tuple[str, str], int] = {}
        for instance in instances:
            for model, row in instance.models.items():
                key = (instance.name, model)
                count = int(row.get("requests") or 0)
                before = self._counts.get(key)
                self._counts[key] = count
                if before is not None and count > before:  # less: the instance restarted
                    new[key] = count - before
        if self._since is None:  # the first poll: what the counts start from
            self._since = now
            return
        self._points.append((now, new))
        while len(self._points) > 1 and self._points[0][0] <= now - self.seconds:
            self._since = self._points.popleft()[0]

    def rates(self, instance: str | None = None) -> dict[str, float]:
        """Requests a second per model over the window (on ``instance`` alone, given one)."""
        if not self._points or self._since is None:
            return {}
        span = max(self._points[-1][0] - self._since, 1e-3)
        totals: dict[str, int] = {}
        for _, new in self._points:
            for (name, model), count in new.items():
                if instance is None or name == instance:
                    totals[model] = totals.get(model, 0) + count
        return {model: count / span for model, count in totals.items()}


def hot_models(
    rates: dict[str, float],
    footprints: dict[str, int],
    budget: int,
    hot_now: Collection[str] = (),
) -> list[str]:
    """The hot models, busiest first: those drawing ``HOT_SHARE`` of the requests (those
    hot now: ``COOL_SHARE``), while their footprints together fit in ``BUDGET_SHARE`` of
    ``budget``; a model whose footprint is unknown counts as nothing until it has loaded
    somewhere."""
    total = sum(rates.values())
    if total <= 0:
        return []
    room = budget * BUDGET_SHARE
    hot = []
    for model, rate in sorted(rates.items(), key=lambda item: (-item[1], item[0])):
        if rate < total * (COOL_SHARE if model in hot_now else HOT_SHARE):
            continue
        size = footprints.get(model, 0)
        if size > room:
            continue
        room -= size
        hot.append(model)
    return hot


def group_hot_models(
    instances: list[ResidentInstance], rates: dict[str, float], hot_now: Collection[str] = ()
) -> list[str]:
    """The group's hot models (``hot_models`` within its smallest budget), each model's
    footprint the median of what the instances that know it measured (one load measured
    beside busy requests reads high: 7 MB on one instance, 32 MB on the next)."""
    if not instances:
        return []
    measured: dict[str, list[int]] = {}
    for instance in instances:
        for model, row in instance.models.items():
            if row.get("bytes"):
                measured.setdefault(model, []).append(int(row["bytes"]))
    footprints = {model: statistics.median_low(sizes) for model, sizes in measured.items()}
    return hot_models(rates, footprints, min(i.budget for i in instances), hot_now)


def copies_to_make(
    instances: list[ResidentInstance], hot: list[str]
) -> list[tuple[ResidentInstance, str]]:
    """The loads that put every hot model (busiest first) on each instance that serves it."""
    return [
        (instance, model)
        for instance in instances
        for model in hot
        if model in instance.models and not instance.holds(model)
    ]


def renewals_due(
    instances: list[ResidentInstance],
    hot: list[str],
    placed_at: dict[tuple[str, str], float],
    now: float,
) -> list[tuple[ResidentInstance, str]]:
    """The hot copies to load again: held, and last placed (``placed_at``: (instance,
    model) -> seconds) ``RENEW_S`` ago or more."""
    never = now - RENEW_S
    return [
        (instance, model)
        for instance in instances
        for model in hot
        if instance.holds(model) and now - placed_at.get((instance.name, model), never) >= RENEW_S
    ]


def copies_to_drop(
    instances: list[ResidentInstance],
    hot: Collection[str],
    placed_at: dict[tuple[str, str], float],
    window: RequestWindow,
) -> list[tuple[ResidentInstance, str]]:
    """The copies the plane placed of models not hot, but one of each model: the one kept
    is a copy callers made (not in ``placed_at``) if there is one, else the one asked for
    most over the window (ties spread over the instances by a hash of model and
    instance); a pinned copy is never dropped, and counts as the one kept."""
    by_name = {i.name: i for i in instances}
    drops = []
    for model, holders in copies(instances).items():
        if model in hot or len(holders) < 2:
            continue
        ranked = sorted(
            (
                not by_name[name].pins(model),
                (name, model) in placed_at,
                -window.rates(name).get(model, 0.0),
                zlib.crc32(f"{model}@{name}".encode()),  # ties: spread over the instances
                name,
            )
            for name in holders
        )
        for *_, name in ranked[1:]:
            if (name, model) in placed_at and not by_name[name].pins(model):
                drops.append((by_name[name], model))
    return drops


def by_group(
    instances: Iterable[ResidentInstance],
) -> dict[tuple[str, str], list[ResidentInstance]]:
    grouped: dict[tuple[str, str], list[ResidentInstance]] = {}
    for instance in instances:
        grouped.setdefault((instance.service, instance.group), []).append(instance)
    return grouped


def copies(instances: Iterable[ResidentInstance]) -> dict[str, list[str]]:
    """Per model, the instances that hold it now."""
    holders: dict[str, list[str]] = {}
    for instance in instances:
        for model, row in instance.models.items():
            if row.get("resident"):
                holders.setdefault(model, []).append(instance.name)
    return holders
