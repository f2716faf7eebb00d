"""Declaring a data centre or queue lost, or back, and making it so.

``fail_over`` (``platform dr fail-over --lose PLACE``, the API, or the control plane
when none of a data centre's instances answered for a while) records the place in
the state's ``lost``; the plan then asks for the survivors plus the replacements
``disaster.after_loss`` places in the surviving data centres within quota (less what
releases reserve). ``relocate`` starts those, then stops the lost place's instances,
canaries included; each group it touched records a ``dr fail-over`` event with what
started, what stopped and what could not be placed. ``restore`` undoes it: the
place's instances start again and the replacements stop.

Both are idempotent: run again after a failure (a replacement that did not start),
they make what is left so; a failure is recorded in the events of the groups the
place holds before it is raised.

On a cluster (``fail_over_on_cluster``, ``restore_on_cluster``) the same placement
becomes each Deployment's replicas (``cluster_replicas``): 0 in the lost place, the
survivors plus the replacements in each surviving data centre's, patched through
the Deployments' scale.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from modelyard import error_rules
from modelyard.control.apply import (
    Slot,
    State,
    apply_plan,
    effective_replicas,
    make_plan,
    planned_slot,
    slot_of,
)
from modelyard.control.disaster import GroupRecovery, after_loss, recovery
from modelyard.control.ledger import expand
from modelyard.control.release import record
from modelyard.control.scaling import GroupScaler
from modelyard.control.spec import PlatformSpec
from modelyard.errors import ConfigError, ModelyardError

DETECTED_STOP_S = 2.0  # a place nothing reached for a while: its requests are gone already
DECLARED_STOP_S = 15.0  # a declared loss (a drill, an evacuation): requests drain as usual


def fail_over(
    spec: PlatformSpec, spec_file: Path, state: State, place: str, how: str = "declared"
) -> list[str]:
    """Declare ``place`` lost (``how`` says why: "declared", or what the control plane saw)
    and make it so; the caller holds the state's lock. A place already lost is made so
    again (what a failed attempt left)."""
    _declare_lost(spec, state, place, how)
    stop_after = DECLARED_STOP_S if how == "declared" else DETECTED_STOP_S
    return _relocate(spec, spec_file, state, place, "dr fail-over", stop_after)


def restore(spec: PlatformSpec, spec_file: Path, state: State, place: str) -> list[str]:
    """``place`` is back: its instances start and the replacements stop."""
    check_place(spec, state, place)
    state.lost.pop(place, None)
    return _relocate(spec, spec_file, state, place, "dr restore", DECLARED_STOP_S)


def _declare_lost(spec: PlatformSpec, state: State, place: str, how: str) -> None:
    check_place(spec, state, place)
    if place not in state.lost:
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        state.lost[place] = {"at": at, "how": how}


def check_place(spec: PlatformSpec, state: State, place: str) -> None:
    """A place the spec has, or one declared lost before the spec dropped it."""
    if place not in state.lost:
        recovery(spec, place, where_flag="the place:")  # an unknown place is its error line


def _relocate(
    spec: PlatformSpec,
    spec_file: Path,
    state: State,
    place: str,
    action: str,
    stop_after: float,
) -> list[str]:
    lost = {"lost": place, **state.lost[place]} if place in state.lost else {"lost": place}
    before = {i.name: f"{i.service}/{i.group}" for i in state.instances}
    try:
        done, recoveries = relocate(spec, spec_file, state, place, stop_after)
    except ModelyardError as error:
        for key in _groups_in(spec, place):
            record(state, key, f"{action} failed", lost, None, {"error": error.line()})
        raise
    after = {i.name: f"{i.service}/{i.group}" for i in state.instances}
    started, stopped = set(after) - set(before), set(before) - set(after)
    by_group = {f"{r.service}/{r.group}": r for r in recoveries}
    for key in sorted({after[n] for n in started} | {before[n] for n in stopped}):
        numbers: dict[str, Any] = {
            "started": sorted(n for n in started if after[n] == key),
            "stopped": sorted(n for n in stopped if before[n] == key),
        }
        if action == "dr restore":
            record(state, key, action, lost, {"restored": place}, numbers)
            continue
        found = by_group.get(key)
        summary = found.to_json() if found is not None else {"placed": {}}
        record(state, key, action, lost, {"placed": summary["placed"]}, {**numbers, **summary})
    return done


def _groups_in(spec: PlatformSpec, place: str) -> list[str]:
    """SERVICE/GROUP of each group with a template placed in ``place``."""
    return sorted(
        f"{service.name}/{group.name}"
        for service in spec.services.values()
        for group in service.groups.values()
        if any(
            place in (dc, queue)
            for template in group.templates.values()
            for dc, queue in template.queues.items()
        )
    )


def relocate(
    spec: PlatformSpec, spec_file: Path, state: State, place: str, stop_after: float
) -> tuple[list[str], list[GroupRecovery]]:
    """Make the loss or the return of ``place`` (its entry in ``state.lost`` already set or
    removed) so: the replacements the surviving data centres hold start, then the instances
    in a lost place (canaries too) and replacements no longer wanted stop, each given
    ``stop_after`` seconds to drain. Only those change: the rest of an edited spec waits
    for plan / apply. Returns what was done and each group's recovery from what is lost."""
    replicas = effective_replicas(spec, state)
    normal = expand(spec, replicas)
    queues = {planned_slot(p): p.queue for p in normal}
    recoveries = after_loss(spec, state.lost, replicas, state.reserved())[1]
    plan = make_plan(spec, spec_file, state)
    if plan.findings:
        raise ConfigError.of(
            error_rules.DR_SPEC,
            f"the spec breaks {len(plan.findings)} ledger rule(s): {plan.findings[0].line()}",
            where=f"modelyard platform validate -f {spec_file}",
        )

    def touched(slot: Slot) -> bool:  # a replacement, or a slot in the place itself
        return slot not in queues or place in (slot[3], queues[slot])

    stopping = {i.name for i in state.stable() if touched(slot_of(i))}
    plan.start = [slot for slot in plan.start if touched(slot)]
    plan.stop = [name for name in plan.stop if name in stopping]
    if place in state.lost:  # a lost place's canaries go too; their release goes on
        plan.stop += [
            i.name
            for i in state.instances
            if i.role == "canary" and place in (i.data_center, i.queue)
        ]
    spec_before = state.spec_hash
    done = apply_plan(spec, state, plan, stop_after)
    state.spec_hash = spec_before
    state.save()
    return done, recoveries


