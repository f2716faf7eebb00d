"""The service file: the service's name, interfaces and governance rules.

    service: com.example.search.ranker
    interfaces:                           # the service's own interfaces, by the models
      rank: {models: ["ranker*"]}         # (fnmatch patterns) their infer calls reach
      embed: {models: [minilm]}
    auth:
      enabled: true
      principals:
        search-frontend:
          api_keys: ["sha256:…"]          # digests only: modelyard auth hash-key KEY
          bearer_tokens: ["sha256:…"]
          allow: {infer: ["ranker", "digits_*"], metadata: ["*"]}
    limits:
      rank:
        instance_qps: 500
        cluster_qps: 1000
        burst_seconds: 1
        models: {ranker: {reserved_qps: 400}}
    breakers:
      slow-ranker: {interface: rank, model: ranker, kind: slow_call_ratio,
                    threshold: 0.5, slow_call_ms: 100, window_s: 10,
                    min_requests: 20, recovery_s: 5,
                    fallback: {model: ranker, version: "1"}}
    concurrency:
      ranker-aimd: {model: ranker, algorithm: aimd, min_limit: 1, max_limit: 64,
                    latency_target_ms: 50}
    cluster: {redis_url: "redis://127.0.0.1:6379/0", lease_chunk: 20}
    attempts:                             # how callers bound each attempt (the gateway's
      rank: {timeout_s: 0.2, hedge: true} # --service-config, the SDK): auto, off or seconds

Interfaces are the governance dimension: limits, breakers, concurrency rules,
shares, counters and error lines name them. The protocol's own (infer, metadata,
admin, health) always exist; a declared interface takes the infer calls of the
models it names (the first declared whose pattern matches), so ``limits.rank``
limits the calls to the ranker models and no others. ``interfaces`` may also be
a list of protocol interfaces, as before (nothing declared). Auth's ``allow``
stays by protocol interface: what a principal may do, not which product it uses.

Every rule keeps the file:line where it was set, for error lines and for
``modelyard rules``. ``parse_rules_document`` reads a central rules document
(the same sections, less ``service`` and ``auth``) as the rules of a named
service; its ``interfaces``, when it declares any, replace the service file's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modelyard.errors import shown
from modelyard.governance.auth import INTERFACES, AuthConfig, Principal
from modelyard.yaml_lines import LocatedDocument, load_located, read_text

if TYPE_CHECKING:  # pydantic is imported only when a file is parsed
    from modelyard.governance.service_schema import AuthSection, LimitSection

_SERVICE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
CENTRAL_SECTIONS = ("interfaces", "limits", "breakers", "concurrency", "cluster")
_INTERFACE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_MODELS_KEPT = 4096  # model names an interface lookup remembers: callers choose them


@dataclass(slots=True)
class ServiceConfig:
    service: str
    interfaces: tuple[str, ...]  # the protocol interfaces the service offers
    auth: AuthConfig
    # the service's own interfaces: name -> the model patterns whose infer calls are its own
    declared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    breakers: dict[str, Any] = field(default_factory=dict)
    concurrency: dict[str, Any] = field(default_factory=dict)
    cluster: dict[str, Any] = field(default_factory=dict)
    # interface -> {timeout_s, hedge}: how callers bound and hedge their attempts
    attempts: dict[str, Any] = field(default_factory=dict)
    document: LocatedDocument | None = None
    auth_set_at: str | None = None  # where auth was set, when not in ``document``
    # a copy made with replace() starts its own: its interfaces may differ
    _interface_by_model: dict[str, str] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def filename(self) -> str:
        return self.document.filename if self.document else "service.yaml"

    @property
    def known_interfaces(self) -> tuple[str, ...]:
        """The names rules may use: the protocol's interfaces, then the declared ones."""
        return (*INTERFACES, *self.declared)

    def interface_of(self, protocol: str, model: str | None) -> str:
        """The interface a call of ``protocol`` on ``model`` counts on: the first declared
        interface that names the model, for an infer call; else the protocol's own."""
        if protocol != "infer" or model is None or not self.declared:
            return protocol
        known = self._interface_by_model.get(model)
        if known is not None:
            return known
        found = counted_on(self.declared, model)
        if len(self._interface_by_model) < _MODELS_KEPT:
            self._interface_by_model[model] = found
        return found

    def rules(self) -> list[dict[str, Any]]:
        """Every rule with where it was set, as ``modelyard rules`` prints them."""
        doc = self.document
        rows: list[dict[str, Any]] = []

        def where(*path: str | int) -> str:
            return doc.where(path) if doc else ""

        for name, patterns in self.declared.items():
            rows.append(
                {
                    "rule": f"interfaces.{name}",
                    "value": {"models": list(patterns)},
                    "set_at": where("interfaces", name),
                }
            )
        rows.append(
            {
                "rule": "auth",
                "value": {
                    "enabled": self.auth.enabled,
                    "principals": sorted({p.name for p in self.auth.by_digest.values()}),
                },
                "set_at": self.auth_set_at if self.auth_set_at is not None else where("auth"),
            }
        )
        for interface, limit in self.limits.items():
            for key in ("instance_qps", "cluster_qps", "burst_seconds"):
                if key in limit:
                    rows.append(
                        {
                            "rule": f"limits.{interface}.{key}",
                            "value": limit[key],
                            "set_at": where("limits", interface, key),
                        }
                    )
            for model, share in (limit.get("models") or {}).items():
                rows.append(
                    {
                        "rule": f"limits.{interface}.models.{model}",
                        "value": share,
                        "set_at": where("limits", interface, "models", model),
                    }
                )
        for section in ("breakers", "concurrency"):
            for rule_id, rule in getattr(self, section).items():
                rows.append(
                    {
                        "rule": f"{section}.{rule_id}",
                        "value": rule,
                        "set_at": where(section, rule_id),
                    }
                )
        if self.cluster:
            rows.append({"rule": "cluster", "value": self.cluster, "set_at": where("cluster")})
        return rows


