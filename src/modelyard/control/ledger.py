"""The resource ledger and the platform's rules, as pure functions of a spec.

Cards are counted from instances, never from queues: total cards = Σ over
instances of the cards in each instance's spec. The instance count and the
GPU-instance count are kept apart (CPU-only instances count only in the
first). A quota is hard / used / reserved / free per data centre and GPU
model; ``reserved`` holds surge cards of releases in progress.

``validate`` reports every broken rule with a stable code, the numbers
(requested / used / limit) and the file:line to change.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from modelyard.control.spec import Group, InstanceSpec, PlatformSpec, Quota, Service, Template

# (quota, data centre, GPU model) -> cards
Reservations = dict[tuple[str, str, str], int]


@dataclass(frozen=True, slots=True)
class PlannedInstance:
    service: str
    group: str
    template: str
    data_center: str
    queue: str
    index: int
    spec: InstanceSpec | None

    @property
    def cards(self) -> int:
        return self.spec.cards if self.spec else 0

    @property
    def name(self) -> str:
        return f"{self.service}/{self.group}/{self.template}/{self.data_center}/{self.index}"


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    where: str
    requested: float | None = None
    used: float | None = None
    limit: float | None = None
    hint: str = ""

    def line(self) -> str:
        numbers = ", ".join(
            f"{k} {v:g}"
            for k, v in (("requested", self.requested), ("used", self.used), ("limit", self.limit))
            if v is not None
        )
        text = f"[platform] {self.code}: {self.message}"
        if numbers:
            text += f" ({numbers})"
        text += f"; rule=platform/{self.code.lower()}; change: {self.where}"
        return text + (f" ({self.hint})" if self.hint else "")


@dataclass(slots=True)
class LedgerRow:
    quota: str
    data_center: str
    gpu_model: str
    hard: int
    used: int
    reserved: int

    @property
    def free(self) -> int:
        return self.hard - self.used - self.reserved


@dataclass(slots=True)
class Ledger:
    rows: list[LedgerRow]
    total_cards: int
    instances: int
    gpu_instances: int
    cards_by_group: dict[str, int] = field(default_factory=dict)
    # used, hard (None: not limited)
    cpu_by_quota: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    memory_by_quota: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    owners: dict[str, dict[str, str]] = field(default_factory=dict)  # quota -> its owner
    shares_by_group: dict[str, int] = field(default_factory=dict)  # group -> its card share

    def to_json(self) -> dict[str, Any]:
        """What ``platform ledger --json`` prints and the control API answers."""
        return {
            "total_cards": self.total_cards,
            "instances": self.instances,
            "gpu_instances": self.gpu_instances,
            "cards_by_group": self.cards_by_group,
            "groups": [
                {
                    "group": group,
                    "cards_used": self.cards_by_group.get(group, 0),
                    "cards_share": share,
                }
                for group, share in sorted(self.shares_by_group.items())
            ],
            "quotas": [
                {
                    "quota": quota,
                    "owner": owner,
                    "cpu_cores": _used_hard(self.cpu_by_quota.get(quota)),
                    "memory_gb": _used_hard(self.memory_by_quota.get(quota)),
                }
                for quota, owner in sorted(self.owners.items())
            ],
            "quota": [
                {
                    "quota": r.quota,
                    "data_center": r.data_center,
                    "gpu_model": r.gpu_model,
                    "hard": r.hard,
                    "used": r.used,
                    "reserved": r.reserved,
                    "free": r.free,
                }
                for r in self.rows
            ],
        }


def _used_hard(pair: tuple[float, float | None] | None) -> dict[str, float | None]:
    used, hard = pair if pair is not None else (0.0, None)
    return {"used": used, "hard": hard}


def expand(spec: PlatformSpec, replicas: dict[str, int] | None = None) -> list[PlannedInstance]:
    """Every instance the spec asks for; ``replicas`` overrides per service/group/template."""
    planned = []
    for service in spec.services.values():
        for group in service.groups.values():
            for template in group.templates.values():
                key = f"{service.name}/{group.name}/{template.name}"
                count = (replicas or {}).get(key, template.replicas)
                for dc, queue in sorted(template.queues.items()):
                    for index in range(max(0, count)):
                        planned.append(
                            PlannedInstance(
                                service.name,
                                group.name,
                                template.name,
                                dc,
                                queue,
                                index,
                                template.spec,
                            )
                        )
    return planned


@dataclass(slots=True)
class _Usage:
    """What instances use: cards per (quota, data centre, GPU model), cores and memory
    per quota, cards per service/group."""

    cards: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    cpu: Counter[str] = field(default_factory=Counter)
    memory: Counter[str] = field(default_factory=Counter)
    cards_by_group: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, spec: PlatformSpec, planned: list[PlannedInstance]) -> _Usage:
        usage = cls()
        for instance in planned:
            quota = spec.services[instance.service].quota
            if instance.spec is not None:
                usage.cpu[quota] += instance.spec.cpu_cores
                usage.memory[quota] += instance.spec.memory_gb
                if instance.spec.gpu_model:
                    key = (quota, instance.data_center, instance.spec.gpu_model)
                    usage.cards[key] += instance.cards
            usage.cards_by_group[f"{instance.service}/{instance.group}"] += instance.cards
        return usage


def build_ledger(
    spec: PlatformSpec,
    reserved: Reservations | None = None,
    planned: list[PlannedInstance] | None = None,
) -> Ledger:
    planned = expand(spec) if planned is None else planned
    usage = _Usage.of(spec, planned)
    quotas = spec.quotas.values()
    return Ledger(
        rows=_card_rows(spec, usage.cards, reserved or {}),
        total_cards=sum(i.cards for i in planned),
        instances=len(planned),
        gpu_instances=sum(1 for i in planned if i.cards > 0),
        cards_by_group=dict(usage.cards_by_group),
        cpu_by_quota=_used_and_hard(usage.cpu, {q.name: q.cpu_cores for q in quotas}),
        memory_by_quota=_used_and_hard(usage.memory, {q.name: q.memory_gb for q in quotas}),
        owners={q.name: dict(q.owner) for q in spec.quotas.values()},
        shares_by_group={
            f"{service.name}/{group.name}": group.cards
            for service in spec.services.values()
            for group in service.groups.values()
        },
    )


def _card_rows(
    spec: PlatformSpec, used: Counter[tuple[str, str, str]], reserved: Reservations
) -> list[LedgerRow]:
    """A row per quota, data centre and GPU model that is declared, used or reserved."""
    keys = set(used) | set(reserved)
    for declared in spec.quotas.values():
        for dc, models in declared.cards.items():
            keys |= {(declared.name, dc, gpu) for gpu in models}
    rows = []
    for quota_name, dc, gpu in sorted(keys):
        stated = spec.quotas.get(quota_name)
        hard = stated.cards.get(dc, {}).get(gpu, 0) if stated else 0
        key = (quota_name, dc, gpu)
        rows.append(LedgerRow(quota_name, dc, gpu, hard, used[key], reserved.get(key, 0)))
    return rows


def _used_and_hard(
    used: Counter[str], hard: dict[str, float | None]
) -> dict[str, tuple[float, float | None]]:
    """Per declared quota: what its instances use of a resource, and its hard limit."""
    return {q: (used[q], hard[q]) for q in used if q in hard}


def validate(
    spec: PlatformSpec,
    reserved: Reservations | None = None,
    replicas: dict[str, int] | None = None,
    planned: list[PlannedInstance] | None = None,
) -> list[Finding]:
    """Every broken rule of the spec; the cards, cores and memory counted are those of
    ``planned`` (where the instances run after a loss), else of the spec with ``replicas``."""
    planned = expand(spec, replicas) if planned is None else planned
    findings: list[Finding] = []
    for service in spec.services.values():
        _check_service(spec, findings, service)
        for group in service.groups.values():
            _check_group(spec, findings, service, group, planned)
    ledger = build_ledger(spec, reserved, planned)
    _check_quota_cards(spec, findings, ledger)
    _check_quota_cores_and_memory(spec, findings, ledger)
    return findings


def _check_service(spec: PlatformSpec, findings: list[Finding], service: Service) -> None:
    """A service's name and interfaces, its quota, its groups' shares, its models' owners."""
    add = findings.append
    spath = ("services", service.name)
    _check_service_declaration(spec, findings, spath, service)
    if service.quota not in spec.quotas:
        add(
            Finding(
                "QUOTA_UNKNOWN",
                f"service {service.name} uses unknown quota '{service.quota}'",
                spec.where(*spath, "quota"),
            )
        )
    group_cards = sum(g.cards for g in service.groups.values())
    if group_cards != service.total_cards:
        add(
            Finding(
                "GROUP_QUOTA_SUM",
                f"group card shares of {service.name} add up to {group_cards}, "
                f"not its total_cards {service.total_cards}",
                spec.where(*spath, "total_cards"),
                requested=group_cards,
                limit=service.total_cards,
            )
        )
    _check_model_owners(spec, findings, spath, service)


