"""The platform spec: quotas, queues, services → groups → instance templates.

    model_repository: {claim: model-repository}        # on a cluster (or {image: REF})
    quotas:
      search-gpu:
        owner: {org: search, project: ranker}
        cpu_cores: 256                                  # left out: not limited; 0: none
        memory_gb: 1024
        cards: {dc1: {A30-24G: 8}, dc2: {A30-24G: 8}}   # hard counts per DC and GPU model
    queues:                                             # where, never how many
      dc1-gpu: {data_center: dc1, pool: gpu, gpu_models: [A30-24G]}
      dc1-cpu: {data_center: dc1, pool: cpu}
    services:
      com.example.search.ranker:
        interfaces: [infer, metadata]
        gateway: {processes: 2, standby: true}          # on its port, and one ready (defaults)
        attempts: {infer: {timeout_s: auto, hedge: false}}  # the gateway's, per interface
        quota: search-gpu
        data_centers: [dc1]
        total_cards: 4
        models: [tokenizer, ranker]
        groups:
          preprocess:
            models: [tokenizer]
            cards: 0                                    # the group's share of total_cards
            templates:
              cpu: {spec: 8C/32G, queues: {dc1: dc1-cpu}, replicas: 2, loads: [tokenizer]}
            autoscaling: {min: 1, max: 4, target_in_flight: 8}
          gpu:
            models: [ranker]
            cards: 4
            templates:
              a30: {spec: 16C/64G/A30-24G*1, queues: {dc1: dc1-gpu}, replicas: 4,
                    loads: [ranker]}
            release: {canary_steps: [10, 50, 100]}

``replicas`` is per data centre of the template's ``queues``. Parsing checks
shapes (``spec_schema.py``, the schema layer's models of this document) and
keeps every key's file:line; the platform's own rules (quotas, queues,
bindings) are ``ledger.validate``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modelyard.yaml_lines import LocatedDocument, load_located, read_text

if TYPE_CHECKING:  # the schema (pydantic) is imported when a spec is parsed
    from modelyard.control.spec_schema import (
        GroupSection,
        QuotaSection,
        ServiceSection,
        SpecDocument,
    )

_SPEC = re.compile(
    r"^(?P<cpu>\d+)C/(?P<mem>\d+)G(?:/(?P<gpu>[A-Za-z0-9][A-Za-z0-9.\-]*)\*(?P<cards>\d+))?$"
)


@dataclass(frozen=True, slots=True)
class InstanceSpec:
    """A spec string such as ``16C/64G/A30-24G*1`` or CPU-only ``8C/32G``."""

    cpu_cores: int
    memory_gb: int
    gpu_model: str | None = None
    cards: int = 0

    @classmethod
    def parse(cls, text: str) -> InstanceSpec | None:
        match = _SPEC.match(text.strip()) if isinstance(text, str) else None
        if match is None:
            return None
        cards = int(match["cards"]) if match["cards"] else 0
        return cls(int(match["cpu"]), int(match["mem"]), match["gpu"], cards)

    def __str__(self) -> str:
        base = f"{self.cpu_cores}C/{self.memory_gb}G"
        return f"{base}/{self.gpu_model}*{self.cards}" if self.gpu_model else base


@dataclass(slots=True)
class Quota:
    name: str
    owner: dict[str, str]
    cpu_cores: float | None  # None: not limited (0 allows none)
    memory_gb: float | None
    cards: dict[str, dict[str, int]]  # data centre -> GPU model -> hard count


@dataclass(slots=True)
class Queue:
    name: str
    data_center: str
    pool: str
    gpu_models: tuple[str, ...]


@dataclass(slots=True)
class Template:
    name: str
    spec_text: str
    spec: InstanceSpec | None  # None: malformed (validate reports it)
    queues: dict[str, str]  # data centre -> queue name
    replicas: int
    loads: tuple[str, ...]
    memory_budget: str = ""  # "": every model it loads stays; else residency within it
    residency: str = "lru"  # which idle model goes first to make room: lru or cost


@dataclass(slots=True)
class Group:
    name: str
    models: tuple[str, ...]
    cards: int
    templates: dict[str, Template]
    release: dict[str, Any] = field(default_factory=dict)
    autoscaling: dict[str, Any] = field(default_factory=dict)


DEFAULT_GATEWAY_PROCESSES = 2
PROTOCOL_INTERFACES = ("infer", "metadata")  # what a gateway's attempts are made for


@dataclass(slots=True)
class Service:
    name: str
    interfaces: tuple[str, ...]
    quota: str
    data_centers: tuple[str, ...]
    total_cards: int
    models: tuple[str, ...]
    groups: dict[str, Group]
    # the gateway's processes on the service's port, and its attempts per interface
    gateway_processes: int = DEFAULT_GATEWAY_PROCESSES
    attempts: dict[str, dict[str, Any]] = field(default_factory=dict)
    gateway_standby: bool = True


@dataclass(frozen=True, slots=True)
class ModelVolume:
    """Where a cluster's pods find the model repository: a claim or an image."""

    claim: str | None = None
    image: str | None = None


