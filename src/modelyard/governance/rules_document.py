"""Central rules documents: set a key, diff two revisions, validate, commit.

A service's central rules are one YAML document with the service file's rule
sections (``limits``, ``breakers``, ``concurrency``, ``cluster``); auth stays
in each instance's local file. Documents are stored in one canonical form
(``dump_rules``), so a diff between revisions shows only what changed.
``commit_change`` reads the current revision, applies an edit, validates the
result as the instances will build it, and stores it as the next revision;
when another writer wins the race it starts over from the new current one.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.discovery.rules_store import RulesConflict, RulesRevision, RulesStore
from modelyard.errors import ConfigError
from modelyard.governance.rule_checks import check_rules
from modelyard.governance.service_config import (
    CENTRAL_SECTIONS,
    ServiceConfig,
    central_filename,
    parse_rules_document,
)

Edit = Callable[[dict[str, Any]], dict[str, Any]]


def _invalid(detail: str, where: str) -> ConfigError:
    return ConfigError.of(error_rules.CENTRAL_RULES, detail, where=where)


def parse_value(text: str) -> Any:
    """A command-line value as YAML: ``200`` is a number, ``{reserved_qps: 40}`` a mapping."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _invalid(
            f"value {text!r} is not valid YAML: {getattr(exc, 'problem', exc)}",
            "quote strings, write mappings as {key: value}",
        ) from None


def set_key(document: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``document`` with the dotted ``key`` set to ``value``, mappings made on the way."""
    parts = key.split(".")
    if any(not part for part in parts):
        raise _invalid(f"key '{key}' has an empty part", "write keys like limits.infer.cluster_qps")
    if parts[0] not in CENTRAL_SECTIONS:
        known = ", ".join(CENTRAL_SECTIONS)
        why = (
            "auth stays in each instance's local service file"
            if parts[0] == "auth"
            else f"central rules hold {known}"
        )
        raise _invalid(f"key '{key}' is not a central rule: {why}", f"keys start with {known}")
    updated = copy.deepcopy(document)
    node = updated
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            above = ".".join(parts[: depth + 1])
            raise _invalid(
                f"cannot set {key}: {above} is {child!r}, not a mapping",
                f"set {above} itself, or apply a whole document with -f",
            )
        node = child
    node[parts[-1]] = value
    return updated


def dump_rules(document: dict[str, Any]) -> str:
    """The canonical YAML of a rules document."""
    if not document:
        return "{}\n"
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, allow_unicode=True)


def load_rules(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    return data if isinstance(data, dict) else {}


def rules_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, new_label
    )
    return "".join(lines)


def validate_rules(service: str, text: str, filename: str) -> ServiceConfig:
    """The rules as an instance would build them; ``ConfigError`` with filename:line if not."""
    config = parse_rules_document(text, filename, service)
    check_rules(config)
    return config


def read_rules_file(path: Path, service: str) -> dict[str, Any]:
    """A rules document from a file, validated with the file's own lines in errors."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid(f"cannot read {path}: {exc}", "rules apply -f FILE") from None
    config = validate_rules(service, text, path.name)
    assert config.document is not None
    return {k: v for k, v in config.document.data.items() if k != "service"}


async def commit_change(
    store: RulesStore,
    service: str,
    edit: Edit,
    *,
    author: str,
    action: str,
    clock: Clock = SYSTEM_CLOCK,
    attempts: int = 5,
) -> tuple[RulesRevision | None, RulesRevision | None]:
    """Apply ``edit`` to the current rules and store the result as the next revision.

    Returns (the revision it was based on, the new revision); the new one is
    None when the edit changes nothing. An invalid result raises
    ``ConfigError`` and nothing is stored.
    """
    for attempt in range(attempts):
        current = await store.get(service)
        before = current.document if current else dump_rules({})
        text = dump_rules(edit(load_rules(before)))
        if current is not None and text == current.document:
            return current, None
        number = (current.revision if current else 0) + 1
        filename = central_filename(service, number)
        validate_rules(service, text, filename)
        old_label = central_filename(service, current.revision) if current else "(none)"
        revision = RulesRevision(
            service=service,
            revision=number,
            document=text,
            author=author,
            time=clock.wall(),
            action=action,
            diff=rules_diff(before if current else "", text, old_label, filename),
        )
        try:
            await store.put(revision)
        except RulesConflict:
            if attempt + 1 == attempts:
                raise
            continue
        return current, revision
    raise AssertionError("unreachable")