def _check_model_owners(
    spec: PlatformSpec, findings: list[Finding], spath: tuple[str, ...], service: Service
) -> None:
    """Each model of the service is bound to exactly one group."""
    owners: dict[str, list[str]] = {}
    for group in service.groups.values():
        for model in group.models:
            owners.setdefault(model, []).append(group.name)
    for model in service.models:
        if model not in owners:
            findings.append(
                Finding(
                    "MODEL_UNBOUND",
                    f"model {model} of {service.name} is bound to no group",
                    spec.where(*spath, "models"),
                )
            )
    for model, groups in owners.items():
        if len(groups) > 1:
            findings.append(
                Finding(
                    "MODEL_BOUND_TWICE",
                    f"model {model} of {service.name} is bound to groups {', '.join(groups)}",
                    spec.where(*spath, "groups"),
                    hint="moving a model between groups is a release: one owner at a time",
                )
            )


def _check_group(
    spec: PlatformSpec,
    findings: list[Finding],
    service: Service,
    group: Group,
    planned: list[PlannedInstance],
) -> None:
    """A group's models, autoscaling, templates, and the cards its instances use."""
    gpath = ("services", service.name, "groups", group.name)
    for model in group.models:
        if model not in service.models:
            findings.append(
                Finding(
                    "GROUP_FOREIGN_MODEL",
                    f"group {group.name} binds {model}, which is not among the models "
                    f"of {service.name} ({', '.join(service.models) or 'none'})",
                    spec.where(*gpath, "models"),
                )
            )
    _check_autoscaling(spec, findings, gpath, group.autoscaling, group.templates)
    _check_autoscaling_cards(spec, findings, gpath, group, spec.quotas.get(service.quota))
    for template in group.templates.values():
        _check_template(spec, findings, service, group, template)
    used = sum(i.cards for i in planned if i.service == service.name and i.group == group.name)
    if used > group.cards:
        findings.append(
            Finding(
                "GROUP_CARDS_EXCEEDED",
                f"group {service.name}/{group.name} runs "
                f"instances with {used} cards over its share of {group.cards}",
                spec.where(*gpath, "cards"),
                requested=used,
                limit=group.cards,
            )
        )


