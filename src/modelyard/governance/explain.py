"""``modelyard explain``'s logic: from a rejection to its rule, its numbers and the fix.

Pure functions, no I/O: ``parse_line`` reads an error line back into its
fields and numbers, ``rule_setting`` finds the setting behind a rule id in a
rules document, ``budget_sharing`` says which models share that budget and
``explain`` puts it together with what the CLI fetched (the instance's
recent-rejection record, the rules in force) into labelled rows.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from modelyard.governance.auth import AUTH_RULES
from modelyard.governance.breaker import BREAKER_RULES
from modelyard.governance.concurrency import CONCURRENCY_RULES
from modelyard.governance.ratelimit import (
    CLUSTER_QPS_RULE,
    INSTANCE_QPS_RULE,
    LIMIT_KEYS,
    RATE_LIMIT_RULES,
    limit_key,
)
from modelyard.governance.service_config import counted_on

_CENTRAL = re.compile(r"\bcentral:(?P<service>[a-z0-9.-]+)@r(?P<revision>\d+)")
_RULE_ID = re.compile(r"^(?P<family>[a-z][a-z-]*)/(?P<name>[\w.-]+)$")
_RULE_KEY = re.compile(r"^(limits|breakers|concurrency|cluster)(\.[\w-]+)+$")
_RATE = re.compile(
    r"(?P<strategy>[\w-]+) (?P<observed>[\d.]+)/s over limit (?P<limit>[\d.]+)/s "
    r"for interface (?P<interface>\w+)(?: \((?P<who>[^()]*)\))?"
)
_BREAKER = re.compile(
    r"breaker (?P<id>\S+) (?P<state>[A-Z_]+) for (?:model (?P<model>\S+) on )?"
    r"interface (?P<interface>\w+): (?P<reason>.*)"
)
_BREAKER_REASON = re.compile(
    r"(?P<measure>[a-z -]+?) (?P<value>[\d.]+) (?:over|at) threshold (?P<threshold>[\d.]+) "
    r"\((?P<bad>\d+) of (?P<calls>\d+) calls .*? in (?P<window>[\d.]+) s\)"
)
_CONCURRENCY = re.compile(
    r"(?P<in_flight>\d+) calls in flight at concurrency limit (?P<limit>\d+) "
    r"for model (?P<model>\S+)"
)
_PRINCIPAL = re.compile(
    r"principal '(?P<principal>[^']+)' may not call interface (?P<interface>\w+)"
    r"(?: for model '(?P<model>[^']+)')?"
)
_NO_CREDENTIALS = re.compile(r"for interface (?P<interface>\w+)")

_LAYERS = {
    INSTANCE_QPS_RULE: "governance > rate limit > instance-qps (a token bucket on each instance)",
    CLUSTER_QPS_RULE: "governance > rate limit > cluster-qps "
    "(one budget for every instance of the service, counted in Redis)",
    "breaker": "governance > circuit breaker",
    "concurrency": "governance > adaptive concurrency limit",
    "auth": "governance > auth (keys and principals, from each instance's local file)",
}


def query_kind(text: str) -> str:
    """'line' (an error line or JSON error body), 'rule' (id or dotted key) or 'request'."""
    text = text.strip()
    if text.startswith("{") or text.startswith("[") or "; rule=" in text:
        return "line"
    if _RULE_ID.match(text) or _RULE_KEY.match(text):
        return "rule"
    return "request"


def rule_of_key(text: str, interface: str = "infer") -> tuple[str, str]:
    """A rule id and its interface from a rule id or a dotted key into the rules document."""
    parts = text.split(".")
    if parts[0] == "limits" and len(parts) >= 3:
        if parts[2] in ("cluster_qps", "instance_qps"):
            return f"{RATE_LIMIT_RULES}{parts[2].replace('_', '-')}", parts[1]
        return CLUSTER_QPS_RULE, parts[1]
    if parts[0] in ("breakers", "concurrency") and len(parts) >= 2:
        family = BREAKER_RULES if parts[0] == "breakers" else CONCURRENCY_RULES
        return f"{family}{parts[1]}", interface
    return text, interface


def sections_from_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rules document behind ``GET /v2/modelyard/rules``'s rows (limits, breakers, ...)."""
    sections: dict[str, Any] = {}
    for row in rows:
        section, _, rest = str(row.get("rule", "")).partition(".")
        if section == "limits":
            interface, _, key = rest.partition(".")
            limit = sections.setdefault("limits", {}).setdefault(interface, {})
            if key.startswith("models."):
                limit.setdefault("models", {})[key.removeprefix("models.")] = row.get("value")
            else:
                limit[key] = row.get("value")
        elif section in ("breakers", "concurrency") and rest:
            sections.setdefault(section, {})[rest] = row.get("value")
        elif section == "interfaces" and rest:
            models = (row.get("value") or {}).get("models") or []
            sections.setdefault("interfaces", {})[rest] = list(models)
    return sections