DeploymentKey = tuple[str, str, str, str]  # service, group, template, data centre


def cluster_replicas(
    spec: PlatformSpec, state: State
) -> tuple[dict[DeploymentKey, int], list[GroupRecovery]]:
    """On a cluster: the pods each template's Deployment in each data centre holds with the
    state's lost places gone (none there) and their replacements placed in the surviving
    data centres within quota, as ``relocate`` places instances on one machine; and each
    group's recovery."""
    replicas = effective_replicas(spec, state)
    planned, recoveries = after_loss(spec, state.lost, replicas, state.reserved())
    counts = {
        (service.name, group.name, template.name, dc): 0
        for service in spec.services.values()
        for group in service.groups.values()
        for template in group.templates.values()
        if template.spec is not None
        for dc in template.queues
    }
    for instance in planned:
        key = (instance.service, instance.group, instance.template, instance.data_center)
        if key in counts:
            counts[key] += 1
    return counts, recoveries


def fail_over_on_cluster(
    spec: PlatformSpec, state: State, scaler: GroupScaler, place: str, how: str = "declared"
) -> list[str]:
    """``fail_over`` on a cluster: the Deployments' scale, each as ``cluster_replicas``
    says. The place is recorded lost first, so running it again finishes a failed one."""
    _declare_lost(spec, state, place, how)
    state.save()
    return _rescale(spec, state, scaler, place, "dr fail-over")


def restore_on_cluster(
    spec: PlatformSpec, state: State, scaler: GroupScaler, place: str
) -> list[str]:
    check_place(spec, state, place)
    lost = state.lost.pop(place, None)
    try:
        done = _rescale(spec, state, scaler, place, "dr restore")
    except ModelyardError:
        if lost is not None:  # still lost: the Deployments hold the fail-over's counts
            state.lost[place] = lost
        raise
    state.save()
    return done


def _rescale(
    spec: PlatformSpec, state: State, scaler: GroupScaler, place: str, action: str
) -> list[str]:
    lost = {"lost": place, **state.lost[place]} if place in state.lost else {"lost": place}
    counts, recoveries = cluster_replicas(spec, state)
    try:
        done = scaler.scale_deployments(spec, counts)
    except ModelyardError as error:
        for key in _groups_in(spec, place):
            record(state, key, f"{action} failed", lost, None, {"error": error.line()})
        raise
    by_group = {f"{r.service}/{r.group}": r for r in recoveries}
    for key in _groups_in(spec, place):
        deployments = {
            f"{template}/{dc}": count
            for (service, group, template, dc), count in sorted(counts.items())
            if f"{service}/{group}" == key
        }
        if action == "dr restore":
            record(state, key, action, lost, {"restored": place}, {"replicas": deployments})
            continue
        found = by_group.get(key)
        summary = found.to_json() if found is not None else {"placed": {}}
        numbers = {"replicas": deployments, **summary}
        record(state, key, action, lost, {"placed": summary["placed"]}, numbers)
    return done
