"""The service file: the service's name, interfaces and governance rules.

    service: com.example.search.ranker
    auth:
      enabled: true
      principals:
        search-frontend:
          api_keys: ["sha256:…"]          # digests only: modelyard auth hash-key KEY
          bearer_tokens: ["sha256:…"]
          allow: {infer: ["ranker", "digits_*"], metadata: ["*"]}
    limits:
      infer:
        instance_qps: 500
        cluster_qps: 1000
        burst_seconds: 1
        models: {ranker: {reserved_qps: 400}}
    breakers:
      slow-ranker: {interface: infer, model: ranker, kind: slow_call_ratio,
                    threshold: 0.5, slow_call_ms: 100, window_s: 10,
                    min_requests: 20, recovery_s: 5,
                    fallback: {model: ranker, version: "1"}}
    concurrency:
      ranker-aimd: {model: ranker, algorithm: aimd, min_limit: 1, max_limit: 64,
                    latency_target_ms: 50}
    cluster: {redis_url: "redis://127.0.0.1:6379/0", lease_chunk: 20}

Every rule keeps the file:line where it was set, for error lines and for
``modelyard rules``. ``parse_rules_document`` reads a central rules document
(the same sections, less ``service``, ``interfaces`` and ``auth``) as the rules
of a named service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelyard.governance.auth import INTERFACES, AuthConfig, Principal
from modelyard.yaml_lines import LocatedDocument, load_located, read_text

_SERVICE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TOP_LEVEL = {"service", "interfaces", "auth", "limits", "breakers", "concurrency", "cluster"}
CENTRAL_SECTIONS = ("limits", "breakers", "concurrency", "cluster")


@dataclass(slots=True)
class ServiceConfig:
    service: str
    interfaces: tuple[str, ...]
    auth: AuthConfig
    limits: dict[str, Any] = field(default_factory=dict)
    breakers: dict[str, Any] = field(default_factory=dict)
    concurrency: dict[str, Any] = field(default_factory=dict)
    cluster: dict[str, Any] = field(default_factory=dict)
    document: LocatedDocument | None = None
    auth_set_at: str | None = None  # where auth was set, when not in ``document``

    @property
    def filename(self) -> str:
        return self.document.filename if self.document else "service.yaml"

    def rules(self) -> list[dict[str, Any]]:
        """Every rule with where it was set, as ``modelyard rules`` prints them."""
        doc = self.document
        rows: list[dict[str, Any]] = []

        def where(*path: str | int) -> str:
            return doc.where(path) if doc else ""

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


def _expect(
    doc: LocatedDocument, path: tuple[str | int, ...], value: Any, kind: type, what: str
) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise doc.error(path, f"{what} must be {kind.__name__}, got {value!r}")
    return value


def _positive(doc: LocatedDocument, path: tuple[str | int, ...], value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise doc.error(path, f"must be a positive number, got {value!r}")
    return float(value)


def _parse_auth(doc: LocatedDocument, raw: Any) -> AuthConfig:
    config = AuthConfig(service_file=doc.filename)
    if raw is None:
        return config
    _expect(doc, ("auth",), raw, dict, "auth")
    config.enabled = bool(raw.get("enabled", True))
    principals = raw.get("principals") or {}
    _expect(doc, ("auth", "principals"), principals, dict, "auth.principals")
    for name, spec in principals.items():
        path = ("auth", "principals", name)
        _expect(doc, path, spec, dict, f"principal {name}")
        allow_raw = spec.get("allow") or {}
        _expect(doc, (*path, "allow"), allow_raw, dict, "allow")
        allow: dict[str, tuple[str, ...]] = {}
        for interface, patterns in allow_raw.items():
            if interface not in INTERFACES:
                raise doc.error(
                    (*path, "allow", interface),
                    f"unknown interface '{interface}' (known: {', '.join(INTERFACES)})",
                )
            if isinstance(patterns, str):
                patterns = [patterns]
            _expect(doc, (*path, "allow", interface), patterns, list, "model patterns")
            allow[interface] = tuple(str(p) for p in patterns)
        principal = Principal(name, allow, doc.where(path))
        secrets = list(spec.get("api_keys") or []) + list(spec.get("bearer_tokens") or [])
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


def _parse_limits(doc: LocatedDocument, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    _expect(doc, ("limits",), raw, dict, "limits")
    for interface, spec in raw.items():
        path = ("limits", interface)
        if interface not in INTERFACES:
            raise doc.error(path, f"unknown interface '{interface}'")
        _expect(doc, path, spec, dict, f"limits.{interface}")
        for key in spec:
            if key not in ("instance_qps", "cluster_qps", "burst_seconds", "models"):
                raise doc.error((*path, key), f"unknown setting '{key}'")
        for key in ("instance_qps", "cluster_qps", "burst_seconds"):
            if key in spec:
                _positive(doc, (*path, key), spec[key])
        models = spec.get("models") or {}
        _expect(doc, (*path, "models"), models, dict, "models")
        reserved = 0.0
        for model, share in models.items():
            share_path = (*path, "models", model)
            _expect(doc, share_path, share, dict, f"models.{model}")
            reserved += _positive(doc, (*share_path, "reserved_qps"), share.get("reserved_qps"))
        for key in ("instance_qps", "cluster_qps"):
            if key in spec and reserved > spec[key]:
                raise doc.error(
                    (*path, "models"),
                    f"reserved shares add up to {reserved:g}/s, over {key} {spec[key]:g}/s",
                )
    return dict(raw)


def _parse_rules(doc: LocatedDocument, section: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    _expect(doc, (section,), raw, dict, section)
    for rule_id, spec in raw.items():
        _expect(doc, (section, rule_id), spec, dict, f"{section}.{rule_id}")
    return dict(raw)


def parse_service_config(text: str, filename: str = "service.yaml") -> ServiceConfig:
    return _from_document(load_located(text, filename))


def parse_rules_document(text: str, filename: str, service: str) -> ServiceConfig:
    """A central rules document as the rules of ``service``; errors name filename:line."""
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
    return _from_document(LocatedDocument({**data, "service": service}, doc.lines, filename))


def central_filename(service: str, revision: int) -> str:
    """How errors and ``modelyard rules`` name a central revision: ``central:<service>@r<n>``."""
    return f"central:{service}@r{revision}"


def empty_service_config(service: str) -> ServiceConfig:
    """No rules and no auth: what an instance of ``service`` enforces without a service file."""
    return ServiceConfig(
        service=service, interfaces=INTERFACES, auth=AuthConfig(), auth_set_at="no service file"
    )


def _from_document(doc: LocatedDocument) -> ServiceConfig:
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "the service file must be a mapping")
    for key in data:
        if key not in _TOP_LEVEL:
            known = ", ".join(sorted(_TOP_LEVEL))
            raise doc.error((key,), f"unknown section '{key}' (known: {known})")
    service = data.get("service")
    if not isinstance(service, str) or not _SERVICE_NAME.match(service):
        raise doc.error(
            ("service",),
            "service must be a reverse-DNS name such as com.example.search.ranker, "
            f"got {service!r}",
        )
    interfaces = data.get("interfaces") or list(INTERFACES)
    for index, interface in enumerate(interfaces):
        if interface not in INTERFACES:
            raise doc.error(("interfaces", index), f"unknown interface '{interface}'")
    cluster = data.get("cluster") or {}
    _expect(doc, ("cluster",), cluster, dict, "cluster")
    return ServiceConfig(
        service=service,
        interfaces=tuple(interfaces),
        auth=_parse_auth(doc, data.get("auth")),
        limits=_parse_limits(doc, data.get("limits")),
        breakers=_parse_rules(doc, "breakers", data.get("breakers")),
        concurrency=_parse_rules(doc, "concurrency", data.get("concurrency")),
        cluster=cluster,
        document=doc,
    )


def read_service_config(path: Path) -> ServiceConfig:
    text = read_text(path, "config/service-file", "--service-config")
    return parse_service_config(text, path.name)