def _check_quota_cards(spec: PlatformSpec, findings: list[Finding], ledger: Ledger) -> None:
    """The cards instances use and releases reserve, within each quota's hard cards."""
    for row in ledger.rows:
        # a GPU model the quota does not list is reported per template (GPU_NOT_IN_QUOTA);
        # one it lists with 0 cards holds none
        quota = spec.quotas.get(row.quota)
        listed = quota is not None and row.gpu_model in quota.cards.get(row.data_center, {})
        if listed and row.used + row.reserved > row.hard:
            where = (
                spec.where("quotas", row.quota, "cards", row.data_center)
                if quota
                else spec.where("quotas")
            )
            findings.append(
                Finding(
                    "QUOTA_EXCEEDED",
                    f"quota {row.quota} in {row.data_center} holds {row.hard} {row.gpu_model} "
                    f"cards; instances use {row.used} and releases reserve {row.reserved}",
                    where,
                    requested=row.used + row.reserved,
                    used=row.used,
                    limit=row.hard,
                    hint="expand the quota first",
                )
            )


def _check_quota_cores_and_memory(
    spec: PlatformSpec, findings: list[Finding], ledger: Ledger
) -> None:
    for code, field_name, unit, by_quota in (
        ("QUOTA_CPU_EXCEEDED", "cpu_cores", "CPU cores", ledger.cpu_by_quota),
        ("QUOTA_MEMORY_EXCEEDED", "memory_gb", "GB", ledger.memory_by_quota),
    ):
        for quota_name, (amount, hard) in by_quota.items():
            if hard is not None and amount > hard:  # None: the quota states no limit
                findings.append(
                    Finding(
                        code,
                        f"quota {quota_name} holds {hard:g} {unit}",
                        spec.where("quotas", quota_name, field_name),
                        requested=amount,
                        limit=hard,
                        hint="expand the quota first",
                    )
                )


