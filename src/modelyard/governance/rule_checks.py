"""What a rules document must hold before guards are built from it, checked without them.

``check_rules`` refuses what ``runtime.build_guards`` would refuse (limit shares, a
cluster limit's Redis, breaker and concurrency rules with their fallbacks), each error at
its file:line. It builds no guard and opens no client, so ``modelyard rules set`` validates
a change without loading the guards, Redis' client or numpy.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from modelyard import error_rules
from modelyard.errors import ConfigError, shown
from modelyard.governance.breaker import BreakerRule
from modelyard.governance.concurrency import ConcurrencyRule
from modelyard.governance.guard import Fallback
from modelyard.governance.ratelimit import LimitShares, qps_limits
from modelyard.governance.service_config import ServiceConfig, elsewhere, unknown_interface
from modelyard.yaml_lines import LocatedDocument

R = TypeVar("R")


def _check_interface(
    config: ServiceConfig, section: str, rule_id: str, raw: dict[str, Any]
) -> None:
    """A rule's interface is one the service has: the protocol's, or one it declares."""
    interface = raw.get("interface", "infer")
    if interface not in config.known_interfaces:
        _refuse_field(config, section, rule_id, "interface",
                      unknown_interface(interface, config.known_interfaces))  # fmt: skip
    model = raw.get("model")
    why = elsewhere(config.declared, interface, model) if isinstance(model, str) else None
    if why is not None:
        _refuse_field(config, section, rule_id, "model", why)


def _refuse_field(
    config: ServiceConfig, section: str, rule_id: str, key: str, message: str
) -> NoReturn:
    if config.document:
        raise config.document.error((section, rule_id, key), message)
    raise ConfigError.of(
        error_rules.SERVICE_FILE, f"{section}.{rule_id}: {message}", where=f"{section}.{rule_id}"
    )


def _fallback(config: ServiceConfig, rule_id: str, raw: Any) -> Fallback | None:
    if raw is None:
        return None
    doc = config.document
    path = ("breakers", rule_id, "fallback")
    if not isinstance(raw, dict) or not ({"model", "static"} & set(raw)):
        if doc:
            raise doc.error(path, "fallback needs 'model' (and optional 'version') or 'static'")
        raise ConfigError(f"breakers.{rule_id}.fallback is invalid")
    if "static" in raw:
        outputs = raw["static"].get("outputs") if isinstance(raw["static"], dict) else None
        if not isinstance(outputs, dict) or not outputs:
            if doc:
                raise doc.error(
                    (*path, "static"),
                    "static fallback needs outputs: {NAME: {datatype, shape, data}}",
                )
            raise ConfigError(f"breakers.{rule_id}.fallback.static is invalid")
        return Fallback(static_outputs=outputs)
    version = raw.get("version")
    return Fallback(model=str(raw["model"]), version=None if version is None else str(version))


def _relocate(config: ServiceConfig, error: ConfigError, section: str, rule_id: str) -> ConfigError:
    """Give a rule's validation error the file:line of the field it names."""
    doc = config.document
    if doc is None:
        return error
    field = (error.where or "").rsplit(".", 1)[-1]
    path: tuple[str, ...] = (section, rule_id, field) if field else (section, rule_id)
    return doc.error(path, error.detail)


def _typed_rule(
    config: ServiceConfig, section: str, rule_id: str, rule_class: type[R], raw: Any, **given: Any
) -> R:
    """A rule's mapping as its rule class, through the schema layer (fields and types), then
    the class's own checks (ranges, combinations); each error at its field's file:line."""
    from modelyard.schema import DocumentError, validated_as

    doc = config.document or LocatedDocument(None, {}, config.filename)
    if not isinstance(raw, dict):
        raise doc.error((section, rule_id), f"expected a mapping, got {shown(repr(raw), 80)}")
    if "id" in raw:
        _refuse_field(config, section, rule_id, "id", f"a rule's id is its key ('{rule_id}')")
    _check_interface(config, section, rule_id, raw)
    try:
        return validated_as(
            rule_class, doc, raw, (section, rule_id), {"id": rule_id, **given}, frozenset({"id"})
        )
    except DocumentError:
        raise
    except ConfigError as error:  # the class's own check: it names the field
        raise _relocate(config, error, section, rule_id) from None


def breaker_rules(config: ServiceConfig) -> list[BreakerRule]:
    rules = []
    for rule_id, raw in config.breakers.items():
        fields = {k: v for k, v in raw.items() if k != "fallback"} if isinstance(raw, dict) else raw
        fallback = (
            _fallback(config, rule_id, raw.get("fallback")) if isinstance(raw, dict) else None
        )
        rules.append(
            _typed_rule(config, "breakers", rule_id, BreakerRule, fields, fallback=fallback)
        )
    return rules


def concurrency_rules(config: ServiceConfig) -> list[ConcurrencyRule]:
    return [
        _typed_rule(config, "concurrency", rule_id, ConcurrencyRule, raw)
        for rule_id, raw in config.concurrency.items()
    ]


def redis_url(config: ServiceConfig) -> str:
    redis_url = config.cluster.get("redis_url")
    if not redis_url:
        doc = config.document
        message = "cluster_qps needs cluster.redis_url (the Redis that counts for the service)"
        raise doc.error(("limits",), message) if doc else ConfigError(message)
    return str(redis_url)


def check_rules(config: ServiceConfig) -> None:
    """Refuse what ``build_guards`` would refuse, without building guards or clients."""
    for key in ("instance_qps", "cluster_qps"):
        for interface, limit in qps_limits(config.limits, key).items():
            where = f"limits.{interface}.{key} in {config.filename}"
            LimitShares.of(
                limit.qps,
                limit.burst_seconds,
                limit.reserved_qps,
                subject=f"{key} of interface {interface}",
                where=where,
            )
    if qps_limits(config.limits, "cluster_qps"):
        redis_url(config)
    breaker_rules(config)
    concurrency_rules(config)
