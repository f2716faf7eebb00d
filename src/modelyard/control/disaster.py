"""Disaster recovery per group: what losing a data centre (or one queue) does to it.

For each group, ``evaluate`` takes the instances the loss takes away (those placed in
the lost data centre or queue), and asks whether the group's surviving placements can
take their replacements: each lost instance re-placed in a surviving data centre its
template already runs in (spread round robin, the next one tried when one is full),
within the quota's free cards of that data centre and GPU model and within its CPU and
memory (a quota's cores and memory are not per data centre: what the lost instances
held is free again). A group is whole when every replacement fits; degraded when some
do not (``capacity``: the fraction of its instances it keeps); lost when nothing of it
survives.

``after_loss`` is the same placement made real: once a place is declared lost
(``platform dr fail-over``, or the control plane seeing none of its instances
answer), the instances the spec asks for are the survivors plus the replacements
``evaluate`` placed, each at the next free index of its template in its new data
centre.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from modelyard import error_rules
from modelyard.control.ledger import (
    Ledger,
    PlannedInstance,
    Reservations,
    build_ledger,
    expand,
)
from modelyard.control.spec import Group, InstanceSpec, PlatformSpec, Service, Template
from modelyard.errors import ConfigError


@dataclass(slots=True)
class GroupRecovery:
    service: str
    group: str
    instances: int  # before the loss
    lost_instances: int
    lost_cards: int
    replaced: int  # lost instances the surviving data centres can take within quota
    shortfall: list[str] = field(default_factory=list)  # why the others cannot be placed
    placed: list[PlannedInstance] = field(default_factory=list)  # the replacements

    @property
    def surviving(self) -> int:
        return self.instances - self.lost_instances

    @property
    def state(self) -> str:
        if self.lost_instances == 0 or self.replaced == self.lost_instances:
            return "whole"
        return "lost" if self.surviving + self.replaced == 0 else "degraded"

    def capacity(self) -> float:
        """The fraction of the group's instances it has after the replacements it can get."""
        if not self.instances:
            return 1.0
        return (self.surviving + self.replaced) / self.instances

    def to_json(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "group": self.group,
            "state": self.state,
            "instances": self.instances,
            "lost_instances": self.lost_instances,
            "lost_cards": self.lost_cards,
            "replaced": self.replaced,
            "capacity": round(self.capacity(), 4),
            "shortfall": self.shortfall,
            "placed": dict(Counter(p.data_center for p in self.placed)),
        }


def against_peak(
    result: GroupRecovery, peak_in_flight: float | None, target_in_flight: float
) -> dict[str, Any]:
    """An autoscaling group's observed peak of requests in flight against what the instances
    left after the loss hold at the autoscaler's target (None: nothing observed yet)."""
    held = (result.surviving + result.replaced) * target_in_flight
    return {
        "observed_peak_in_flight": None if peak_in_flight is None else round(peak_in_flight, 2),
        "in_flight_held_after": round(held, 2),
        "holds_peak": None if peak_in_flight is None else held >= peak_in_flight,
    }


def recovery(
    spec: PlatformSpec,
    lose: str,
    target: str | None = None,
    *,
    where_flag: str = "--lose",
    replicas: dict[str, int] | None = None,
    already_lost: Collection[str] = (),
    reserved: Reservations | None = None,
) -> list[GroupRecovery]:
    """``evaluate``, with a line for a place or group the spec does not have (``where_flag``:
    how the caller names the place, ``--lose`` or ``?lose=``)."""
    places = {q.data_center for q in spec.queues.values()} | set(spec.queues)
    if lose not in places:
        raise ConfigError.of(
            error_rules.DR_PLACE,
            f"'{lose}' is neither a data centre nor a queue of the spec",
            where=f"{where_flag} one of {', '.join(sorted(places))}",
        )
    results = evaluate(spec, lose, target, replicas, reserved, already_lost)
    if target is not None and not results:
        raise ConfigError.of(error_rules.DR_GROUP, f"no group {target} in the spec")
    return results


def after_loss(
    spec: PlatformSpec,
    lost: Collection[str],
    replicas: dict[str, int] | None = None,
    reserved: Reservations | None = None,
) -> tuple[list[PlannedInstance], list[GroupRecovery]]:
    """The instances the spec asks for once the ``lost`` places (data centres or queues) are
    gone: the survivors and the replacements the surviving data centres' quotas hold (less
    the cards releases in progress reserve); and each group's recovery."""
    planned = expand(spec, replicas)
    if not lost:
        return planned, []
    results = evaluate(spec, frozenset(lost), None, replicas, reserved)
    survivors = [p for p in planned if not _in(p, lost)]
    return survivors + [p for result in results for p in result.placed], results


def _in(planned: PlannedInstance, places: Collection[str]) -> bool:
    return planned.data_center in places or planned.queue in places