def _check_template(
    spec: PlatformSpec, findings: list[Finding], service: Service, group: Group, template: Template
) -> None:
    tpath = ("services", service.name, "groups", group.name, "templates", template.name)
    _check_instance_spec(spec, findings, tpath, template)
    if template.replicas < 0:
        findings.append(
            Finding(
                "REPLICAS_INVALID",
                f"replicas {template.replicas} is negative",
                spec.where(*tpath, "replicas"),
                requested=template.replicas,
                limit=0,
            )
        )
    for model in template.loads:
        if model not in group.models:
            findings.append(
                Finding(
                    "TEMPLATE_FOREIGN_MODEL",
                    f"template {template.name} loads {model}, which its group does not own",
                    spec.where(*tpath, "loads"),
                )
            )
    for dc, queue_name in template.queues.items():
        _check_placement(spec, findings, service, tpath, template, dc, queue_name)


def _check_instance_spec(
    spec: PlatformSpec, findings: list[Finding], tpath: tuple[str, ...], template: Template
) -> None:
    """The template's ``spec`` parses, and gives an instance cores, memory, and cards
    where it names a GPU model."""
    where = spec.where(*tpath, "spec")
    if template.spec is None:
        findings.append(
            Finding(
                "SPEC_MALFORMED",
                f"spec '{template.spec_text}' is not <cores>C/<mem>G or "
                "<cores>C/<mem>G/<GPU model>*<cards>",
                where,
            )
        )
    elif template.spec.cpu_cores == 0 or template.spec.memory_gb == 0:
        findings.append(
            Finding(
                "SPEC_EMPTY",
                f"spec '{template.spec_text}' gives an instance "
                f"{template.spec.cpu_cores} CPU cores and {template.spec.memory_gb} GB of "
                "memory: it needs some of each",
                where,
            )
        )
    elif template.spec.gpu_model is not None and template.spec.cards == 0:
        findings.append(
            Finding(
                "SPEC_EMPTY",
                f"spec '{template.spec_text}' names {template.spec.gpu_model} with 0 cards: "
                f"write {template.spec.cpu_cores}C/{template.spec.memory_gb}G for a CPU-only "
                "instance, or at least 1 card",
                where,
            )
        )


def _check_placement(
    spec: PlatformSpec,
    findings: list[Finding],
    service: Service,
    tpath: tuple[str, ...],
    template: Template,
    dc: str,
    queue_name: str,
) -> None:
    """The template's queue in ``dc`` exists there, in a data centre of the service, and
    offers the template's GPU model, which the service's quota lists there."""
    add = findings.append
    where = spec.where(*tpath, "queues", dc)
    queue = spec.queues.get(queue_name)
    if queue is None:
        add(Finding("QUEUE_UNKNOWN", f"queue '{queue_name}' is not defined", where))
        return
    if queue.data_center != dc:
        add(
            Finding(
                "QUEUE_DC_MISMATCH",
                f"queue {queue_name} is in {queue.data_center}, not {dc}",
                where,
            )
        )
    if service.data_centers and dc not in service.data_centers:
        add(Finding("DC_NOT_IN_SERVICE", f"{service.name} does not run in {dc}", where))
    gpu = template.spec.gpu_model if template.spec else None
    if not gpu:
        return
    if gpu not in queue.gpu_models:
        add(
            Finding(
                "QUEUE_GPU_MISMATCH",
                f"queue {queue_name} offers {', '.join(queue.gpu_models) or 'no GPUs'}, not {gpu}",
                where,
            )
        )
    quota = spec.quotas.get(service.quota)
    if quota is not None and gpu not in quota.cards.get(dc, {}):
        add(
            Finding(
                "GPU_NOT_IN_QUOTA",
                f"quota {service.quota} has no {gpu} cards in {dc}",
                spec.where(*tpath, "spec"),
                requested=template.spec.cards if template.spec else None,
                limit=0,
                hint="expand the quota first",
            )
        )