def models_on(sections: Mapping[str, Any], interface: str, models: list[str]) -> list[str]:
    """Of ``models``, those whose infer calls count on ``interface``: a declared interface's
    (the first declared that names a model), or infer's (the models none names)."""
    declared = {name: tuple(p) for name, p in (sections.get("interfaces") or {}).items()}
    if interface != "infer" and interface not in declared:
        return models
    return [model for model in models if counted_on(declared, model) == interface]


@dataclass(slots=True)
class ParsedLine:
    """An error line read back: ``[layer] detail; rule=...; change: ...; retry after Ns``."""

    line: str
    layer: str = ""
    detail: str = ""
    rule: str | None = None
    where: str | None = None
    retry_after: float | None = None
    interface: str | None = None
    model: str | None = None
    numbers: dict[str, Any] = field(default_factory=dict)

    @property
    def central(self) -> tuple[str, int] | None:
        """(service, revision) when the rule was set centrally."""
        match = _CENTRAL.search(self.where or "")
        return (match["service"], int(match["revision"])) if match else None


def parse_line(text: str) -> ParsedLine:
    text = text.strip()
    if text.startswith("{"):
        with contextlib.suppress(ValueError, AttributeError):
            text = str(json.loads(text).get("error", text))
    parsed = ParsedLine(text)
    match = re.match(r"^\[(?P<layer>[\w-]+)\] ", text)
    rest = text
    if match:
        parsed.layer = match["layer"]
        rest = text[match.end() :]
    retry = re.search(r"; retry after (?P<s>[\d.]+)s$", rest)
    if retry:
        parsed.retry_after = float(retry["s"])
        rest = rest[: retry.start()]
    rule_at = rest.find("; rule=")
    if rule_at >= 0:
        tail = rest[rule_at + len("; rule=") :]
        rest = rest[:rule_at]
        if not parsed.layer:  # Triton's wording first: the rule names the layer
            parsed.layer = tail.partition("/")[0]
        rule, sep, where = tail.partition("; change: ")
        parsed.rule = rule.strip()
        parsed.where = where.strip() if sep else None
    else:
        change_at = rest.find("; change: ")
        if change_at >= 0:
            parsed.where = rest[change_at + len("; change: ") :].strip()
            rest = rest[:change_at]
    parsed.detail = rest.removeprefix("request rejected: ").strip()
    _read_numbers(parsed)
    return parsed


def _read_numbers(parsed: ParsedLine) -> None:
    detail = parsed.detail
    numbers = parsed.numbers
    if (rate := _RATE.search(detail)) is not None:
        parsed.interface = rate["interface"]
        numbers.update(observed_qps=float(rate["observed"]), limit_qps=float(rate["limit"]))
        for part in (rate["who"] or "").split(", "):
            if part.startswith("model "):
                parsed.model = part.removeprefix("model ")
            elif part.startswith("reserved ") and part.endswith("/s"):
                numbers["reserved_qps"] = float(part.removeprefix("reserved ")[:-2])
            elif part.startswith("redis unreachable"):
                numbers["redis"] = part
    elif (breaker := _BREAKER.search(detail)) is not None:
        parsed.interface, parsed.model = breaker["interface"], breaker["model"]
        numbers["state"] = breaker["state"]
        if (reason := _BREAKER_REASON.search(breaker["reason"])) is not None:
            numbers.update(
                measure=reason["measure"].strip(),
                value=float(reason["value"]),
                threshold=float(reason["threshold"]),
                bad_calls=int(reason["bad"]),
                calls=int(reason["calls"]),
                window_s=float(reason["window"]),
            )
        recovers = re.search(r"(?:recovers|next probe) in (?P<s>[\d.]+)s", detail)
        if recovers is not None:
            numbers["recovers_in_s"] = float(recovers["s"])
    elif (limit := _CONCURRENCY.search(detail)) is not None:
        parsed.model = limit["model"]
        numbers.update(in_flight=int(limit["in_flight"]), limit=int(limit["limit"]))
    elif (principal := _PRINCIPAL.search(detail)) is not None:
        parsed.interface, parsed.model = principal["interface"], principal["model"]
        numbers["principal"] = principal["principal"]
    elif (auth := _NO_CREDENTIALS.search(detail)) is not None:
        parsed.interface = auth["interface"]


