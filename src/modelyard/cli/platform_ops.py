"""``modelyard platform plan|apply|status|down|release|dr fail-over|dr restore``: running a
spec on this machine."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from modelyard import error_rules
from modelyard.cli.cluster_options import add_cluster_arguments, cluster_options
from modelyard.control import release
from modelyard.control.apply import (
    Plan,
    State,
    apply_plan,
    control_plane_running,
    default_registry,
    down,
    make_plan,
    missing_models,
    stale_reason,
    state_lock,
    status_rows,
)
from modelyard.control.failover import fail_over, restore
from modelyard.control.kubernetes import render
from modelyard.control.kubernetes_apply import api_client, apply_requests, send
from modelyard.control.ledger import validate
from modelyard.control.spec import PlatformSpec, read_platform_spec
from modelyard.control.supervisor import describe_exit, read_supervision
from modelyard.errors import Code, ConfigError
from modelyard.web_client import Reply, WebError, fetch

OPS = ("plan", "apply", "status", "down", "release")


def add_ops_arguments(commands: Any) -> None:
    def state_dir(
        parser: argparse.ArgumentParser, control: bool = False, required: bool = True
    ) -> None:
        parser.add_argument("--state", type=Path, required=required and not control, metavar="DIR")
        if control:
            parser.add_argument(
                "--control",
                metavar="URL",
                help="act through a running control plane's API (modelyard platform up), "
                "e.g. http://127.0.0.1:7070",
            )
            parser.add_argument("--api-key", default=None, help="when the control API has auth")

    plan = commands.add_parser("plan", help="the change between the applied state and the spec")
    plan.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
    state_dir(plan)
    plan.add_argument("--json", action="store_true")
    apply = commands.add_parser(
        "apply",
        help="launch and stop local instances as planned, or apply the render to a "
        "cluster (--target kubernetes)",
    )
    apply.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
    apply.add_argument("--target", choices=["local", "kubernetes"], default="local")
    state_dir(apply, required=False)
    apply.add_argument("--model-repository", type=Path, default=None, metavar="DIR")
    apply.add_argument(
        "--registry",
        default=None,
        metavar="URL",
        help="local: default DIR/registry.db; kubernetes: an external etcd (default: render one)",
    )
    add_cluster_arguments(apply, registry=False)
    apply.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        help="kubernetes: default the pod's service account, else ~/.kube/config",
    )
    apply.add_argument(
        "--dry-run", action="store_true", help="kubernetes: print the requests, send nothing"
    )
    for name, text in (("status", "the launched instances"), ("down", "stop every instance")):
        command = commands.add_parser(name, help=text)
        state_dir(command, control=name == "status")
        if name == "status":
            command.add_argument("--json", action="store_true")
    rel = commands.add_parser("release", help="canary releases of model versions per group")
    actions = rel.add_subparsers(dest="release_command", required=True)
    for name, text in (
        ("start", "reserve the surge, start canaries of the new versions"),
        ("move", "move a model into this group (the spec binds it here): canaries, then weights"),
        ("step", "move the canaries' traffic share"),
        ("promote", "100 %% new: replace the old instances"),
        ("pause", "hold the release where it is"),
        ("abort", "stop the canaries: back to 0 %%"),
        ("rollback", "back to a recorded group revision"),
        ("history", "the group's event record"),
    ):
        command = actions.add_parser(name, help=text)
        command.add_argument("target", metavar="SERVICE/GROUP")
        state_dir(command, control=True)
        if name in ("start", "move", "promote", "rollback"):
            command.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
        if name in ("start", "move"):
            command.add_argument("--model", required=True)
        if name == "start":
            command.add_argument("--version", required=True)
        if name in ("start", "move", "step"):
            command.add_argument("--percent", type=float, default=None)
        if name == "step":
            command.add_argument("--resume", action="store_true")
        if name == "rollback":
            command.add_argument("--revision", type=int, default=None)


def add_dr_change_arguments(dr_commands: Any) -> None:
    fail_over = dr_commands.add_parser(
        "fail-over",
        help="declare a data centre or queue lost: replace its instances in the others",
    )
    fail_over.add_argument("--lose", required=True, metavar="DC|QUEUE")
    restore = dr_commands.add_parser(
        "restore", help="a lost data centre or queue is back: its instances start again"
    )
    restore.add_argument("place", metavar="DC|QUEUE")
    for command in (fail_over, restore):
        command.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
        command.add_argument("--state", type=Path, default=None, metavar="DIR")
        command.add_argument(
            "--control", metavar="URL", help="act through a running control plane's API"
        )
        command.add_argument("--api-key", default=None, help="when the control API has auth")


def run_dr_change(args: argparse.Namespace) -> int:
    """``dr fail-over`` / ``dr restore``: through the control API, or on the state."""
    lose = args.dr_command == "fail-over"
    place = args.lose if lose else args.place
    if args.control:
        base = args.control.rstrip("/")
        headers = {"x-api-key": args.api_key} if args.api_key else {}
        path, body = ("fail-over", {"lose": place}) if lose else ("restore", {"place": place})
        try:
            response = fetch(
                "POST", f"{base}/api/v1/dr/{path}", json=body, headers=headers, timeout=600
            )
        except WebError as error:
            return _refuse(
                f"cannot reach {base}: {error}", "platform/control", "is platform up running?"
            )
        doc = response.json() if response.content_type == "application/json" else {}
        if response.status != 200:
            print(doc.get("error") or f"[platform] HTTP {response.status} from {base}")
            return 1
        done, lost = doc["done"], doc["lost"]
    else:
        _require_state(args)
        spec = read_platform_spec(args.file)
        with state_lock(args.state):
            state = State.load(args.state)
            if lose:
                done = fail_over(spec, args.file, state, place)
            else:
                done = restore(spec, args.file, state, place)
            lost = state.lost
    for line in done:
        print(line)
    print(f"lost: {', '.join(sorted(lost)) or 'none'}")
    return 0


def _require_state(args: argparse.Namespace) -> None:
    if args.state is None:
        raise ConfigError.of(error_rules.PLATFORM_STATE, "no state directory")


def run_ops(args: argparse.Namespace) -> int:
    if getattr(args, "control", None):
        return _via_control(args)
    if args.platform_command == "apply" and args.target == "kubernetes":
        return _apply_kubernetes(args)
    _require_state(args)
    if args.platform_command == "down" and control_plane_running(args.state):
        raise ConfigError.of(
            error_rules.CONTROL_LOCK_HELD,
            f"a control plane (platform up) runs on {args.state}; it would start the "
            "instances again",
        )
    with state_lock(args.state):  # a running control plane changes the same state
        return _run_ops(args, State.load(args.state))


def _run_ops(args: argparse.Namespace, state: State) -> int:
    command = args.platform_command
    if command == "plan":
        return _plan(args, state)
    if command == "apply":
        return _apply(args, state)
    if command == "status":
        supervision = read_supervision(args.state) if control_plane_running(args.state) else {}
        rows = status_rows(state, supervision.get("slots"))
        gateways = [
            {**g, "last_exit_text": describe_exit(g.get("last_exit"))}
            for g in supervision.get("gateways", [])
        ]
        _print_status(rows, args.json, gateways, supervision.get("control_plane"))
        return 0
    if command == "down":
        for line in down(state):
            print(line)
        return 0
    return _release(args, state)


def _apply_kubernetes(args: argparse.Namespace) -> int:
    """Render the spec and apply it to the cluster, object by object (server-side apply)."""
    spec = read_platform_spec(args.file)
    findings = validate(spec)
    if findings:  # as render: a spec that breaks the ledger's rules is never deployed
        for finding in findings:
            print(finding.line())
        print(f"{len(findings)} broken rule(s): nothing applied")
        return 1
    requests = apply_requests(render(spec, cluster_options(args)))
    if args.dry_run:
        for request in requests:
            query = "&".join(f"{k}={v}" for k, v in request.query)
            print(f"{request.method} {request.path}?{query} ({request.content_type})")
        return 0
    for line in send(api_client(args.kubeconfig), requests):
        print(line)
    return 0


def _refuse(detail: str, rule: str, where: str) -> int:
    """Print the error line of a refused command; its exit status."""
    print(ConfigError(detail, code=Code.FAILED_PRECONDITION, rule=rule, where=where).line())
    return 1


def _print_status(
    rows: list[dict[str, Any]],
    as_json: bool,
    gateways: list[dict[str, Any]] | None = None,
    control: dict[str, Any] | None = None,
) -> None:
    """The instances, and (where a control plane runs) itself and its gateway processes,
    each with its restarts and last exit. JSON: one list, the instances' rows first, then
    rows of ``kind`` gateway and control-plane."""
    gateways = gateways or []
    if as_json:
        extra = [{"kind": "gateway", **g} for g in gateways]
        if control:
            extra.append({"kind": "control-plane", **control})
        print(json.dumps([{"kind": "instance", **r} for r in rows] + extra, indent=2))
        return
    if control:
        since = datetime.fromtimestamp(control["started_at"]).isoformat(" ", "seconds")
        print(f"control plane  pid {control['pid']}  up since {since}")
    for g in gateways:
        slot = "standby" if g["slot"] < 0 else f"#{g['slot']}"
        print(
            f"gateway {g['service']} {slot:<8} {g['state']:<9} pid {g['pid']:<7} "
            f"http {g['http_port']:<6} restarts {g['restarts']:<3} last exit: {g['last_exit_text']}"
            + ("  (adopted)" if g.get("adopted") else "")
        )
    for row in rows:
        exits = ""
        if row.get("restarts") or row.get("last_exit"):
            exits = f"  restarts {row['restarts']}, last exit: {describe_exit(row['last_exit'])}"
        print(
            f"{row['name']:<56} {'alive' if row['alive'] else 'DEAD':<6} pid {row['pid']:<7} "
            f"{row['http']:<16} {row['group']} template {row['template']} {row['role']} "
            f"weight {row['weight']:g}{exits}"
        )


def _via_control(args: argparse.Namespace) -> int:
    """The same commands through the control plane's HTTP API (docs/control-api.md)."""
    base = args.control.rstrip("/")
    headers = {"x-api-key": args.api_key} if args.api_key else {}
    if args.platform_command == "status":
        ask = _status_via_control
    elif args.release_command == "history":
        ask = _history_via_control
    else:
        ask = _release_via_control
    try:
        refused = ask(args, base, headers)
    except WebError as error:
        return _refuse(
            f"cannot reach {base}: {error}", "platform/control", "is platform up running?"
        )
    if refused is None:
        return 0
    doc = refused.json() if refused.content_type == "application/json" else {}
    for line in doc.get("findings", []):
        print(line)
    print(doc.get("error") or f"[platform] HTTP {refused.status} from {base}")
    return 1


