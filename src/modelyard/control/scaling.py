"""Autoscaling that acts: a group's decision becomes replicas, and replicas become processes.

The autoscaler (``control/autoscale.py``) decides in units of the spec's
``replicas``: instances per template and data centre. A group's observation
is its total in-flight requests divided by the instances one replica adds
(one per template and data centre), so ``target_in_flight`` stays per
instance. The decision is clamped by what the quota can hold: the largest
replica count whose ledger breaks no quota rule, with the reservations of
releases in progress counted.
"""

from __future__ import annotations

from typing import Any, Protocol

from modelyard.control.apply import (
    State,
    apply_plan,
    effective_replicas,
    make_plan,
    slot_of,
)
from modelyard.control.autoscale import AutoscaleRule
from modelyard.control.ledger import Finding, expand, validate
from modelyard.control.release import record
from modelyard.control.spec import Group, PlatformSpec

QUOTA_CODES = frozenset(
    {"QUOTA_EXCEEDED", "GROUP_CARDS_EXCEEDED", "QUOTA_CPU_EXCEEDED", "QUOTA_MEMORY_EXCEEDED"}
)


def rule_of(group: Group) -> AutoscaleRule:
    raw = group.autoscaling
    return AutoscaleRule(
        min_replicas=int(raw.get("min", 1)),
        max_replicas=int(raw.get("max", 10)),
        target_in_flight=float(raw.get("target_in_flight", 8)),
        stable_window_s=float(raw.get("stable_window_s", 60)),
        panic_window_s=float(raw.get("panic_window_s", 6)),
        panic_threshold=float(raw.get("panic_threshold", 2)),
    )


def checked_rule(group: Group) -> AutoscaleRule:
    """``rule_of``, refused with a ValueError when its numbers cannot make decisions (an
    edit of a running spec is not validated as a whole)."""
    rule = rule_of(group)
    if not 0 <= rule.min_replicas <= rule.max_replicas:
        raise ValueError(f"min {rule.min_replicas} and max {rule.max_replicas} make no range")
    if not rule.target_in_flight > 0:
        raise ValueError(f"target_in_flight {rule.target_in_flight} is not positive")
    if not (rule.stable_window_s > 0 and rule.panic_window_s > 0):
        raise ValueError("the windows must be positive seconds")
    return rule


def instances_per_replica(group: Group) -> int:
    return max(1, sum(len(t.queues) for t in group.templates.values()))


def template_keys(service: str, group: Group) -> list[str]:
    return [f"{service}/{group.name}/{name}" for name in group.templates]


def current_replicas(spec: PlatformSpec, state: State, service: str, group: Group) -> int:
    """The group's replicas now: the autoscaler's, else the largest template's in the spec."""
    overrides = effective_replicas(spec, state)
    counts = [
        overrides.get(key, group.templates[key.rsplit("/", 1)[1]].replicas)
        for key in template_keys(service, group)
    ]
    return max(counts, default=0)


def quota_max(
    spec: PlatformSpec, state: State, service: str, group: Group, ceiling: int
) -> int | None:
    """The most replicas (up to ``ceiling``) the quotas hold; None if even 0 breaks one."""
    return quota_bound(spec, state, service, group, ceiling)[0]


def quota_bound(
    spec: PlatformSpec, state: State, service: str, group: Group, ceiling: int
) -> tuple[int | None, Finding | None]:
    """The most replicas (up to ``ceiling``) the quotas hold, and what one more would break
    (the quota's cards, cores or memory, or the group's card share: the finding with its
    numbers); None, None when ``ceiling`` itself fits."""
    base = effective_replicas(spec, state)
    best = None
    for replicas in range(0, ceiling + 1):
        trial = {**base, **{key: replicas for key in template_keys(service, group)}}
        found = validate(spec, reserved=state.reserved(), replicas=trial)
        breaking = [f for f in found if f.code in QUOTA_CODES]
        if breaking:
            return best, breaking[0]
        best = replicas
    return best, None


def record_replicas(state: State, service: str, group: Group, replicas: int) -> None:
    """The group's replicas in the state: the ledger counts them, the autoscaler starts there."""
    for template_key in template_keys(service, group):
        state.replicas[template_key] = replicas
    state.save()


class GroupScaler(Protocol):
    """What makes a group's replicas so on a cluster (``kubernetes_scaler.DeploymentScaler``)."""

    def scale(self, spec: PlatformSpec, service: str, group: Group, replicas: int) -> list[str]: ...

    def replicas(self, spec: PlatformSpec, service: str, group: Group) -> list[int | None]: ...


def scale_on_cluster(
    spec: PlatformSpec,
    state: State,
    service: str,
    group: Group,
    replicas: int,
    numbers: dict[str, Any],
    scaler: GroupScaler,
) -> list[str]:
    """Set the group's replicas in the cluster, then in the ledger's state; returns what was
    done. The cluster runs and heals the pods: nothing starts here."""
    before = current_replicas(spec, state, service, group)
    done = scaler.scale(spec, service, group, replicas)
    record_replicas(state, service, group, replicas)
    key = f"{service}/{group.name}"
    record(state, key, "autoscale", {"replicas": before}, {"replicas": replicas}, numbers)
    return done


def scale_group(
    spec: PlatformSpec,
    spec_file: Any,
    state: State,
    service: str,
    group: Group,
    replicas: int,
    numbers: dict[str, Any],
) -> list[str]:
    """Set the group's replicas and start or stop instances to match; returns what was done.

    Only this group's instances change: a spec edited since the last apply
    is left for ``plan`` / ``apply``, which the operator runs.
    """
    key = f"{service}/{group.name}"
    before = current_replicas(spec, state, service, group)
    for template_key in template_keys(service, group):
        state.replicas[template_key] = replicas
    plan = make_plan(spec, spec_file, state)
    if plan.findings:
        raise ValueError("; ".join(f.line() for f in plan.findings))
    # only more or fewer slots: an instance whose template changed is plan / apply's to replace
    members = {slot_of(i): i for i in state.stable() if f"{i.service}/{i.group}" == key}
    wanted = {
        (p.service, p.group, p.template, p.data_center, p.index)
        for p in expand(spec, effective_replicas(spec, state))
        if f"{p.service}/{p.group}" == key
    }
    plan.start = sorted(slot for slot in wanted if slot not in members)
    plan.stop = sorted(i.name for slot, i in members.items() if slot not in wanted)
    spec_before = state.spec_hash
    done = apply_plan(spec, state, plan)
    state.spec_hash = spec_before  # the rest of an edited spec waits for plan / apply
    state.save()
    record(state, key, "autoscale", {"replicas": before}, {"replicas": replicas}, numbers)
    return done
