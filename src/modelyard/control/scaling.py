"""Autoscaling that acts: a template's decision becomes replicas, and replicas become processes.

The autoscaler (``control/autoscale.py``) decides in units of the spec's
``replicas``: instances per data centre. Each template of an autoscaling
group is decided on its own load (a group's GPU and CPU templates see
different traffic), under the group's one rule: its observation is the
in-flight requests of the template's instances divided by the instances one
replica adds (one per data centre), so ``target_in_flight`` stays per
instance. The decision is clamped by what the quota can hold: the largest
replica count whose ledger breaks no quota rule (the quota's cards, cores and
memory, and the group's card share), with the reservations of releases in
progress counted. Functions that take ``template=None`` act on every template
of the group at once (``autoscale explain``'s simulation and the cluster's
adoption of a group).
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
from modelyard.control.disaster import after_loss
from modelyard.control.ledger import Finding, validate
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


def instances_per_replica(group: Group, template: str | None = None) -> int:
    """The instances one replica adds: one per data centre of the template (of each
    template, for ``None``)."""
    chosen = [group.templates[template]] if template else group.templates.values()
    return max(1, sum(len(t.queues) for t in chosen))


def template_keys(service: str, group: Group, template: str | None = None) -> list[str]:
    names = [template] if template else list(group.templates)
    return [f"{service}/{group.name}/{name}" for name in names]


def current_replicas(
    spec: PlatformSpec, state: State, service: str, group: Group, template: str | None = None
) -> int:
    """The template's replicas now (the largest of the group's, for ``None``): the
    autoscaler's, else the spec's."""
    overrides = effective_replicas(spec, state)
    counts = [
        overrides.get(key, group.templates[key.rsplit("/", 1)[1]].replicas)
        for key in template_keys(service, group, template)
    ]
    return max(counts, default=0)


def quota_bound(
    spec: PlatformSpec,
    state: State,
    service: str,
    group: Group,
    ceiling: int,
    template: str | None = None,
) -> tuple[int | None, Finding | None]:
    """The most replicas (up to ``ceiling``) the quotas hold for the template (every
    template, for ``None``) with the rest as it is, and what one more would break (the
    quota's cards, cores or memory, or the group's card share: the finding with its
    numbers); None, None when ``ceiling`` itself fits."""
    base = effective_replicas(spec, state)
    best = None
    for replicas in range(0, ceiling + 1):
        trial = {**base, **{key: replicas for key in template_keys(service, group, template)}}
        found = validate(spec, reserved=state.reserved(), replicas=trial)
        breaking = [f for f in found if f.code in QUOTA_CODES]
        if breaking:
            return best, breaking[0]
        best = replicas
    return best, None


def record_replicas(
    state: State, service: str, group: Group, replicas: int, template: str | None = None
) -> None:
    """The template's replicas in the state: the ledger counts them, the autoscaler starts
    there."""
    for template_key in template_keys(service, group, template):
        state.replicas[template_key] = replicas
    state.save()


class GroupScaler(Protocol):
    """What makes a template's replicas so on a cluster
    (``kubernetes_scaler.DeploymentScaler``); ``template=None``: each of the group's."""

    def scale(
        self,
        spec: PlatformSpec,
        service: str,
        group: Group,
        replicas: int,
        template: str | None = None,
    ) -> list[str]: ...

    def replicas(
        self, spec: PlatformSpec, service: str, group: Group, template: str | None = None
    ) -> list[int | None]: ...

    def scale_deployments(
        self, spec: PlatformSpec, counts: dict[tuple[str, str, str, str], int]
    ) -> list[str]:
        """Each (service, group, template, data centre)'s Deployment to its count."""
        ...


def scale_on_cluster(
    spec: PlatformSpec,
    state: State,
    service: str,
    group: Group,
    replicas: int,
    numbers: dict[str, Any],
    scaler: GroupScaler,
    template: str | None = None,
) -> list[str]:
    """Set the template's replicas in the cluster, then in the ledger's state; returns what
    was done. The cluster runs and heals the pods: nothing starts here."""
    before = current_replicas(spec, state, service, group, template)
    done = scaler.scale(spec, service, group, replicas, template)
    record_replicas(state, service, group, replicas, template)
    key = f"{service}/{group.name}"
    numbers = {**numbers, "template": template} if template else numbers
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
    template: str | None = None,
) -> list[str]:
    """Set the template's replicas (each template's, for ``None``) and start or stop its
    instances to match; returns what was done.

    Only this template's instances change: a spec edited since the last apply
    is left for ``plan`` / ``apply``, which the operator runs.
    """
    key = f"{service}/{group.name}"
    before = current_replicas(spec, state, service, group, template)
    for template_key in template_keys(service, group, template):
        state.replicas[template_key] = replicas
    plan = make_plan(spec, spec_file, state)
    if plan.findings:
        raise ValueError("; ".join(f.line() for f in plan.findings))
    # only more or fewer slots: an instance whose template changed is plan / apply's to replace
    mine = {template} if template else set(group.templates)
    members = {
        slot_of(i): i
        for i in state.stable()
        if f"{i.service}/{i.group}" == key and i.template in mine
    }
    wanted = {
        (p.service, p.group, p.template, p.data_center, p.index)
        for p in after_loss(spec, state.lost, effective_replicas(spec, state), state.reserved())[0]
        if f"{p.service}/{p.group}" == key and p.template in mine
    }
    plan.start = sorted(slot for slot in wanted if slot not in members)
    plan.stop = sorted(i.name for slot, i in members.items() if slot not in wanted)
    spec_before = state.spec_hash
    done = apply_plan(spec, state, plan)
    state.spec_hash = spec_before  # the rest of an edited spec waits for plan / apply
    state.save()
    numbers = {**numbers, "template": template} if template else numbers
    record(state, key, "autoscale", {"replicas": before}, {"replicas": replicas}, numbers)
    return done
