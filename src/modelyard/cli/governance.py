"""``modelyard rules`` and ``modelyard auth``: governance from the command line."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request

from modelyard.governance.auth import generate_key, hash_secret


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default="127.0.0.1:8000", help="host:port of an instance")
    parser.add_argument("--api-key", default=None, help="a key with the admin permission")
    parser.add_argument("--json", action="store_true", help="print the raw JSON")


def run_rules(args: argparse.Namespace) -> int:
    request = urllib.request.Request(f"http://{args.url}/v2/modelyard/rules")
    if args.api_key:
        request.add_header("x-api-key", args.api_key)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            doc = json.loads(response.read())
    except urllib.error.HTTPError as error:
        print(json.loads(error.read() or b"{}").get("error", str(error)), file=sys.stderr)
        return 1
    except OSError as error:
        print(f"cannot reach {args.url}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    if not doc.get("service"):
        print("no service file: this instance runs without governance rules")
        return 0
    print(f"service {doc['service']}  (rules from {doc['source']})")
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


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="auth_command", required=True)
    hashed = commands.add_parser("hash-key", help="print the digest to store for a key or token")
    hashed.add_argument("key")
    commands.add_parser("new-key", help="generate a key and print it with its digest")


def run_auth(args: argparse.Namespace) -> int:
    if args.auth_command == "hash-key":
        print(hash_secret(args.key))
    else:
        key = generate_key()
        print(f"key:    {key}\ndigest: {hash_secret(key)}")
    return 0