@dataclass(slots=True)
class PlatformSpec:
    quotas: dict[str, Quota]
    queues: dict[str, Queue]
    services: dict[str, Service]
    document: LocatedDocument
    model_volume: ModelVolume | None = None

    def where(self, *path: str | int) -> str:
        return self.document.where(tuple(path))


def parse_platform_spec(text: str, filename: str = "platform.yaml") -> PlatformSpec:
    from modelyard.control.spec_schema import SpecDocument
    from modelyard.schema import validated

    doc = load_located(text, filename, "platform/spec")
    root = doc.data if doc.data is not None else {}
    _refuse_counted_queues(doc, root)
    parsed = validated(SpecDocument, doc, root)
    quotas = {name: _quota(name, quota) for name, quota in parsed.quotas.items()}
    queues = {
        name: Queue(name, queue.data_center, queue.pool, tuple(queue.gpu_models))
        for name, queue in parsed.queues.items()
    }
    services = {name: _service(doc, name, service) for name, service in parsed.services.items()}
    return PlatformSpec(quotas, queues, services, doc, _model_volume(doc, parsed))


def _refuse_counted_queues(doc: LocatedDocument, root: Any) -> None:
    queues = root.get("queues") if isinstance(root, dict) else None
    for name, raw in queues.items() if isinstance(queues, dict) else ():
        if isinstance(raw, dict) and ("count" in raw or "cards" in raw):
            raise doc.error(
                ("queues", name), "a queue decides where, never how many: no counts here"
            )


def _quota(name: str, quota: QuotaSection) -> Quota:
    return Quota(
        name,
        {key: str(value) for key, value in quota.owner.items()},
        quota.cpu_cores,
        quota.memory_gb,
        {dc: dict(models) for dc, models in quota.cards.items()},
    )


def _service(doc: LocatedDocument, name: str, service: ServiceSection) -> Service:
    for interface in service.attempts:
        known = (*PROTOCOL_INTERFACES, *service.interfaces)
        if interface not in known:
            raise doc.error(
                ("services", name, "attempts", interface),
                f"unknown interface '{interface}' (known: {', '.join(dict.fromkeys(known))})",
            )
    return Service(
        name,
        tuple(service.interfaces),
        service.quota,
        tuple(service.data_centers),
        service.total_cards,
        tuple(service.models),
        {group_name: _group(group_name, group) for group_name, group in service.groups.items()},
        service.gateway.processes if service.gateway else DEFAULT_GATEWAY_PROCESSES,
        {key: section.model_dump() for key, section in service.attempts.items()},
        service.gateway.standby if service.gateway else True,
    )


def _group(name: str, group: GroupSection) -> Group:
    templates = {
        tname: Template(
            tname,
            template.spec,
            InstanceSpec.parse(template.spec),
            dict(template.queues),
            template.replicas,
            tuple(template.loads),
            template.memory_budget,
            template.residency,
        )
        for tname, template in group.templates.items()
    }
    return Group(
        name,
        tuple(group.models),
        group.cards,
        templates,
        group.release.model_dump(exclude_unset=True) if group.release else {},
        group.autoscaling.model_dump(exclude_unset=True) if group.autoscaling else {},
    )


def _model_volume(doc: LocatedDocument, parsed: SpecDocument) -> ModelVolume | None:
    if parsed.model_repository is None:
        return None
    claim, image = parsed.model_repository.claim, parsed.model_repository.image
    if bool(claim) == bool(image):
        raise doc.error(
            ("model_repository",),
            "names a claim or an image for the pods' models: one of them",
        )
    return ModelVolume(claim or None, image or None)


def read_platform_spec(path: Path) -> PlatformSpec:
    text = read_text(path, "platform/spec", "modelyard platform ... -f FILE")
    return parse_platform_spec(text, path.name)
