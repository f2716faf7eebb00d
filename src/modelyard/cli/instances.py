"""``modelyard instances``: the live instances of a service, as the registry has them."""

from __future__ import annotations

import argparse
import asyncio
import json

from modelyard.cli.registry_option import add_registry_argument
from modelyard.discovery import Snapshot, open_registry, require_registry
from modelyard.discovery.registry import Instance


def add_instances_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("service", help="service name, e.g. com.example.ranker")
    add_registry_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the entries as JSON")


async def _resolve(url: str, service: str) -> Snapshot:
    require_registry(url)
    registry = open_registry(url)
    try:
        return await registry.resolve(service)
    finally:
        await registry.aclose()


def _models(instance: Instance) -> str:
    shown = []
    for model, versions in sorted(instance.models.items()):
        for version, state in sorted(versions.items(), key=lambda item: (len(item[0]), item[0])):
            suffix = "" if state == "READY" else f" ({state})"
            shown.append(f"{model}/{version}{suffix}")
    return ", ".join(shown) or "-"


def format_table(instances: list[Instance]) -> str:
    header = ("INSTANCE", "GROUP", "STATE", "HTTP", "GRPC", "WEIGHT", "LABELS", "MODELS")
    rows = [header]
    for i in sorted(instances, key=lambda i: (i.group, i.instance_id)):
        labels = ",".join(f"{k}={v}" for k, v in sorted(i.labels.items())) or "-"
        rows.append(
            (
                i.instance_id,
                i.group,
                i.state,
                i.http or "-",
                i.grpc or "-",
                f"{i.weight:g}",
                labels,
                _models(i),
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in rows
    )


def run_instances(args: argparse.Namespace) -> int:
    snapshot = asyncio.run(_resolve(args.registry, args.service))
    if args.json:
        doc = {
            "service": args.service,
            "revision": snapshot.revision,
            "instances": [i.to_json() for i in snapshot.instances],
        }
        print(json.dumps(doc, indent=2))
    elif not snapshot.instances:
        print(f"no live instances of {args.service} in {args.registry}")
    else:
        print(format_table(snapshot.instances))
    return 0
