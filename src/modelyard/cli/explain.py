"""``modelyard explain``: why a request was refused, and the command that changes it.

Takes an error line (or a JSON error body), a request id, or a rule id
(``ratelimit/cluster-qps``, ``breaker/ID``, ``limits.infer.cluster_qps``). A
request id is looked up in the recent-rejection record of the service's live
instances (found in the registry) or of ``--url``; the rule's current value
comes from the service's central rules, or from the instance's live rules when
it enforces a local file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

from modelyard.cli.registry_option import add_registry_argument
from modelyard.discovery import open_registry, require_registry
from modelyard.discovery.rules_store import RulesRevision, open_rules_store
from modelyard.errors import ModelyardError
from modelyard.governance.explain import (
    Context,
    ParsedLine,
    explain,
    parse_line,
    query_kind,
    rule_of_key,
    sections_from_rows,
)
from modelyard.governance.rules_document import load_rules
from modelyard.web_client import WebError, WebSession


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "what",
        help="an error line, a request id (x-request-id), or a rule id such as "
        "ratelimit/cluster-qps, breaker/ID or limits.infer.cluster_qps",
    )
    parser.add_argument("--service", default=None, help="the service, e.g. com.example.ranker")
    add_registry_argument(parser)
    parser.add_argument(
        "--url", default=None, metavar="HOST:PORT", help="ask this instance, not the registry's"
    )
    parser.add_argument("--api-key", default=None, help="a key with the admin permission")
    parser.add_argument(
        "--interface", default="infer", help="the interface of a rate-limit rule id"
    )
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")


def run_explain(args: argparse.Namespace) -> int:
    return asyncio.run(_explain(args))


async def _explain(args: argparse.Namespace) -> int:
    kind = query_kind(args.what)
    parsed, service = _read_what(args, kind)
    if kind == "request" and service is None and args.url is None:
        print("a request id needs --service NAME (or --url HOST:PORT)", file=sys.stderr)
        return 1
    addresses, models = await _instances(args, service)
    answers = await _ask_instances(args, kind, parsed.rule, addresses, models)
    if kind == "request" and answers.record is None:
        print(
            f"no live instance of {service or args.url} remembers request id "
            f"{args.what.strip()} (each keeps its last 1000 rejections)",
            file=sys.stderr,
        )
        return 1
    if answers.record is not None:
        parsed = parse_line(str(answers.record.get("line", "")))
        service = service or answers.record.get("service")
    if service is None and answers.live:
        service = answers.live.get("service")
    rows = explain(parsed, await _rules_in_force(args.registry, service, answers))
    if args.json:
        print(json.dumps({"explanation": dict(rows), "record": answers.record}, indent=2))
        return 0
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        print(f"{label:<{width}}  {text}")
    return 0


def _read_what(args: argparse.Namespace, kind: str) -> tuple[ParsedLine, str | None]:
    """What the line or rule id says by itself, and the service (``--service`` first)."""
    service: str | None = args.service
    if kind == "line":
        parsed = parse_line(args.what)
        if service is None and parsed.central is not None:
            service = parsed.central[0]
        return parsed, service
    if kind == "rule":
        rule, interface = rule_of_key(args.what.strip(), args.interface)
        return ParsedLine("", rule=rule, interface=interface), service
    return ParsedLine(""), service


@dataclass(slots=True)
class _Answers:
    """What the live instances say: the rejection record and who holds it, the rules
    they enforce, the models they serve."""

    models: list[str]
    record: dict[str, Any] | None = None
    instance: str | None = None
    live: dict[str, Any] | None = None


async def _ask_instances(
    args: argparse.Namespace, kind: str, rule: str | None, addresses: list[str], models: list[str]
) -> _Answers:
    """The request's record (a request id), or the newest by the rule (a rule id), and
    the live rules of the instance that holds it (else of the first one)."""
    answers = _Answers(models)
    headers = {"x-api-key": args.api_key} if args.api_key else {}
    async with WebSession(3.0, headers) as client:
        if kind == "request":
            answers.record, answers.instance = await _find(client, addresses, args.what.strip())
            if answers.record is None:
                return answers
        elif kind == "rule":
            answers.record, answers.instance = await _newest(client, addresses, rule)
        asked = answers.instance or (addresses[0] if addresses else None)
        if asked:
            answers.live = await _get(client, asked, "/v2/modelyard/rules")
            if not models:
                answers.models = await _models(client, asked)
    return answers


async def _rules_in_force(registry: str, service: str | None, answers: _Answers) -> Context:
    """The explanation's context: the central rules where they are in force, else the
    instance's live ones."""
    context = Context(
        service=service, record=answers.record, instance=answers.instance, models=answers.models
    )
    source = (answers.live or {}).get("rules_source") or {}
    context.registry = source.get("registry") or registry
    context.local_file = source.get("local_file")
    central = await _central(context.registry, service)
    context.in_force = source.get("in_force") or ("central" if central else "unknown")
    if context.in_force == "central" and central is not None:
        context.sections = load_rules(central.document)
        context.revision, context.revision_by = central.revision, central.author
    elif answers.live:
        context.sections = sections_from_rows(answers.live.get("rules") or [])
    return context