# Each prints what the control plane answered and returns None, or returns its refusal.


def _status_via_control(
    args: argparse.Namespace, base: str, headers: dict[str, str]
) -> Reply | None:
    response = fetch("GET", f"{base}/api/v1/overview", headers=headers, timeout=30)
    if response.status != 200:
        return response
    overview = response.json()
    rows = [
        {k: v for k, v in i.items() if k != "live"}
        for s in overview["services"]
        for g in s["groups"]
        for i in g["instances"]
    ]
    gateways = [g for s in overview["services"] for g in s.get("gateways", [])]
    _print_status(rows, args.json, gateways, overview.get("control_plane"))
    return None


def _history_via_control(
    args: argparse.Namespace, base: str, headers: dict[str, str]
) -> Reply | None:
    url = f"{base}/api/v1/groups/{args.target}/events"
    response = fetch("GET", url, headers=headers, timeout=30)
    if response.status != 200:
        return response
    for event in response.json()["events"]:
        print(json.dumps(event, sort_keys=True))
    return None


def _release_via_control(
    args: argparse.Namespace, base: str, headers: dict[str, str]
) -> Reply | None:
    body = {
        k: getattr(args, k)
        for k in ("model", "version", "percent", "resume", "revision")
        if getattr(args, k, None) is not None
    }
    url = f"{base}/api/v1/groups/{args.target}/release/{args.release_command}"
    response = fetch("POST", url, json=body, headers=headers, timeout=600)
    if response.status != 200:
        return response
    doc = response.json()
    print(f"{doc['group']}: {json.dumps(doc['release'], sort_keys=True)}")
    return None