def _parse_auth(doc: LocatedDocument, raw: AuthSection | None) -> AuthConfig:
    config = AuthConfig(service_file=doc.filename)
    if raw is None:
        return config
    config.enabled = raw.enabled
    for name, spec in (raw.principals or {}).items():
        path = ("auth", "principals", name)
        allow: dict[str, tuple[str, ...]] = {}
        for interface, patterns in (spec.allow or {}).items():
            if interface not in INTERFACES:
                raise doc.error(
                    (*path, "allow", interface),
                    f"unknown interface '{interface}' (known: {', '.join(INTERFACES)})",
                )
            allow[interface] = (patterns,) if isinstance(patterns, str) else tuple(patterns)
        principal = Principal(name, allow, doc.where(path))
        secrets = list(spec.api_keys or []) + list(spec.bearer_tokens or [])
        if not secrets:
            raise doc.error(path, f"principal '{name}' has no api_keys or bearer_tokens")
        for index, digest in enumerate(secrets):
            key_path = (*path, "api_keys", index)
            if not isinstance(digest, str) or not _DIGEST.match(digest):
                raise doc.error(
                    key_path,
                    "keys and tokens are stored as 'sha256:<64 hex>' digests, never in clear "
                    "(modelyard auth hash-key KEY prints one)",
                )
            if digest in config.by_digest:
                raise doc.error(key_path, "the same key digest belongs to two principals")
            config.by_digest[digest] = principal
    return config