async def _instances(args: argparse.Namespace, service: str | None) -> tuple[list[str], list[str]]:
    """The HTTP addresses to ask, and the models the service serves."""
    if args.url:
        return [args.url], []
    if service is None:
        return [], []
    try:
        require_registry(args.registry)
    except ModelyardError as error:
        print(f"warning: {error.line()}", file=sys.stderr)
        return [], []
    registry = open_registry(args.registry)
    try:
        snapshot = await registry.resolve(service)
    except ModelyardError as error:
        print(f"warning: {error.line()}", file=sys.stderr)
        return [], []
    finally:
        await registry.aclose()
    addresses = [i.http for i in snapshot.instances if i.http]
    models = sorted({m for i in snapshot.instances for m in i.models if i.serves(m)})
    return addresses, models


async def _get(client: WebSession, address: str, path: str) -> dict[str, Any] | None:
    try:
        response = await client.get(f"http://{address}{path}")
    except WebError:
        return None
    if response.status != 200:
        return None
    doc: dict[str, Any] = response.json()
    return doc


async def _find(
    client: WebSession, addresses: list[str], request_id: str
) -> tuple[dict[str, Any] | None, str | None]:
    path = f"/v2/modelyard/rejections/{request_id}"
    found = await asyncio.gather(*(_get(client, a, path) for a in addresses))
    for address, record in zip(addresses, found, strict=True):
        if record is not None:
            return record, address
    return None, None


async def _newest(
    client: WebSession, addresses: list[str], rule: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The newest recorded rejection by ``rule`` on any of the instances."""
    lists = await asyncio.gather(*(_get(client, a, "/v2/modelyard/rejections") for a in addresses))
    best: tuple[dict[str, Any] | None, str | None] = (None, None)
    for address, doc in zip(addresses, lists, strict=True):
        for event in (doc or {}).get("recent", []):
            newest = best[0]
            if event.get("rule") == rule and (newest is None or event["time"] > newest["time"]):
                best = (event, address)
    return best


async def _models(client: WebSession, address: str) -> list[str]:
    try:
        response = await client.post(f"http://{address}/v2/repository/index", json={})
    except WebError:
        return []
    if response.status != 200:
        return []
    return sorted({str(row["name"]) for row in response.json() if row.get("state") == "READY"})


async def _central(registry: str, service: str | None) -> RulesRevision | None:
    if service is None:
        return None
    try:
        require_registry(registry)
    except ModelyardError as error:
        print(f"warning: {error.line()}", file=sys.stderr)
        return None
    store = open_rules_store(registry)
    try:
        return await store.get(service)
    except ModelyardError as error:
        print(f"warning: {error.line()}", file=sys.stderr)
        return None
    finally:
        await store.aclose()
