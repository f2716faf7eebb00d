"""``modelyard rules`` and ``modelyard auth``: governance from the command line.

``modelyard rules --url HOST:PORT`` prints the rules one instance enforces and
where they come from. ``modelyard rules get|set|apply|history|rollback SERVICE``
read and change the service's central rules in the registry: every change is
validated first, stored as a new revision with its author and diff, and applied
by the live instances within a second.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import socket
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modelyard import error_rules
from modelyard.cli.registry_option import add_registry_argument
from modelyard.errors import ConfigError

if TYPE_CHECKING:
    from modelyard.discovery.rules_store import RulesStore

# each command imports what it uses when it runs: reading a revision loads neither the
# HTTP client nor the guards that a change is validated against


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default="127.0.0.1:8000", help="host:port of an instance")
    parser.add_argument("--api-key", default=None, help="a key with the admin permission")
    parser.add_argument("--json", action="store_true", help="print the raw JSON")
    commands = parser.add_subparsers(
        dest="rules_command",
        metavar="{get,set,apply,history,rollback}",
        help="central rules in the registry; without a command: the live rules of --url",
    )

    def command(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help)
        sub.add_argument("service", help="service name, e.g. com.example.ranker")
        add_registry_argument(sub)
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
        return sub

    get = command("get", "print the service's current central rules (or one revision)")
    get.add_argument("--revision", type=int, default=None, metavar="N")
    writers = [
        command("set", "set one key, e.g. limits.infer.cluster_qps 200"),
        command("apply", "replace the whole rules document with a file"),
        command("rollback", "make an earlier revision's document current again"),
    ]
    writers[0].add_argument("key", help="dotted key into the rules document")
    writers[0].add_argument("value", help="YAML value: 200, 0.5, '{reserved_qps: 40}'")
    writers[1].add_argument("-f", "--file", type=Path, required=True, metavar="RULES.yaml")
    writers[2].add_argument("--to", type=int, required=True, metavar="REVISION")
    for writer in writers:
        writer.add_argument("--author", default=None, help="default: $USER@hostname")
    history = command("history", "every revision: who, when, what, and the diff with -v")
    history.add_argument("--limit", type=int, default=None, metavar="N")
    history.add_argument("-v", "--diff", action="store_true", help="show each revision's diff")


def run_rules(args: argparse.Namespace) -> int:
    if args.rules_command is None:
        return _live_rules(args)
    return asyncio.run(_central_rules(args))


def _live_rules(args: argparse.Namespace) -> int:
    from modelyard.web_client import WebError, fetch

    headers = {"x-api-key": args.api_key} if args.api_key else {}
    try:
        response = fetch("GET", f"http://{args.url}/v2/modelyard/rules", headers=headers, timeout=5)
    except WebError as error:
        print(f"cannot reach {args.url}: {error}", file=sys.stderr)
        return 1
    if response.status != 200:
        try:
            line = response.json().get("error", response.reason)
        except ValueError:
            line = f"{response.status} {response.reason}"
        print(line, file=sys.stderr)
        return 1
    doc = response.json()
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    if not doc.get("service"):
        print("no service file: this instance runs without governance rules")
        return 0
    print(f"service {doc['service']}  (rules from {_source(doc)})")
    width = max((len(r["rule"]) for r in doc["rules"]), default=10)
    for rule in doc["rules"]:
        value = json.dumps(rule["value"], separators=(",", ":"))
        print(f"  {rule['rule']:<{width}}  {value}  [{rule['set_at']}]")
    decisions = doc.get("decisions") or {}
    print(
        f"decisions: admitted {decisions.get('admitted', 0)}, "
        f"rejected {decisions.get('rejected')}, fallbacks {decisions.get('fallbacks')}"
    )
    return 0


def _source(doc: dict[str, Any]) -> str:
    """Where the rules in force come from, and why they win (``--rules-source``)."""
    source = doc.get("rules_source")
    if not source:
        return str(doc.get("source"))
    mode, in_force = source["mode"], source["in_force"]
    central = source.get("central")
    local = source.get("local_file")
    if in_force == "central" and central:
        text = (
            f"central revision {central['revision']} by {central['author']} "
            f"at {_when(central['time'])} in {source.get('registry')}"
        )
    elif in_force == "central":
        text = f"central rules, none stored yet in {source.get('registry')}"
    elif in_force == "local":
        text = str(local)
    else:
        text = "nowhere: no service file and no central rules"
    why = {
        ("auto", "central"): "the service has central rules, so they win",
        ("auto", "local"): "the service has no central rules",
        ("auto", "none"): "the service has no central rules",
        ("central", "central"): "",
        ("local", "local"): "",
    }.get((mode, in_force), "")
    text += f"; --rules-source {mode}" + (f": {why}" if why else "")
    if in_force == "central" and local:
        text += f"; auth from {local}"
    if source.get("rejected_revision"):
        text += f"; revision {source['rejected_revision']} was refused (see the log)"
    return text


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).isoformat(sep=" ", timespec="seconds")


def default_author() -> str:
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or getpass.getuser()
    return f"{user}@{socket.gethostname()}"


async def _central_rules(args: argparse.Namespace) -> int:
    from modelyard.discovery import require_registry
    from modelyard.discovery.rules_store import open_rules_store

    require_registry(args.registry)
    store = open_rules_store(args.registry)
    try:
        if args.rules_command == "get":
            return await _get(store, args)
        if args.rules_command == "history":
            return await _history(store, args)
        return await _write(store, args)
    finally:
        await store.aclose()


async def _get(store: RulesStore, args: argparse.Namespace) -> int:
    revision = await store.get(args.service, args.revision)
    if revision is None:
        which = f"revision {args.revision}" if args.revision else "central rules"
        print(f"{args.service} has no {which} in {args.registry}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        print(json.dumps({**revision.to_json(), "digest": revision.digest}, indent=2))
        return 0
    print(
        f"# {args.service} revision {revision.revision} by {revision.author} "
        f"at {_when(revision.time)}: {revision.action}"
    )
    print(revision.document, end="")
    return 0


async def _history(store: RulesStore, args: argparse.Namespace) -> int:
    revisions = await store.history(args.service, args.limit)
    if getattr(args, "json", False):
        print(json.dumps([r.to_json() for r in revisions], indent=2))
        return 0
    if not revisions:
        print(f"{args.service} has no central rules in {args.registry}")
        return 0
    for revision in revisions:
        print(
            f"r{revision.revision:<4} {_when(revision.time)}  {revision.author:<24} "
            f"{revision.action}"
        )
        if args.diff and revision.diff:
            print("    " + revision.diff.rstrip("\n").replace("\n", "\n    "))
    return 0


Edit = Callable[[dict[str, Any]], dict[str, Any]]


async def _edit(store: RulesStore, args: argparse.Namespace) -> tuple[Edit, str]:
    """The change a write command asks for, and how history will name it."""
    from modelyard.governance.rules_document import (
        load_rules,
        parse_value,
        read_rules_file,
        set_key,
    )

    if args.rules_command == "set":
        value = parse_value(args.value)
        return (
            lambda document: set_key(document, args.key, value),
            f"set {args.key} {json.dumps(value, separators=(',', ':'))}",
        )
    if args.rules_command == "apply":
        document = read_rules_file(args.file, args.service)
        return (lambda _: document), f"apply {args.file.name}"
    target = await store.get(args.service, args.to)
    if target is None:
        raise ConfigError.of(
            error_rules.CENTRAL_REVISION,
            f"{args.service} has no revision {args.to} in {args.registry}",
            where=f"modelyard rules history {args.service} --registry {args.registry}",
        )
    return (lambda _: load_rules(target.document)), f"rollback to r{args.to}"


async def _write(store: RulesStore, args: argparse.Namespace) -> int:
    from modelyard.governance.rules_document import commit_change

    author = args.author or default_author()
    try:
        edit, action = await _edit(store, args)
        before, after = await commit_change(store, args.service, edit, author=author, action=action)
    except ConfigError as error:
        current = await store.get(args.service)
        at = f"revision {current.revision}" if current else "no central rules"
        print(
            f"{error.line()}\nrefused: nothing changed, {args.service} stays at {at}",
            file=sys.stderr,
        )
        return 1
    if after is None:
        at = f"revision {before.revision}" if before else "no rules"
        print(f"{args.service}: no change ({at} already says so)")
        return 0
    old = f"revision {before.revision}" if before else "no central rules"
    print(f"{args.service}: {old} -> revision {after.revision} by {author} ({action})")
    print(after.diff, end="")
    if before is None:
        print(
            "note: the service's first central revision. Instances with --rules-source auto "
            "(the default) now enforce these central rules instead of their local file's rules; "
            "auth stays local."
        )
    return 0


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="auth_command", required=True)
    hashed = commands.add_parser("hash-key", help="print the digest to store for a key or token")
    hashed.add_argument("key")
    commands.add_parser("new-key", help="generate a key and print it with its digest")


def run_auth(args: argparse.Namespace) -> int:
    from modelyard.governance.auth import generate_key, hash_secret

    if args.auth_command == "hash-key":
        print(hash_secret(args.key))
    else:
        key = generate_key()
        print(f"key:    {key}\ndigest: {hash_secret(key)}")
    return 0