def _parse_interfaces(
    doc: LocatedDocument, raw: list[str] | dict[str, Any] | None
) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The protocol interfaces offered, and the declared ones with their model patterns."""
    if not raw:
        return INTERFACES, {}
    if isinstance(raw, list):
        for index, interface in enumerate(raw):
            if interface not in INTERFACES:
                raise doc.error(
                    ("interfaces", index),
                    f"unknown interface '{interface}' (the protocol's: {', '.join(INTERFACES)}; "
                    "declare the service's own as a mapping: NAME: {models: [PATTERN]})",
                )
        if len(set(raw)) != len(raw):
            raise doc.error(("interfaces",), "an interface is listed twice")
        return tuple(raw), {}
    declared: dict[str, tuple[str, ...]] = {}
    for name, spec in raw.items():
        path = ("interfaces", name)
        if not _INTERFACE_NAME.match(name):
            raise doc.error(
                path,
                f"interface name {shown(repr(name), 80)} must be lowercase letters, digits and _, "
                "starting with a letter (at most 63)",
            )
        if name in INTERFACES:
            raise doc.error(
                path, f"'{name}' is a protocol interface: it exists already, declare another name"
            )
        declared[name] = tuple(spec if isinstance(spec, list) else spec.models)
        if not declared[name]:
            raise doc.error(path, f"interface {name} needs models: at least one name or pattern")
    return INTERFACES, declared


def counted_on(declared: dict[str, tuple[str, ...]], model: str) -> str:
    """The interface an infer call on ``model`` counts on: the first declared one whose
    patterns name it, else infer."""
    for name, patterns in declared.items():
        if any(fnmatchcase(model, pattern) for pattern in patterns):
            return name
    return "infer"


def elsewhere(
    declared: dict[str, tuple[str, ...]], interface: str, model: str | None
) -> str | None:
    """Why a rule for ``model`` on ``interface`` would never apply: the model's infer calls
    count on another interface. None when they count on this one (or it is not infer's)."""
    if model is None or not declared or (interface != "infer" and interface not in declared):
        return None
    owner = counted_on(declared, model)
    if owner == interface:
        return None
    return (
        f"model '{shown(model, 80)}' counts on interface {owner}, not {interface} "
        f"(interfaces: the first that names it): a rule for it here never applies"
    )


def _check_limits(
    doc: LocatedDocument, limits: dict[str, LimitSection], declared: dict[str, tuple[str, ...]]
) -> None:
    known = (*INTERFACES, *declared)
    for interface, spec in limits.items():
        path = ("limits", interface)
        if interface not in known:
            raise doc.error(path, unknown_interface(interface, known))
        for model in spec.models or {}:
            why = elsewhere(declared, interface, model)
            if why is not None:
                raise doc.error((*path, "models", model), why)
        reserved = sum(share.reserved_qps for share in (spec.models or {}).values())
        for key in ("instance_qps", "cluster_qps"):
            limit = getattr(spec, key)
            if limit is not None and reserved > limit:
                raise doc.error(
                    (*path, "models"),
                    f"reserved shares add up to {reserved:g}/s, over {key} {limit:g}/s",
                )


def unknown_interface(interface: Any, known: tuple[str, ...]) -> str:
    return f"unknown interface '{shown(str(interface), 80)}' (known: {', '.join(known)})"


def parse_service_config(text: str, filename: str = "service.yaml") -> ServiceConfig:
    return _from_document(load_located(text, filename))


def parse_rules_document(
    text: str,
    filename: str,
    service: str,
    declared: dict[str, tuple[str, ...]] | None = None,
) -> ServiceConfig:
    """A central rules document as the rules of ``service``; errors name filename:line.

    ``declared``: the interfaces the service file declares, which the document's rules
    may name when it declares none of its own."""
    doc = load_located(text, filename)
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise doc.error((), "the rules document must be a mapping")
    for key, value in data.items():
        if key == "auth":
            raise doc.error(
                (key,),
                "auth stays in each instance's local service file (--service-config): "
                "keys and tokens never go to the registry",
            )
        if key == "service" and value != service:
            raise doc.error((key,), f"these are the rules of {value!r}, not of {service}")
        if key not in (*CENTRAL_SECTIONS, "service"):
            known = ", ".join(CENTRAL_SECTIONS)
            raise doc.error((key,), f"unknown section '{key}' (central rules hold: {known})")
    return _from_document(
        LocatedDocument({**data, "service": service}, doc.lines, filename), declared or {}
    )


def central_filename(service: str, revision: int) -> str:
    """How errors and ``modelyard rules`` name a central revision: ``central:<service>@r<n>``."""
    return f"central:{service}@r{revision}"


def empty_service_config(service: str) -> ServiceConfig:
    """No rules and no auth: what an instance of ``service`` enforces without a service file."""
    return ServiceConfig(
        service=service, interfaces=INTERFACES, auth=AuthConfig(), auth_set_at="no service file"
    )


def _from_document(
    doc: LocatedDocument, inherited: dict[str, tuple[str, ...]] | None = None
) -> ServiceConfig:
    from modelyard.governance.service_schema import ServiceFile
    from modelyard.schema import validated

    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "the service file must be a mapping")
    parsed = validated(ServiceFile, doc, data)
    service = parsed.service
    if not isinstance(service, str) or not _SERVICE_NAME.match(service):
        raise doc.error(
            ("service",),
            "service must be a reverse-DNS name such as com.example.search.ranker, "
            f"got {service!r}",
        )
    interfaces, declared = _parse_interfaces(doc, parsed.interfaces)
    if not declared:  # a document that declares none uses the service file's
        declared = dict(inherited or {})
    _check_limits(doc, parsed.limits or {}, declared)
    for interface in parsed.attempts or {}:
        known = (*INTERFACES, *declared)
        if interface not in known:
            raise doc.error(("attempts", interface), unknown_interface(interface, known))
    # the rules as written (validated above): the guards and ``rules()`` read them so
    return ServiceConfig(
        service=service,
        interfaces=interfaces,
        declared=declared,
        auth=_parse_auth(doc, parsed.auth),
        limits=dict(data.get("limits") or {}),
        breakers=dict(data.get("breakers") or {}),
        concurrency=dict(data.get("concurrency") or {}),
        cluster=dict(data.get("cluster") or {}),
        attempts=dict(data.get("attempts") or {}),
        document=doc,
    )


def read_service_config(path: Path) -> ServiceConfig:
    text = read_text(path, "config/service-file", "--service-config")
    return parse_service_config(text, path.name)
