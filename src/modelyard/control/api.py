"""The control plane's HTTP API, and the console that reads only it.

Every route is under ``/api/v1`` and answers JSON; errors are
``{"error": "<error line>"}`` with the status of the error table. The
console (``/``) is static HTML and JavaScript shipped in the package: no
build step, no third-party script. With ``--auth-file`` the API and the
console need an API key or bearer token (``x-api-key`` or ``Authorization``):
GET routes the ``metadata`` interface, POST routes ``admin``. The routes are
listed in ``docs/control-api.md``.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from importlib import resources
from typing import Any

import structlog
from aiohttp import web

from modelyard import error_rules
from modelyard.control.apply import ACTOR, State, effective_replicas, ledger_of, status_rows
from modelyard.control.collector import InstanceView
from modelyard.control.disaster import against_peak, recovery
from modelyard.control.placement import by_group, copies
from modelyard.control.plane import ControlPlane
from modelyard.control.release import ReleaseError, history
from modelyard.control.scaling import instances_per_replica
from modelyard.control.supervisor import GatewayProcess, describe_exit
from modelyard.discovery.rules_store import open_rules_store
from modelyard.errors import ConfigError, GovernanceError, ModelyardError
from modelyard.governance.auth import AuthConfig, AuthGuard
from modelyard.governance.explain import Context, explain, parse_line, sections_from_rows
from modelyard.governance.guard import Call
from modelyard.governance.rules_document import load_rules
from modelyard.protocol.json_body import json_object
from modelyard.protocol.status import http_status
from modelyard.web_client import Reply, WebSession

log = structlog.get_logger("modelyard.control")

PLANE: web.AppKey[ControlPlane] = web.AppKey("plane", ControlPlane)
AUTH: web.AppKey[AuthGuard | None] = web.AppKey("auth", AuthGuard)

MAX_BODY_BYTES = 64 * 1024  # release bodies are a few fields

_REQUEST_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")

_CONSOLE_FILES = {
    "/": ("index.html", "text/html"),
    "/console.js": ("console.js", "text/javascript"),
    "/console.css": ("console.css", "text/css"),
}


def _error(error: ModelyardError) -> web.Response:
    return web.json_response({"error": error.line()}, status=http_status(error.code))


@web.middleware
async def _guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """The API needs credentials when auth is on; the console's files hold no data."""
    guard = request.app[AUTH]
    if guard is not None and request.path.startswith("/api/") and request.path != "/api/v1/health":
        bearer = request.headers.get("authorization", "")
        call = Call(
            service="modelyard.control",
            interface="metadata" if request.method in ("GET", "HEAD") else "admin",
            api_key=request.headers.get("x-api-key"),
            bearer_token=bearer[7:] if bearer.lower().startswith("bearer ") else None,
        )
        try:
            guard.check(call)  # auth decides at once
        except GovernanceError as error:
            return _error(error)
        request["principal"] = call.principal
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        detail = {
            405: f"{request.path} does not take {request.method}",
            413: f"the request body is over {MAX_BODY_BYTES} bytes",
        }.get(exc.status, f"no route for {request.method} {request.path}")
        refusal = ConfigError.of(error_rules.PLATFORM_ROUTE, detail)
        return web.json_response({"error": refusal.line()}, status=exc.status)
    except ModelyardError as error:
        return _error(error)
    except Exception as exc:
        log.exception("control_api_failed", path=request.path)
        return _error(
            ConfigError.of(
                error_rules.PLATFORM_INTERNAL,
                f"{request.method} {request.path} failed: {type(exc).__name__}: {exc}",
            )
        )


