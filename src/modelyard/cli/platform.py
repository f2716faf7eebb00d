"""``modelyard platform``: validate, ledger, render kubernetes, autoscale explain."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import yaml

from modelyard import error_rules
from modelyard.cli.cluster_options import add_cluster_arguments, cluster_options
from modelyard.cli.platform_ops import (
    OPS,
    add_dr_change_arguments,
    add_ops_arguments,
    run_dr_change,
    run_ops,
)
from modelyard.cli.platform_up import add_up_arguments, run_up
from modelyard.clock import FakeClock
from modelyard.control.apply import State, ledger_of
from modelyard.control.autoscale import Autoscaler
from modelyard.control.disaster import GroupRecovery, recovery
from modelyard.control.kubernetes import render
from modelyard.control.ledger import build_ledger, validate
from modelyard.control.scaling import instances_per_replica, quota_bound, rule_of
from modelyard.control.spec import PlatformSpec, read_platform_spec
from modelyard.errors import ConfigError


def add_platform_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="platform_command", required=True)
    for name, text in (
        ("validate", "report every broken rule with its code and numbers (exit 1 if any)"),
        ("ledger", "cards, instances and quota hard / used / reserved / free"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
        if name == "ledger":
            command.add_argument(
                "--state",
                type=Path,
                default=None,
                metavar="DIR",
                help="count what runs there: the autoscaler's replicas, a lost place's "
                "replacements, and the surge cards releases in progress reserve",
            )
        command.add_argument("--json", action="store_true")
    render_parser = commands.add_parser("render", help="manifests for a cluster")
    render_parser.add_argument("target", choices=["kubernetes"])
    render_parser.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
    add_cluster_arguments(render_parser)
    autoscale = commands.add_parser("autoscale", help="autoscaling evaluation")
    autoscale_commands = autoscale.add_subparsers(dest="autoscale_command", required=True)
    explain = autoscale_commands.add_parser(
        "explain", help="each decision on a load trace and the constraint that bound it"
    )
    explain.add_argument(
        "target",
        metavar="SERVICE/GROUP[/TEMPLATE]",
        help="the template the control plane decides for (the group: every template at once)",
    )
    explain.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
    explain.add_argument(
        "--trace",
        type=Path,
        required=True,
        help="CSV of seconds,in_flight (the template's instances' total, or the group's)",
    )
    explain.add_argument("--current", type=int, default=None, help="replicas at the start")
    explain.add_argument("--every", type=float, default=2.0, help="seconds between decisions")
    dr = commands.add_parser("dr", help="disaster recovery per group")
    dr_commands = dr.add_subparsers(dest="dr_command", required=True)
    dr_evaluate = dr_commands.add_parser(
        "evaluate",
        help="what losing a data centre or a queue does to each group (exit 1: "
        "a group cannot be made whole)",
    )
    dr_evaluate.add_argument("target", nargs="?", metavar="SERVICE/GROUP", default=None)
    dr_evaluate.add_argument("--lose", required=True, metavar="DC|QUEUE")
    dr_evaluate.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
    dr_evaluate.add_argument("--json", action="store_true")
    add_dr_change_arguments(dr_commands)
    add_ops_arguments(commands)
    up = commands.add_parser(
        "up", help="apply the spec, front it with gateways, autoscale, serve the API and console"
    )
    add_up_arguments(up)


def _dr_evaluate(spec: PlatformSpec, args: argparse.Namespace) -> int:
    """Exit 0: every group is whole after the loss; 1: one is not; 2: a wrong command."""
    try:
        results = _dr_results(spec, args)
    except ConfigError as error:
        print(error.line(), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=2))
    else:
        for r in results:
            print(
                f"{r.service}/{r.group}: {r.state} — loses {r.lost_instances} of {r.instances} "
                f"instances ({r.lost_cards} cards), {r.replaced} replaced, capacity "
                f"{r.capacity():.0%}"
            )
            for why in r.shortfall:
                print(f"    cannot replace {why}")
    return 0 if all(r.state == "whole" for r in results) else 1


def _dr_results(spec: PlatformSpec, args: argparse.Namespace) -> list[GroupRecovery]:
    return recovery(spec, args.lose, args.target)


def _validate(spec: PlatformSpec, as_json: bool) -> int:
    findings = validate(spec)
    if as_json:
        print(json.dumps([_finding(f) for f in findings], indent=2))
    else:
        for finding in findings:
            print(finding.line())
        print(f"{len(findings)} broken rule(s)" if findings else "spec is valid")
    return 1 if findings else 0


def _finding(f: object) -> dict[str, object]:
    return {
        k: getattr(f, k) for k in ("code", "message", "where", "requested", "used", "limit", "hint")
    }


def _ledger(spec: PlatformSpec, as_json: bool, state_dir: Path | None = None) -> int:
    ledger = build_ledger(spec) if state_dir is None else ledger_of(spec, State.load(state_dir))
    if as_json:
        doc = ledger.to_json()
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"total cards {ledger.total_cards}   instances {ledger.instances}   "
        f"GPU instances {ledger.gpu_instances}"
    )
    print(
        f"\n{'quota':<16} {'dc':<6} {'gpu model':<12} {'hard':>5} {'used':>5} "
        f"{'reserved':>8} {'free':>5}"
    )
    for r in ledger.rows:
        print(
            f"{r.quota:<16} {r.data_center:<6} {r.gpu_model:<12} {r.hard:>5} {r.used:>5} "
            f"{r.reserved:>8} {r.free:>5}"
        )
    print(f"\n{'quota':<16} {'owner':<32} {'cores used/hard':>16} {'memory GB used/hard':>20}")
    for quota, owner in sorted(ledger.owners.items()):
        who = ", ".join(f"{k}={v}" for k, v in sorted(owner.items())) or "-"
        cores = _used_of_hard(ledger.cpu_by_quota.get(quota))
        memory = _used_of_hard(ledger.memory_by_quota.get(quota))
        print(f"{quota:<16} {who:<32} {cores:>16} {memory:>20}")
    print(f"\n{'cards by group':<50} {'used':>4} {'share':>5}")
    for group, share in sorted(ledger.shares_by_group.items()):
        print(f"  {group:<48} {ledger.cards_by_group.get(group, 0):>4} {share:>5}")
    return 0


def _used_of_hard(pair: tuple[float, float | None] | None) -> str:
    used, hard = pair if pair is not None else (0.0, None)
    return f"{used:g}/{'-' if hard is None else f'{hard:g}'}"


def _explain(spec: PlatformSpec, args: argparse.Namespace) -> int:
    service_name, _, rest = args.target.partition("/")
    group_name, _, template = rest.partition("/")
    service = spec.services.get(service_name)
    group = service.groups.get(group_name) if service else None
    if group is None or (template and template not in group.templates):
        known = (
            f"its templates: {', '.join(group.templates)}"
            if group is not None
            else f"the groups are under services in {spec.document.filename}"
        )
        raise ConfigError.of(
            error_rules.UNKNOWN_GROUP,
            f"no {'template' if group else 'group'} {args.target} in {spec.document.filename}",
            where=f"SERVICE/GROUP[/TEMPLATE] as the spec names them ({known})",
        )
    rule = rule_of(group)
    # one replica: an instance per data centre of the template (of each, for the group)
    per_replica = instances_per_replica(group, template or None)
    # the quota's room for this template or group, with the rest of the spec as written
    ceiling, beyond = quota_bound(
        spec, State(Path(".")), service_name, group, rule.max_replicas, template or None
    )
    print(f"bounds: autoscaling max {rule.max_replicas} replicas", end="")
    if beyond is None:
        print(", which the quota and the group's card share hold")
    else:
        print(f"; the quotas hold {ceiling}: one more breaks {beyond.code}: {beyond.message}")
    clock = FakeClock(0.0)
    scaler = Autoscaler(rule, clock)
    chosen = [group.templates[template]] if template else group.templates.values()
    spec_replicas = max((t.replicas for t in chosen), default=0)  # as current_replicas reads
    replicas = args.current if args.current is not None else spec_replicas
    next_decision = args.every
    with args.trace.open(newline="") as handle:
        for row in csv.reader(handle):
            if not row or not row[0].strip() or row[0].startswith("#"):
                continue
            seconds, in_flight = float(row[0]), float(row[1])
            clock.now = seconds
            scaler.observe(in_flight / per_replica)
            if seconds >= next_decision:
                decision = scaler.decide(replicas, ceiling if ceiling is not None else 0)
                replicas = decision.replicas
                print(decision.explain())
                next_decision = seconds + args.every
    return 0


def run_platform(args: argparse.Namespace) -> int:
    command = args.platform_command
    if command in OPS:
        return run_ops(args)
    if command == "dr" and args.dr_command != "evaluate":
        return run_dr_change(args)
    if command == "up":
        return run_up(args)
    spec = read_platform_spec(args.file)
    if command == "validate":
        return _validate(spec, args.json)
    if command == "ledger":
        return _ledger(spec, args.json, args.state)
    if command == "dr":
        return _dr_evaluate(spec, args)
    if command == "render":
        findings = validate(spec)
        if findings:  # a spec that breaks the ledger's rules is never deployed
            for finding in findings:
                print(finding.line(), file=sys.stderr)
            print(f"{len(findings)} broken rule(s): nothing rendered", file=sys.stderr)
            return 1
        try:
            manifests = render(spec, cluster_options(args))
        except ConfigError as error:
            print(error.line(), file=sys.stderr)
            return 1
        yaml.safe_dump_all(manifests, sys.stdout, sort_keys=False)
        return 0
    return _explain(spec, args)