def _spec_and_plan(args: argparse.Namespace, state: State) -> tuple[PlatformSpec, Plan] | None:
    """The spec and its plan against ``state``, or None once the spec's findings are printed."""
    spec = read_platform_spec(args.file)
    plan = make_plan(spec, args.file, state)
    for finding in plan.findings:
        print(finding.line())
    return None if plan.findings else (spec, plan)


def _plan(args: argparse.Namespace, state: State) -> int:
    planned = _spec_and_plan(args, state)
    if planned is None:
        return 1
    plan = planned[1]
    doc = plan.to_json()
    args.state.mkdir(parents=True, exist_ok=True)
    (args.state / "plan.json").write_text(json.dumps(doc, indent=2) + "\n")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"plan against state revision {plan.state_revision}, spec {plan.spec_hash[:12]}")
        print(f"{'quota':<16} {'dc':<6} {'gpu model':<12} {'instances':>12} {'cards':>10}")
        for c in plan.changes:
            instances = f"{c['instances_before']} -> {c['instances_after']}"
            cards = f"{c['cards_before']} -> {c['cards_after']}"
            print(
                f"{c['quota']:<16} {c['data_center']:<6} {c['gpu_model']:<12} "
                f"{instances:>12} {cards:>10}"
            )
        for name in doc["start"]:
            print(f"+ start {name}")
        for name in doc["stop"]:
            print(f"- stop  {name}")
        print("changes to apply" if plan.changed else "no changes")
    return 2 if plan.changed else 0