def make_app(plane: ControlPlane, auth: AuthConfig | None = None) -> web.Application:
    app = web.Application(middlewares=[_guard], client_max_size=MAX_BODY_BYTES)
    app[PLANE] = plane
    app[AUTH] = AuthGuard(auth) if auth is not None and auth.enabled else None
    for path in _CONSOLE_FILES:
        app.router.add_get(path, _console_file)
    app.router.add_get("/api/v1/health", _health)
    app.router.add_get("/api/v1/overview", _overview)
    app.router.add_get("/api/v1/ledger", _ledger)
    app.router.add_get("/api/v1/inference", _inference)
    app.router.add_get("/api/v1/governance", _governance)
    app.router.add_get("/api/v1/rejections/{service}/{request_id}", _rejection)
    app.router.add_get("/api/v1/rules/{service}", _rules)
    app.router.add_get("/api/v1/groups/{service}/{group}/events", _events)
    app.router.add_post("/api/v1/groups/{service}/{group}/release/{action}", _release)
    app.router.add_get("/api/v1/autoscale", _autoscale)
    app.router.add_get("/api/v1/residency", _residency)
    app.router.add_get("/api/v1/dr", _disaster_recovery)
    app.router.add_post("/api/v1/dr/fail-over", _fail_over)
    app.router.add_post("/api/v1/dr/restore", _restore)
    return app


async def _console_file(request: web.Request) -> web.Response:
    name, content_type = _CONSOLE_FILES[request.path]
    text = (
        resources.files("modelyard.control").joinpath("console").joinpath(name).read_text("utf-8")
    )
    return web.Response(text=text, content_type=content_type)


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def _points(request: web.Request) -> int:
    raw = request.query.get("points", "120")
    if not raw.isdigit() or not 1 <= int(raw) <= 10_000:
        raise ConfigError.of(
            error_rules.API_POINTS,
            f"points must be a whole number from 1 to 10000, got {raw[:40]!r}",
        )
    return int(raw)


def _plane(request: web.Request) -> ControlPlane:
    return request.app[PLANE]


def _resident(residency: dict[str, Any] | None) -> dict[str, Any] | None:
    """An instance's residency, as a person reads it: its budget, what it holds, and each
    model it holds with its bytes (None: the instance keeps every model it loads)."""
    if not residency:
        return None
    return {
        "budget_bytes": residency["budget_bytes"],
        "held_bytes": residency["held_bytes"],
        "resident": {
            name: row["bytes"] for name, row in residency["models"].items() if row["resident"]
        },
    }


async def _residency(request: web.Request) -> web.Response:
    """Per group whose instances keep their models within a budget: each instance's budget
    and resident models, each model's copies and request rate."""
    plane = _plane(request)
    instances = plane.resident_instances()
    groups = []
    for (service, group), members in sorted(by_group(instances).items()):
        rates = plane.model_rates(service, group)
        hot = plane.hot_models(service, group)
        groups.append(
            {
                "service": service,
                "group": group,
                "instances": [
                    {
                        "name": m.name,
                        "budget_bytes": m.budget,
                        "held_bytes": m.held,
                        "resident": sorted(n for n, row in m.models.items() if row["resident"]),
                    }
                    for m in members
                ],
                "hot": hot,  # the models the plane keeps on every instance
                "models": {
                    model: {
                        "copies": holders,
                        "requests_per_s": rates.get(model, 0.0),
                        "hot": model in hot,
                    }
                    for model, holders in sorted(copies(members).items())
                },
            }
        )
    return web.json_response({"groups": groups})


def _live(view: InstanceView | None) -> dict[str, Any]:
    if view is None:
        return {"up": False, "error": "not polled yet"}
    stats = view.stats or {}
    return {
        "up": view.up,
        "error": view.error,
        "polled_at": view.polled_at,
        "in_flight": stats.get("instance", {}).get("in_flight"),
        "residency": _resident(stats.get("instance", {}).get("residency")),
        "models": [
            {k: m.get(k) for k in ("name", "version", "state", "platform", "devices", "pending")}
            for m in stats.get("models", [])
        ],
    }


