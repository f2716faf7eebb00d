"""Copies of models across a group whose instances keep their models within a budget.

An instance started with residency (a template's ``memory_budget``: ``serve
--model-residency lru``) loads a model when a request names it and unloads the least
recently used idle ones; callers send a model no instance holds to one instance only
(rendezvous on its name, client/client.py), so a cold model has one copy. This module
decides the other half, from what the collector reads of each instance every poll: the
hot models, the busiest of the group while their footprints fit in half the smallest
budget, are kept on every instance of the group: an instance that lacks one is asked to
load it (``POST /v2/repository/models/NAME/load``), one model per instance per round, so
a shift in what is hot moves a few copies a second and never thrashes. An instance keeps
a copy the repository API loaded for a while before its own policy may unload it
(``PLACED_S``, server/residency.py), and the plane loads each hot copy again every
``RENEW_S`` while it stays hot, so the copies of a group's hot models stay however the
instance's own requests rank them. What stops being hot is left to each instance's
policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

HOT_SHARE = 0.5  # of the smallest budget of a group: what its hot models may take together
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


def hot_models(rates: dict[str, float], footprints: dict[str, int], budget: int) -> list[str]:
    """The busiest models (asked for now), busiest first, while their footprints together
    fit in ``HOT_SHARE`` of ``budget``; a model whose footprint is unknown counts its
    share as nothing until it has loaded somewhere."""
    room = budget * HOT_SHARE
    hot = []
    for model, rate in sorted(rates.items(), key=lambda item: (-item[1], item[0])):
        if rate <= 0:
            break
        size = footprints.get(model, 0)
        if size > room:
            continue
        room -= size
        hot.append(model)
    return hot


def copies_to_make(
    instances: list[ResidentInstance], rates: dict[str, float]
) -> list[tuple[ResidentInstance, str]]:
    """The loads that put every hot model of a group on each of its instances: at most one
    per instance, its busiest missing model first."""
    hot = group_hot_models(instances, rates)
    loads = []
    for instance in instances:
        missing = [m for m in hot if m in instance.models and not instance.holds(m)]
        if missing:
            loads.append((instance, missing[0]))
    return loads


def group_hot_models(instances: list[ResidentInstance], rates: dict[str, float]) -> list[str]:
    """The group's hot models (``hot_models`` within its smallest budget)."""
    if not instances:
        return []
    footprints: dict[str, int] = {}
    for instance in instances:
        for model, row in instance.models.items():
            footprints[model] = max(footprints.get(model, 0), int(row.get("bytes") or 0))
    return hot_models(rates, footprints, min(i.budget for i in instances))


def renewals_due(
    instances: list[ResidentInstance],
    rates: dict[str, float],
    placed_at: dict[tuple[str, str], float],
    now: float,
) -> list[tuple[ResidentInstance, str]]:
    """The hot copies to load again: held, and last placed (``placed_at``: (instance,
    model) -> seconds) ``RENEW_S`` ago or more."""
    hot = group_hot_models(instances, rates)
    never = now - RENEW_S
    return [
        (instance, model)
        for instance in instances
        for model in hot
        if instance.holds(model) and now - placed_at.get((instance.name, model), never) >= RENEW_S
    ]


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