def evaluate(
    spec: PlatformSpec,
    lose: str | frozenset[str],
    target: str | None = None,
    replicas: dict[str, int] | None = None,
    reserved: Reservations | None = None,
    already_lost: Collection[str] = (),
) -> list[GroupRecovery]:
    """Each group's recovery (or only ``target``, ``SERVICE/GROUP``) from losing ``lose``:
    a data centre or a queue (or several); ``replicas``: the autoscaler's, where they differ
    from the spec's; ``reserved``: cards releases in progress hold; ``already_lost``: places
    declared lost before, whose instances already run elsewhere (``after_loss``) and
    which take nothing."""
    lost = frozenset({lose}) if isinstance(lose, str) else lose
    planned = (
        after_loss(spec, already_lost, replicas, reserved)[0]
        if already_lost
        else expand(spec, replicas)
    )
    free = _FreeCapacity.of(build_ledger(spec, reserved, planned))
    quota_of = {service.name: service.quota for service in spec.services.values()}
    for gone in planned:  # what the lost instances held is free again
        if _in(gone, lost) and gone.spec is not None:
            free.give_back(quota_of[gone.service], gone.spec)
    placing = _Placing(
        lost,
        lost | frozenset(already_lost),  # no replacement goes there
        free,
        Counter((p.service, p.group, p.template, p.data_center) for p in planned),
    )
    return [
        placing.recover(service, group, planned)
        for service in spec.services.values()
        for group in service.groups.values()
        if target is None or target == f"{service.name}/{group.name}"
    ]


@dataclass(slots=True)
class _FreeCapacity:
    """What each quota has free: cards per (quota, data centre, GPU model); cores and
    memory per quota (None: the quota does not limit them)."""

    cards: dict[tuple[str, str, str], int]
    cpu: dict[str, float | None]
    memory: dict[str, float | None]

    @classmethod
    def of(cls, ledger: Ledger) -> _FreeCapacity:
        return cls(
            {(row.quota, row.data_center, row.gpu_model): row.free for row in ledger.rows},
            _free_of(ledger.cpu_by_quota),
            _free_of(ledger.memory_by_quota),
        )

    def give_back(self, quota: str, spec: InstanceSpec) -> None:
        """A lost instance's cores and memory (its cards were in the lost place)."""
        self._add(quota, spec.cpu_cores, spec.memory_gb)

    def take(self, quota: str, dc: str, spec: InstanceSpec) -> None:
        if spec.cards:
            self.cards[(quota, dc, spec.gpu_model or "")] -= spec.cards
        self._add(quota, -spec.cpu_cores, -spec.memory_gb)

    def _add(self, quota: str, cores: float, memory_gb: float) -> None:
        cpu = self.cpu.get(quota)
        if cpu is not None:
            self.cpu[quota] = cpu + cores
        memory = self.memory.get(quota)
        if memory is not None:
            self.memory[quota] = memory + memory_gb

    def cannot_hold(self, quota: str, dc: str, spec: InstanceSpec) -> str:
        """Why the quota cannot take one more instance of ``spec`` in ``dc`` ('' if it can)."""
        if spec.cards:
            free = self.cards.get((quota, dc, spec.gpu_model or ""), 0)
            if free < spec.cards:
                model = spec.gpu_model
                return f"quota {quota} has {free} free {model} cards in {dc}, needs {spec.cards}"
        cpu = self.cpu.get(quota)
        if cpu is not None and cpu < spec.cpu_cores:
            return f"quota {quota} has {cpu:g} free cores, needs {spec.cpu_cores}"
        memory = self.memory.get(quota)
        if memory is not None and memory < spec.memory_gb:
            return f"quota {quota} has {memory:g} GB free memory, needs {spec.memory_gb}"
        return ""


def _free_of(used_hard: dict[str, tuple[float, float | None]]) -> dict[str, float | None]:
    return {q: (hard - used) if hard is not None else None for q, (used, hard) in used_hard.items()}


@dataclass(slots=True)
class _Placing:
    """Replacements placed group by group, each taking from the same free capacity."""

    lost: frozenset[str]
    excluded: frozenset[str]  # places no replacement goes to
    free: _FreeCapacity
    taken: Counter[tuple[str, str, str, str]]  # instances per (service, group, template, dc)

    def recover(
        self, service: Service, group: Group, planned: list[PlannedInstance]
    ) -> GroupRecovery:
        mine = [p for p in planned if p.service == service.name and p.group == group.name]
        taken_away = [p for p in mine if _in(p, self.lost)]
        recovery = GroupRecovery(
            service.name,
            group.name,
            len(mine),
            len(taken_away),
            sum(p.cards for p in taken_away),
            0,
        )
        turns: Counter[str] = Counter()  # round robin per template
        for instance in taken_away:
            placed = self._replace(service, group.templates[instance.template], instance, turns)
            if isinstance(placed, str):
                recovery.shortfall.append(f"{instance.name}: {placed}")
            else:
                recovery.replaced += 1
                recovery.placed.append(placed)
        return recovery

    def _replace(
        self, service: Service, template: Template, instance: PlannedInstance, turns: Counter[str]
    ) -> PlannedInstance | str:
        """The replacement of ``instance``, or why there is none."""
        places = [dc for dc, queue in sorted(template.queues.items())
                  if dc not in self.excluded and queue not in self.excluded]  # fmt: skip
        spec_of = instance.spec
        if not places or spec_of is None:
            return f"template {template.name} runs in no other data centre"
        start = turns[template.name]
        turns[template.name] += 1
        reasons = []
        for step in range(len(places)):  # round robin, then the next with room
            dc = places[(start + step) % len(places)]
            why = self.free.cannot_hold(service.quota, dc, spec_of)
            if not why:
                break
            reasons.append(why)
        else:
            return "; ".join(reasons)
        self.free.take(service.quota, dc, spec_of)
        slot = (service.name, instance.group, template.name, dc)
        placed = PlannedInstance(*slot, template.queues[dc], self.taken[slot], spec_of)
        self.taken[slot] += 1
        return placed