async def _overview(request: web.Request) -> web.Response:
    plane = _plane(request)
    state = plane.state()
    slots = {slot: backoff.to_json() for slot, backoff in plane.supervisor.slots.items()}
    rows = {row["name"]: row for row in status_rows(state, slots)}
    services = []
    for service in plane.spec.services.values():
        groups = []
        for group in service.groups.values():
            key = f"{service.name}/{group.name}"
            members = [i for i in state.instances if f"{i.service}/{i.group}" == key]
            instances = []
            for instance in members:
                row = rows[instance.name]
                instances.append(
                    {
                        **row,
                        "data_center": instance.data_center,
                        "queue": instance.queue,
                        "spec": instance.spec,
                        "cards": instance.cards,
                        "loads": instance.loads,
                        "live": _live(plane.collector.views.get(instance.name)),
                    }
                )
            if plane.on_cluster:  # the cluster's pods, as the registry lists them
                instances = [
                    {
                        "name": entry.instance_id,
                        "alive": entry.state == "SERVING",
                        "http": entry.http,
                        "group": key,
                        "data_center": entry.labels.get("data_center"),
                        "queue": entry.labels.get("queue"),
                        "spec": entry.spec,
                        "role": entry.labels.get("role", "stable"),
                        "weight": entry.weight,
                        "live": _live(plane.collector.views.get(entry.instance_id)),
                    }
                    for entry in plane.cluster_instances()
                    if f"{entry.service}/{entry.group}" == key
                ]
            release = state.releases.get(key)
            groups.append(
                {
                    "name": group.name,
                    "key": key,
                    "models": list(group.models),
                    "cards": group.cards,
                    "autoscaling": group.autoscaling,
                    "release": _release_state(state, key, release),
                    "instances": instances,
                }
            )
        services.append(
            {
                "name": service.name,
                "interfaces": list(service.interfaces),
                "quota": service.quota,
                "data_centers": list(service.data_centers),
                "gateway": next(
                    (
                        {"http": f"{plane.config.host}:{g.http_port}", "grpc": g.grpc_port}
                        for g in plane.gateways
                        if g.service == service.name
                    ),
                    None,
                ),
                "gateways": [
                    _gateway_process(plane, g) for g in plane.gateways if g.service == service.name
                ],
                "groups": groups,
            }
        )
    return web.json_response(
        {
            "spec": str(plane.config.spec_file),
            "state": str(plane.state_dir),
            "registry": state.registry,
            "state_revision": state.revision,
            "started_at": plane.started_at,
            "control_plane": {"pid": os.getpid(), "started_at": plane.started_at},
            "autoscale": plane.config.autoscale,
            "target": plane.config.target,
            "services": services,
        }
    )


def _gateway_process(plane: ControlPlane, gateway: GatewayProcess) -> dict[str, Any]:
    """One gateway process as the supervisor keeps it, with its own counters when it
    answered the last poll on its status port."""
    view = plane.collector.gateway_views.get(gateway.pid)
    stats = (view.stats or {}) if view is not None and view.up else {}
    return {
        **gateway.to_json(),
        "up": gateway.state in ("running", "standby") and view is not None and view.up,
        "last_exit_text": describe_exit(gateway.backoff.last_exit),
        "calls": stats.get("calls"),
        "answered": stats.get("answered"),
        "refused": stats.get("refused"),
        "errors": stats.get("errors"),
        "cached_instances_age_s": stats.get("cached_instances_age_s"),
    }


def _release_state(state: State, key: str, release: dict[str, Any] | None) -> dict[str, Any]:
    revisions = state.group_revisions.get(key, [])
    base = {
        "versions": state.versions.get(key, {}),
        "group_revision": revisions[-1]["revision"] if revisions else None,
        "revisions": [r["revision"] for r in revisions],
    }
    if release is None:
        return {**base, "state": "stable"}
    if release.get("promoting"):
        phase = "promoting"  # on a cluster: until the registry shows the promoted pods
    else:
        phase = "paused" if release.get("paused") else "canary"
    return {
        **base,
        "state": phase,
        "percent": release.get("percent"),
        "pins": release.get("pins"),
        "from": release.get("from"),
    }


