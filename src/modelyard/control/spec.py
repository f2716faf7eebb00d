"""The platform spec: quotas, queues, services → groups → instance templates.

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
shapes and keeps every key's file:line; the platform's own rules (quotas,
queues, bindings) are ``ledger.validate``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelyard.yaml_lines import LocatedDocument, load_located, read_text

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


@dataclass(slots=True)
class Group:
    name: str
    models: tuple[str, ...]
    cards: int
    templates: dict[str, Template]
    release: dict[str, Any] = field(default_factory=dict)
    autoscaling: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Service:
    name: str
    interfaces: tuple[str, ...]
    quota: str
    data_centers: tuple[str, ...]
    total_cards: int
    models: tuple[str, ...]
    groups: dict[str, Group]


@dataclass(slots=True)
class PlatformSpec:
    quotas: dict[str, Quota]
    queues: dict[str, Queue]
    services: dict[str, Service]
    document: LocatedDocument

    def where(self, *path: str | int) -> str:
        return self.document.where(tuple(path))


def _mapping(doc: LocatedDocument, path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise doc.error(path, f"expected a mapping, got {type(value).__name__}", "platform/spec")
    return value


def _strings(doc: LocatedDocument, path: tuple[str | int, ...], value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise doc.error(path, "expected a list of names", "platform/spec")
    return tuple(value)


def _integer(doc: LocatedDocument, path: tuple[str | int, ...], value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise doc.error(path, f"expected an integer, got {value!r}", "platform/spec")
    return value


def _limit(doc: LocatedDocument, path: tuple[str | int, ...], value: Any) -> float | None:
    """A quota's hard limit: absent is no limit, and 0 allows nothing."""
    if value is None:
        return None
    limit = _number(doc, path, value)
    if limit < 0:
        raise doc.error(path, f"a quota cannot be negative, got {value!r}", "platform/spec")
    return limit


def _number(doc: LocatedDocument, path: tuple[str | int, ...], value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise doc.error(path, f"expected a number, got {value!r}", "platform/spec")
    return float(value)


_KEYS = {
    "quota": {"owner", "cpu_cores", "memory_gb", "cards"},
    "queue": {"data_center", "pool", "gpu_models"},
    "service": {"interfaces", "quota", "data_centers", "total_cards", "models", "groups"},
    "group": {"models", "cards", "templates", "release", "autoscaling"},
    "template": {"spec", "queues", "replicas", "loads"},
    "autoscaling": {
        "min", "max", "target_in_flight", "stable_window_s", "panic_window_s", "panic_threshold",
    },
    "release": {"canary_steps"},
}  # fmt: skip


def _known(doc: LocatedDocument, path: tuple[str, ...], raw: dict[str, Any], kind: str) -> None:
    """A key the spec does not define is a typo until proven otherwise: name it, with file:line."""
    for key in raw:
        if key not in _KEYS[kind] and not (kind == "queue" and key in ("count", "cards")):
            known = ", ".join(sorted(_KEYS[kind]))
            raise doc.error((*path, key), f"unknown {kind} field '{key}' (known: {known})",
                            "platform/spec")  # fmt: skip


def parse_platform_spec(text: str, filename: str = "platform.yaml") -> PlatformSpec:
    doc = load_located(text, filename, "platform/spec")
    root = _mapping(doc, (), doc.data)
    for key in root:
        if key not in ("quotas", "queues", "services"):
            raise doc.error((key,), f"unknown section '{key}'", "platform/spec")
    quotas = {}
    for name, raw in _mapping(doc, ("quotas",), root.get("quotas")).items():
        path = ("quotas", name)
        raw = _mapping(doc, path, raw)
        _known(doc, path, raw, "quota")
        cards: dict[str, dict[str, int]] = {}
        for dc, models in _mapping(doc, (*path, "cards"), raw.get("cards")).items():
            cards[dc] = {
                gpu: _integer(doc, (*path, "cards", dc, gpu), count, 0)
                for gpu, count in _mapping(doc, (*path, "cards", dc), models).items()
            }
        quotas[name] = Quota(
            name,
            {str(k): str(v) for k, v in _mapping(doc, (*path, "owner"), raw.get("owner")).items()},
            _limit(doc, (*path, "cpu_cores"), raw.get("cpu_cores")),
            _limit(doc, (*path, "memory_gb"), raw.get("memory_gb")),
            cards,
        )
    queues = {}
    for name, raw in _mapping(doc, ("queues",), root.get("queues")).items():
        path = ("queues", name)
        raw = _mapping(doc, path, raw)
        _known(doc, path, raw, "queue")
        if "count" in raw or "cards" in raw:
            raise doc.error(
                path, "a queue decides where, never how many: no counts here", "platform/spec"
            )
        queues[name] = Queue(
            name,
            str(raw.get("data_center", "")),
            str(raw.get("pool", "")),
            _strings(doc, (*path, "gpu_models"), raw.get("gpu_models")),
        )
    services = {}
    for name, raw in _mapping(doc, ("services",), root.get("services")).items():
        path = ("services", name)
        raw = _mapping(doc, path, raw)
        _known(doc, path, raw, "service")
        groups = {}
        for group_name, graw in _mapping(doc, (*path, "groups"), raw.get("groups")).items():
            gpath = (*path, "groups", group_name)
            graw = _mapping(doc, gpath, graw)
            _known(doc, gpath, graw, "group")
            for section in ("autoscaling", "release"):
                _known(doc, (*gpath, section), _mapping(doc, (*gpath, section), graw.get(section)),
                       section)  # fmt: skip
            templates = {}
            for tname, traw in _mapping(doc, (*gpath, "templates"), graw.get("templates")).items():
                tpath = (*gpath, "templates", tname)
                traw = _mapping(doc, tpath, traw)
                _known(doc, tpath, traw, "template")
                spec_text = str(traw.get("spec", ""))
                templates[tname] = Template(
                    tname,
                    spec_text,
                    InstanceSpec.parse(spec_text),
                    {
                        str(k): str(v)
                        for k, v in _mapping(doc, (*tpath, "queues"), traw.get("queues")).items()
                    },
                    _integer(doc, (*tpath, "replicas"), traw.get("replicas"), 1),
                    _strings(doc, (*tpath, "loads"), traw.get("loads")),
                )
            groups[group_name] = Group(
                group_name,
                _strings(doc, (*gpath, "models"), graw.get("models")),
                _integer(doc, (*gpath, "cards"), graw.get("cards"), 0),
                templates,
                _mapping(doc, (*gpath, "release"), graw.get("release")),
                _mapping(doc, (*gpath, "autoscaling"), graw.get("autoscaling")),
            )
        services[name] = Service(
            name,
            _strings(doc, (*path, "interfaces"), raw.get("interfaces")),
            str(raw.get("quota", "")),
            _strings(doc, (*path, "data_centers"), raw.get("data_centers")),
            _integer(doc, (*path, "total_cards"), raw.get("total_cards"), 0),
            _strings(doc, (*path, "models"), raw.get("models")),
            groups,
        )
    return PlatformSpec(quotas, queues, services, doc)


def read_platform_spec(path: Path) -> PlatformSpec:
    text = read_text(path, "platform/spec", "modelyard platform ... -f FILE")
    return parse_platform_spec(text, path.name)