@dataclass(frozen=True, slots=True)
class Setting:
    """The setting behind a rule: shown as ``key = value``, changed through ``change_key``."""

    key: str
    value: Any
    change_key: str
    change_value: Any


def rule_setting(
    sections: Mapping[str, Any], rule: str | None, interface: str | None, model: str | None
) -> Setting | None:
    """The setting a rule id names in a rules document (limits, breakers, concurrency)."""
    match = _RULE_ID.match(rule or "")
    if match is None:
        return None
    key = LIMIT_KEYS.get(rule or "")
    if key is not None and interface:
        limit = (sections.get("limits") or {}).get(interface) or {}
        path = f"limits.{interface}.{key}"
        return Setting(path, limit.get(key), path, limit.get(key))
    name = match["name"]
    for family, section, knob in _RULE_SECTIONS:
        if (rule or "").startswith(family):
            rule_doc = (sections.get(section) or {}).get(name)
            knob_value = rule_doc.get(knob) if isinstance(rule_doc, dict) else None
            return Setting(f"{section}.{name}", rule_doc, f"{section}.{name}.{knob}", knob_value)
    return None


# rule ids named by a rule of their own: the family, its section, the knob that moves it
_RULE_SECTIONS = (
    (BREAKER_RULES, "breakers", "threshold"),
    (CONCURRENCY_RULES, "concurrency", "max_limit"),
)


def budget_sharing(
    sections: Mapping[str, Any], rule: str | None, interface: str | None, models: list[str]
) -> str | None:
    """Which models share the budget a rate-limit rule guards."""
    key = limit_key(rule)
    if key is None or not interface:
        return None
    limit = (sections.get("limits") or {}).get(interface) or {}
    total = limit.get(key)
    reserved = {m: float(s["reserved_qps"]) for m, s in (limit.get("models") or {}).items()}
    models = models_on(sections, interface, models)
    everyone = ", ".join(models) if models else "all models of the service"
    where = "every instance of the service" if key == "cluster_qps" else "each instance"
    if not reserved:
        return f"one budget on {where} for every model on interface {interface}: {everyone}"
    shares = ", ".join(f"{m} {_num(q)}/s" for m, q in reserved.items())
    pooled = [m for m in models if m not in reserved]
    pool = f"{_num(float(total) - sum(reserved.values()))}/s" if total is not None else "the rest"
    others = ", ".join(pooled) if pooled else "models without a share"
    return (
        f"reserved shares on {where}: {shares}; the pool ({pool}, plus unused shares) "
        f"goes to {others}"
    )


def change_command(service: str, key: str, registry: str | None) -> str:
    suffix = f" --registry {registry}" if registry else ""
    return f"modelyard rules set {service} {key} <value>{suffix}"


@dataclass(slots=True)
class Context:
    """What the CLI found out around a rejection."""

    service: str | None = None
    record: dict[str, Any] | None = None  # the instance's recent-rejection event
    instance: str | None = None  # host:port that had the record
    sections: Mapping[str, Any] = field(default_factory=dict)  # rules in force now
    in_force: str = "unknown"  # central | local | none | unknown
    revision: int | None = None  # central revision in force now
    revision_by: str | None = None
    local_file: str | None = None
    registry: str | None = None
    models: list[str] = field(default_factory=list)  # models of the service