async def _ledger(request: web.Request) -> web.Response:
    plane = _plane(request)
    state = plane.state()
    spec = plane.spec
    ledger = ledger_of(spec, state)
    running: dict[str, dict[str, int]] = {}
    for group_key, cards in plane.running():
        counts = running.setdefault(group_key, {"instances": 0, "gpu_instances": 0, "cards": 0})
        counts["instances"] += 1
        counts["gpu_instances"] += 1 if cards else 0
        counts["cards"] += cards
    booked = ledger.to_json()
    shares = {row["group"]: row for row in booked["groups"]}
    return web.json_response(
        {
            **booked,
            "running_by_group": running,
            "groups": [
                {
                    "key": key,
                    "models": list(models),
                    "cards_used": shares.get(key, {}).get("cards_used", 0),
                    "cards_share": shares.get(key, {}).get("cards_share"),
                    "release": _release_state(state, key, state.releases.get(key)),
                    "events": history(plane.state_dir, key)[-20:],
                }
                for key, models in (
                    (f"{s.name}/{g.name}", g.models)
                    for s in spec.services.values()
                    for g in s.groups.values()
                )
            ],
        }
    )


async def _inference(request: web.Request) -> web.Response:
    plane = _plane(request)
    limit = _points(request)
    instances = []
    for name, view in sorted(plane.collector.views.items()):
        models = []
        for model in (view.stats or {}).get("models", []):
            key = f"{model['name']}/{model['version']}"
            batch = (model.get("histograms") or {}).get("batch_size") or {}
            models.append(
                {
                    "name": model["name"],
                    "version": model["version"],
                    "state": model.get("state"),
                    "platform": model.get("platform"),
                    "devices": model.get("devices"),
                    "success": model.get("success"),
                    "failure": model.get("failure"),
                    "bad_requests": model.get("bad_requests", 0),
                    "batch_size": {
                        "bounds": batch.get("bounds", []),
                        "counts": batch.get("counts", []),
                    },
                    "series": list(view.series.get(key, []))[-limit:],
                }
            )
        instances.append(
            {
                "name": name,
                "service": view.target.service,
                "group": view.target.group,
                "http": view.target.http,
                "up": view.up,
                "error": view.error,
                "models": models,
            }
        )
    return web.json_response({"instances": instances})


async def _governance(request: web.Request) -> web.Response:
    plane = _plane(request)
    limit = _points(request)
    services = plane.collector.governance_totals()
    for service, entry in services.items():
        entry["gateway"] = plane.collector.gateway_totals(service)
        entry["series"] = {
            interface: list(points)[-limit:]
            for interface, points in plane.collector.governance.get(service, {}).items()
        }
        events = await _recent_rejections(plane, service)
        entry["recent"] = events[:50]
        entry["grouped"] = grouped_rejections(events)
    return web.json_response({"services": services})