def _apply(args: argparse.Namespace, state: State) -> int:
    plan_path = args.state / "plan.json"
    if not plan_path.exists():
        return _refuse(f"no plan in {args.state}", "platform/no-plan", "modelyard platform plan")
    plan_doc = json.loads(plan_path.read_text())
    why = stale_reason(plan_doc, args.file, state)
    if why is not None:
        return _refuse(why, "platform/stale-plan", "run modelyard platform plan again")
    planned = _spec_and_plan(args, state)
    if planned is None:
        return 1
    spec, plan = planned
    if args.model_repository is not None:
        state.model_repository = str(args.model_repository.resolve())
    if not state.model_repository and plan.start:
        return _refuse(
            "no model repository to launch instances from",
            "platform/repository",
            "pass --model-repository DIR",
        )
    missing = missing_models(spec, Path(state.model_repository)) if plan.start else []
    if missing:
        return _refuse(
            f"the spec loads {', '.join(missing)}, which {state.model_repository} lacks",
            "platform/repository",
            "add the model directories, or remove them from the templates' loads",
        )
    state.registry = args.registry or state.registry or default_registry(args.state)
    for line in apply_plan(spec, state, plan):
        print(line)
    print(f"applied; state revision {state.revision}")
    return 0


def _release(args: argparse.Namespace, state: State) -> int:
    key = args.target
    action = args.release_command
    try:
        if action == "history":
            for event in release.history(args.state, key):
                print(json.dumps(event, sort_keys=True))
            return 0
        if action == "pause":
            release.pause(state, key)
        elif action == "abort":
            release.abort(state, key)
        elif action == "step":
            numbers = release.step(state, key, args.percent, resume=args.resume)
            print(f"{key}: {numbers['percent']:g} % new")
        else:
            spec = read_platform_spec(args.file)
            if action == "start":
                pins = {args.model: args.version}
                numbers = release.start(spec, state, key, pins, args.percent)
                print(f"{key}: {numbers['percent']:g} % new ({args.model} {args.version})")
            elif action == "move":
                numbers = release.move(spec, state, key, args.model, args.percent)
                print(f"{key}: {numbers['percent']:g} % of {args.model} moved here")
            elif action == "promote":
                revision = release.promote(spec, state, key)
                print(f"{key}: promoted, group revision {revision}")
            else:
                revision = release.rollback(spec, state, key, args.revision)
                print(f"{key}: rolled back, group revision {revision}")
    except release.ReleaseError as exc:
        for finding in exc.findings:
            print(finding.line())
        print(exc.line())
        return 1
    return 0