def _check_autoscaling(
    spec: PlatformSpec,
    findings: list[Finding],
    gpath: tuple[str, ...],
    autoscaling: dict[str, object],
    templates: dict[str, Template],
) -> None:
    if not autoscaling:
        return
    low, high = autoscaling.get("min", 0), autoscaling.get("max", 0)
    where = spec.where(*gpath, "autoscaling")
    if not isinstance(low, int) or not isinstance(high, int) or low < 0 or low > high:
        findings.append(
            Finding(
                "REPLICAS_INVALID",
                f"autoscaling bounds min {low} / max {high} need 0 <= min <= max",
                where,
            )
        )
        return
    for name, template in templates.items():
        replicas = template.replicas
        if not low <= replicas <= high:
            findings.append(
                Finding(
                    "REPLICAS_INVALID",
                    f"template {name} has {replicas} replicas "
                    f"outside autoscaling bounds [{low}, {high}]",
                    where,
                    requested=replicas,
                    limit=high,
                )
            )


def _check_autoscaling_cards(
    spec: PlatformSpec,
    findings: list[Finding],
    gpath: tuple[str, ...],
    group: Group,
    quota: Quota | None,
) -> None:
    """The cards a group's autoscaling max would take are within its share, and within
    the quota's hard cards of each data centre and GPU model. (What other groups hold of
    the quota bounds the autoscaler as it runs: `explain` names it.)"""
    high = group.autoscaling.get("max") if group.autoscaling else None
    if not isinstance(high, int) or high < 0:
        return
    where = spec.where(*gpath, "autoscaling")
    per_replica = sum(
        t.spec.cards * len(t.queues) for t in group.templates.values() if t.spec is not None
    )
    if high * per_replica > group.cards:
        findings.append(
            Finding(
                "AUTOSCALE_MAX_OVER_SHARE",
                f"autoscaling max {high} replicas of group {group.name} take "
                f"{high * per_replica} cards, over its share of {group.cards}",
                where,
                requested=high * per_replica,
                limit=group.cards,
            )
        )
    if quota is None:
        return
    at_max: Counter[tuple[str, str]] = Counter()
    for template in group.templates.values():
        if template.spec is not None and template.spec.cards:
            for dc in template.queues:
                at_max[(dc, template.spec.gpu_model or "")] += high * template.spec.cards
    for (dc, gpu), cards in sorted(at_max.items()):
        hard = quota.cards.get(dc, {}).get(gpu, 0)
        if cards > hard:
            findings.append(
                Finding(
                    "AUTOSCALE_MAX_OVER_QUOTA",
                    f"autoscaling max {high} replicas of group {group.name} take {cards} "
                    f"{gpu} cards in {dc}, over quota {quota.name}'s {hard}",
                    where,
                    requested=cards,
                    limit=hard,
                )
            )


# a service's name is a reverse-DNS key: com.example.search.ranker
_SERVICE_NAME = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")


def _check_service_declaration(
    spec: PlatformSpec, findings: list[Finding], spath: tuple[str, ...], service: Service
) -> None:
    if not _SERVICE_NAME.match(service.name):
        findings.append(
            Finding(
                "SERVICE_NAME_INVALID",
                f"service name '{service.name}' is not a reverse-DNS key "
                "(lowercase labels joined by dots, such as com.example.search.ranker)",
                spec.where(*spath),
            )
        )
    if not service.interfaces:
        findings.append(
            Finding(
                "SERVICE_NO_INTERFACES",
                f"service {service.name} declares no interfaces",
                spec.where(*spath),
                hint="list what callers use, such as [infer, metadata]",
            )
        )
    seen: set[str] = set()
    for interface in service.interfaces:
        if interface in seen:
            findings.append(
                Finding(
                    "INTERFACE_DUPLICATE",
                    f"service {service.name} declares interface {interface} twice",
                    spec.where(*spath, "interfaces"),
                )
            )
        seen.add(interface)