def grouped_rejections(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rejections alike (rule, interface, model, status) as one row: how many, the newest's
    time and request id (which the console opens), newest group first."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for event in events:  # newest first
        key = (event.get("rule"), event.get("interface"), event.get("model"), event.get("code"))
        group = groups.get(key)
        if group is None:
            groups[key] = {
                "rule": key[0],
                "interface": key[1],
                "model": key[2],
                "code": key[3],
                "count": 1,
                "newest": event.get("time", 0),
                "oldest": event.get("time", 0),
                "request_id": event.get("request_id"),
                "instances": [event["instance"]],
            }
            continue
        group["count"] += 1
        group["oldest"] = event.get("time", 0)
        if event["instance"] not in group["instances"]:
            group["instances"].append(event["instance"])
    return list(groups.values())


async def _recent_rejections(plane: ControlPlane, service: str) -> list[dict[str, Any]]:
    views = [v for v in plane.collector.views.values() if v.up and v.target.service == service]
    if not any(((v.stats or {}).get("governance") or {}).get("rejections_total") for v in views):
        return []
    async with WebSession(1.0) as client:
        answers = await asyncio.gather(
            *(client.get(f"http://{v.target.http}/v2/modelyard/rejections") for v in views),
            return_exceptions=True,
        )
    recent = []
    for view, answer in zip(views, answers, strict=True):
        if isinstance(answer, Reply) and answer.status == 200:
            for event in answer.json().get("recent", []):  # each instance's newest 100
                recent.append({**event, "instance": view.target.name})
    recent.sort(key=lambda e: e.get("time", 0), reverse=True)
    return recent


async def _rejection(request: web.Request) -> web.Response:
    """One rejection with the explanation ``modelyard explain`` prints."""
    plane = _plane(request)
    service, request_id = request.match_info["service"], request.match_info["request_id"]
    if not _REQUEST_ID.fullmatch(request_id):
        raise ConfigError.of(error_rules.API_REQUEST_ID, f"'{request_id[:80]}' is not a request id")
    views = [v for v in plane.collector.views.values() if v.up and v.target.service == service]
    async with WebSession(1.0) as client:
        for view in views:
            address = view.target.http
            answer = await client.get(f"http://{address}/v2/modelyard/rejections/{request_id}")
            if answer.status != 200:
                continue
            record = answer.json()
            live = (await client.get(f"http://{address}/v2/modelyard/rules")).json()
            context = Context(service=service, record=record, instance=address)
            source = live.get("rules_source") or {}
            context.registry = source.get("registry")
            context.local_file = source.get("local_file")
            context.in_force = source.get("in_force") or "unknown"
            context.models = sorted({m for v in views for m in _loaded(v)})
            central = await _central(context.registry, service)
            if context.in_force == "central" and central is not None:
                context.sections = load_rules(central.document)
                context.revision, context.revision_by = central.revision, central.author
            else:
                context.sections = sections_from_rows(live.get("rules") or [])
            rows = explain(parse_line(str(record.get("line", ""))), context)
            return web.json_response({"record": record, "explanation": dict(rows)})
    raise ConfigError.of(
        error_rules.SERVICE_REJECTION,
        f"no live instance of {service} remembers request id {request_id}",
    )


def _loaded(view: InstanceView) -> list[str]:
    return [m["name"] for m in (view.stats or {}).get("models", [])]


async def _central(registry: str | None, service: str) -> Any:
    if not registry:
        return None
    store = open_rules_store(registry)
    try:
        return await store.get(service)
    except ModelyardError:
        return None
    finally:
        await store.aclose()


async def _rules(request: web.Request) -> web.Response:
    plane = _plane(request)
    service = request.match_info["service"]
    store = open_rules_store(plane.state().registry)
    try:
        current = await store.get(service)
        revisions = await store.history(service, limit=50)
    finally:
        await store.aclose()
    return web.json_response(
        {
            "service": service,
            "current": current.to_json() if current else None,
            "history": [r.to_json() for r in revisions],
        }
    )


def _group_key(plane: ControlPlane, request: web.Request) -> str:
    """SERVICE/GROUP from the path, only when the spec names it: no request picks a file."""
    service, group = request.match_info["service"], request.match_info["group"]
    found = plane.spec.services.get(service)
    if found is None or group not in found.groups:
        raise ConfigError.of(
            error_rules.API_UNKNOWN_GROUP, f"no group {service}/{group} in {plane.config.spec_file}"
        )
    return f"{service}/{group}"


async def _events(request: web.Request) -> web.Response:
    plane = _plane(request)
    key = _group_key(plane, request)
    state = plane.state()
    return web.json_response(
        {
            "group": key,
            "release": _release_state(state, key, state.releases.get(key)),
            "events": history(plane.state_dir, key),
        }
    )


async def _release(request: web.Request) -> web.Response:
    plane = _plane(request)
    key = _group_key(plane, request)
    body: dict[str, Any] = {}
    if request.can_read_body:

        def refuse(detail: str) -> ConfigError:
            return ConfigError.of(error_rules.API_PERCENT_BODY, detail)

        body = json_object(await request.read(), "the request body", refuse)
    principal = request.get("principal") or "anonymous"
    ACTOR.set(f"{principal} via the control API ({request.remote})")
    try:
        numbers = await plane.release(key, request.match_info["action"], body)
    except ReleaseError as error:
        return web.json_response(
            {"error": error.line(), "findings": [f.line() for f in error.findings]},
            status=http_status(error.code),
        )
    state = plane.state()
    return web.json_response(
        {
            "group": key,
            "numbers": numbers,
            "release": _release_state(state, key, state.releases.get(key)),
        }
    )


async def _disaster_recovery(request: web.Request) -> web.Response:
    """What losing a data centre or queue does to each group (``platform dr evaluate``) with
    the autoscaler's replicas, and for an autoscaling group whether what survives holds its
    observed peak. Without ``lose``: each data centre of the spec, one after the other."""
    plane = _plane(request)
    spec, state = plane.spec, plane.state()
    replicas = effective_replicas(spec, state)
    target = request.query.get("group")
    lose = request.query.get("lose")

    def place(lost: str) -> dict[str, Any]:
        groups = []
        # from where the instances run now: a place lost before holds none, and its
        # replacements count where they were placed
        before = set(state.lost) - {lost}
        results = recovery(spec, lost, target, where_flag="?lose=", replicas=replicas,
                           already_lost=before, reserved=state.reserved())  # fmt: skip
        for result in results:
            doc = result.to_json()
            key = f"{result.service}/{result.group}"
            scalings = [s for s in plane.scaling.values() if s.group_key == key]
            if scalings:
                group = spec.services[result.service].groups[result.group]
                # each template's peak is per replica: a replica is one per data centre; the
                # group's is known once every template has been observed
                peaks = [s.scaler.peak() for s in scalings]
                total = None
                if all(peak is not None for peak in peaks):
                    total = sum(
                        (peak or 0.0) * instances_per_replica(group, s.template)
                        for peak, s in zip(peaks, scalings, strict=True)
                    )
                per_instance = scalings[0].scaler.rule.target_in_flight  # the group's one rule
                doc.update(against_peak(result, total, per_instance))
            groups.append(doc)
        whole = all(g["state"] == "whole" and g.get("holds_peak") is not False for g in groups)
        return {"lose": lost, "whole": whole, "groups": groups}

    lost = state.lost
    if lose is not None:
        return web.json_response({**place(lose), "lost": lost})
    data_centres = sorted({queue.data_center for queue in spec.queues.values()})
    return web.json_response({"places": [place(dc) for dc in data_centres], "lost": lost})


async def _place_in_body(request: web.Request, name: str) -> str:
    def refuse(detail: str) -> ConfigError:
        return ConfigError.of(
            error_rules.API_BODY, detail, where=f'send a JSON object, e.g. {{"{name}": "dc2"}}'
        )

    body = json_object(await request.read(), "the request body", refuse)
    place = body.get(name)
    if not isinstance(place, str) or not place:
        raise refuse(f"the body needs '{name}': a data centre or queue, got {place!r}")
    principal = request.get("principal") or "anonymous"
    ACTOR.set(f"{principal} via the control API ({request.remote})")
    return place


async def _fail_over(request: web.Request) -> web.Response:
    """Declare a data centre or queue lost: its instances are replaced in the others."""
    plane = _plane(request)
    place = await _place_in_body(request, "lose")
    done = await plane.fail_over(place)
    return web.json_response({"lost": plane.state().lost, "done": done})


async def _restore(request: web.Request) -> web.Response:
    plane = _plane(request)
    place = await _place_in_body(request, "place")
    done = await plane.restore(place)
    return web.json_response({"lost": plane.state().lost, "done": done})


async def _autoscale(request: web.Request) -> web.Response:
    plane = _plane(request)
    wall, mono = time.time(), time.monotonic()
    groups = []
    for key, scaling in plane.scaling.items():
        rule = scaling.scaler.rule
        groups.append(
            {
                "key": key,
                "group": scaling.group_key,
                "template": scaling.template,
                "mode": plane.config.autoscale,
                "rule": {
                    "min": rule.min_replicas,
                    "max": rule.max_replicas,
                    "target_in_flight": rule.target_in_flight,
                    "stable_window_s": rule.stable_window_s,
                    "panic_window_s": rule.panic_window_s,
                },
                "decisions": [
                    {
                        "at": wall - (mono - d.at),
                        "current": d.current,
                        "desired": d.desired,
                        "replicas": d.replicas,
                        "mode": d.mode,
                        "bound_by": d.bound_by,
                        "explain": d.explain(at=False),
                    }
                    for d in list(scaling.scaler.decisions)[-20:]
                ],
                "actions": list(scaling.actions)[-20:],
            }
        )
    return web.json_response({"groups": groups})
