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
from typing import Any

from modelyard.cli.registry_option import add_registry_argument
from modelyard.discovery import open_registry, require_registry
from modelyard.discovery.rules_store import RulesRevision, open_rules_store
from modelyard.errors import ModelyardError
from modelyard.governance.explain import (
    Context,
    ParsedLine,
    classify,
    explain,
    parse_line,
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
    kind = classify(args.what)
    service: str | None = args.service
    parsed = ParsedLine("")
    if kind == "line":
        parsed = parse_line(args.what)
        if service is None and parsed.central is not None:
            service = parsed.central[0]
    elif kind == "rule":
        rule, interface = rule_of_key(args.what.strip(), args.interface)
        parsed = ParsedLine("", rule=rule, interface=interface)
    if kind == "request" and service is None and args.url is None:
        print("a request id needs --service NAME (or --url HOST:PORT)", file=sys.stderr)
        return 1

    addresses, models = await _instances(args, service)
    headers = {"x-api-key": args.api_key} if args.api_key else {}
    record: dict[str, Any] | None = None
    instance: str | None = None
    async with WebSession(3.0, headers) as client:
        if kind == "request":
            record, instance = await _find(client, addresses, args.what.strip())
            if record is None:
                print(
                    f"no live instance of {service or args.url} remembers request id "
                    f"{args.what.strip()} (each keeps its last 1000 rejections)",
                    file=sys.stderr,
                )
                return 1
        elif kind == "rule":
            record, instance = await _newest(client, addresses, parsed.rule)
        if record is not None:
            parsed = parse_line(str(record.get("line", "")))
            service = service or record.get("service")
        asked = instance or (addresses[0] if addresses else None)
        live = await _get(client, asked, "/v2/modelyard/rules") if asked else None
        if not models and asked:
            models = await _models(client, asked)
    if service is None and live:
        service = live.get("service")

    context = Context(service=service, record=record, instance=instance, models=models)
    source = (live or {}).get("rules_source") or {}
    context.registry = source.get("registry") or args.registry
    context.local_file = source.get("local_file")
    central = await _central(context.registry, service)
    context.in_force = source.get("in_force") or ("central" if central else "unknown")
    if context.in_force == "central" and central is not None:
        context.sections = load_rules(central.document)
        context.revision, context.revision_by = central.revision, central.author
    elif live:
        context.sections = sections_from_rows(live.get("rules") or [])
    rows = explain(parsed, context)
    if args.json:
        print(json.dumps({"explanation": dict(rows), "record": record}, indent=2))
        return 0
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        print(f"{label:<{width}}  {text}")
    return 0


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