def explain(parsed: ParsedLine, context: Context) -> list[tuple[str, str]]:
    """Labelled rows: what, layer, rule, numbers, shares, change."""
    rows: list[tuple[str, str]] = []
    record = context.record
    if record is not None:
        when = datetime.fromtimestamp(float(record.get("time", 0))).isoformat(timespec="seconds")
        at = f" by instance {context.instance}" if context.instance else ""
        rows.append(
            ("what", f"request {record.get('request_id')} rejected at {when}{at} "
                     f"(status {record.get('code')}, {record.get('status')})"),
        )  # fmt: skip
    rule = parsed.rule
    family = (rule or "").partition("/")[0]
    layer = _LAYERS.get(rule or "") or _LAYERS.get(family) or parsed.layer or "unknown"
    rows.append(("layer", layer))
    setting = rule_setting(context.sections, rule, parsed.interface, parsed.model)
    rows.append(("rule", _rule_row(rule, setting, context)))
    numbers = _numbers_row(parsed)
    if numbers:
        rows.append(("numbers", numbers))
    shares = budget_sharing(context.sections, rule, parsed.interface, context.models)
    if shares:
        rows.append(("shares", shares))
    rows.append(("change", _change_row(parsed, setting, context)))
    return rows


def _rule_row(rule: str | None, setting: Setting | None, context: Context) -> str:
    if rule is None:
        return "the line names no rule"
    if setting is None:
        return rule
    now = _value(setting.value)
    source = {
        "central": f"central revision {context.revision}"
        + (f" by {context.revision_by}" if context.revision_by else ""),
        "local": f"local file {context.local_file}",
    }.get(context.in_force, "")
    text = f"{rule}: {setting.key} = {now}" + (f" ({source})" if source else "")
    record = context.record or {}
    then = (record.get("setting") or {}).get("value")
    if record.get("setting") and then != setting.value:
        revision = record.get("rules_revision")
        text += f"; at the time: {_value(then)}" + (f" (revision {revision})" if revision else "")
    return text


def _numbers_row(parsed: ParsedLine) -> str:
    n = parsed.numbers
    parts: list[str] = []
    if "observed_qps" in n:
        parts.append(f"observed {_num(n['observed_qps'])}/s over limit {_num(n['limit_qps'])}/s")
        if parsed.interface:
            parts.append(f"interface {parsed.interface}")
        if parsed.model:
            parts.append(f"model {parsed.model}")
        if "reserved_qps" in n:
            parts.append(f"reserved {_num(n['reserved_qps'])}/s")
        if "redis" in n:
            parts.append(str(n["redis"]))
    elif "state" in n:
        parts.append(f"breaker {n['state']}")
        if "measure" in n:
            parts.append(
                f"{n['measure']} {_num(n['value'])} vs threshold {_num(n['threshold'])} "
                f"({n['bad_calls']} of {n['calls']} calls in a {_num(n['window_s'])} s window)"
            )
        if "recovers_in_s" in n:
            parts.append(f"next try in {n['recovers_in_s']:.2f}s")
    elif "in_flight" in n:
        parts.append(f"{n['in_flight']} calls in flight at limit {n['limit']}")
    elif "principal" in n:
        parts.append(f"principal {n['principal']} on interface {parsed.interface}")
    if parsed.retry_after is not None:
        parts.append(f"retry after {parsed.retry_after:.2f}s")
    return "; ".join(parts)


def _change_row(parsed: ParsedLine, setting: Setting | None, context: Context) -> str:
    if (parsed.rule or "").startswith(AUTH_RULES):
        return (
            f"{parsed.where} (auth stays in each instance's local service file)"
            if parsed.where
            else "auth.principals in each instance's local service file"
        )
    if setting is None or context.service is None:
        return parsed.where or "the line says nowhere"
    if context.in_force == "local":
        where = context.local_file or "the local service file"
        return (
            f"{setting.change_key} in {where} (this instance enforces its local file, "
            "which reloads within a second)"
        )
    return change_command(context.service, setting.change_key, context.registry)


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))
