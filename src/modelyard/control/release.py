"""Releases per group: a canary of new model versions by weight steps, promote, abort, rollback.

``start`` launches one canary instance per template and data centre of the
group, serving the new versions (an overlay repository pins them), after
reserving the canaries' cards in the ledger: a release the quota cannot
hold is refused before anything starts. Traffic moves by registry weights:
at x % the canaries' weight share new / (new + old) is x %, which the
client's weighted balancing honours. ``promote`` makes the canaries stable
and replaces the other old instances one at a time (never more than the
reserved surge at once); ``abort`` stops the canaries; ``rollback`` is a
release to a recorded group revision, started at 100 % and promoted.

Moving a model from group A to group B is a release too: B's instances that
load the model are B's canaries for it, A's are the old ones, and weights
move the model's traffic from A to B step by step before A stops loading it.
``validate`` allows one owning group per model (MODEL_BOUND_TWICE), so today
a move is one spec edit (the model leaves A's models and loads, joins B's)
applied with ``plan`` / ``apply``, which starts B's changed instances before
it stops A's; the weighted cross-group move is not implemented.

Every group keeps an append-only record in ``events/<service>/<group>.jsonl``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from modelyard.control.apply import (
    State,
    actor,
    expected_registry,
    launcher_for,
    new_instance,
    registered,
    wait_registered,
)
from modelyard.control.launcher import LaunchedInstance
from modelyard.control.ledger import Finding, validate
from modelyard.control.spec import PlatformSpec
from modelyard.errors import Code, ConfigError


class ReleaseError(ConfigError):
    """A release step that cannot be taken; nothing was changed."""

    def __init__(self, message: str, findings: list[Finding] | None = None) -> None:
        super().__init__(
            message,
            code=Code.FAILED_PRECONDITION,
            rule="platform/release",
            where="modelyard platform release history SERVICE/GROUP",
        )
        self.findings = findings or []


def events_path(directory: Path, key: str) -> Path:
    service, _, group = key.partition("/")
    return directory / "events" / service / f"{group}.jsonl"


def record(
    state: State, key: str, action: str, before: Any, after: Any, numbers: dict[str, Any]
) -> None:
    path = events_path(state.directory, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    event = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "actor": actor(),
        "action": action,
        "from": before,
        "to": after,
        "numbers": numbers,
    }
    with path.open("a") as handle:
        handle.write(json.dumps(event, sort_keys=True) + "\n")


def history(directory: Path, key: str) -> list[dict[str, Any]]:
    path = events_path(directory, key)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _group(spec: PlatformSpec, key: str) -> None:
    service, _, group = key.partition("/")
    if group not in (spec.services.get(service).groups if service in spec.services else {}):
        raise ReleaseError(f"no group {key} in {spec.document.filename}")


def _members(state: State, key: str, role: str) -> list[LaunchedInstance]:
    return [i for i in state.instances if f"{i.service}/{i.group}" == key and i.role == role]


def _active(state: State, key: str) -> dict[str, Any]:
    release = state.releases.get(key)
    if release is None:
        raise ReleaseError(f"no release in progress for {key}")
    return release


def _served_versions(state: State, key: str, models: list[str]) -> dict[str, str]:
    """The versions the group's stable instances serve READY, as the registry shows them."""
    service = key.partition("/")[0]
    names = {i.name for i in _members(state, key, "stable")}
    versions: dict[str, str] = {}
    for instance in registered(state.registry, service):
        if instance.instance_id in names:
            for model in models:
                ready = [v for v, s in instance.models.get(model, {}).items() if s == "READY"]
                if ready:
                    versions[model] = max(ready, key=lambda v: (len(v), v))
    return versions


def _set_weights(state: State, key: str, percent: float) -> dict[str, float]:
    launcher = launcher_for(state)
    old, new = _members(state, key, "stable"), _members(state, key, "canary")
    if percent <= 0:
        old_weight, new_weight = 1.0, 0.0
    elif percent >= 100:
        old_weight, new_weight = 0.0, 1.0
    else:
        old_weight = 1.0
        new_weight = percent * len(old) / ((100.0 - percent) * max(1, len(new)))
    for instance in old:
        launcher.set_weight(instance, old_weight)
    for instance in new:
        launcher.set_weight(instance, new_weight)
    return {"old_weight": old_weight, "new_weight": new_weight}


def start(
    spec: PlatformSpec, state: State, key: str, pins: dict[str, str], percent: float | None
) -> dict[str, Any]:
    _group(spec, key)
    if key in state.releases:
        raise ReleaseError(f"a release of {key} is in progress; promote, abort or rollback it")
    old = _members(state, key, "stable")
    if not old:
        raise ReleaseError(f"{key} runs no instances; apply the spec first")
    first: dict[tuple[str, str], LaunchedInstance] = {}
    for instance in sorted(old, key=lambda i: i.index):
        first.setdefault((instance.template, instance.data_center), instance)
    quota = spec.services[old[0].service].quota
    reserved: Counter[tuple[str, str, str]] = Counter()
    for instance in first.values():
        if instance.cards:
            gpu = instance.spec.split("/")[2].split("*")[0]
            reserved[(quota, instance.data_center, gpu)] += instance.cards
    total = Counter(state.reserved())
    total.update(reserved)
    findings = validate(spec, reserved=dict(total))
    if findings:
        raise ReleaseError(
            f"release of {key} refused before anything started: the ledger cannot hold "
            f"its surge of {sum(reserved.values())} card(s)",
            findings,
        )
    before = _served_versions(state, key, list(pins))
    revisions = state.group_revisions.setdefault(key, [])
    if not revisions:
        revisions.append({"revision": 1, "versions": before, "at": time.time()})
    launcher = launcher_for(state)
    canaries = []
    for instance in first.values():
        slot = (instance.service, instance.group, instance.template, instance.data_center, 0)
        canary = new_instance(spec, slot, state, "canary", {**state.versions.get(key, {}), **pins})
        canary.name = canary.name.replace("/0@", "/canary@")
        canary.index = instance.index
        canary.weight = 0.0
        launcher.start(canary)
        state.instances.append(canary)
        canaries.append(canary)
    try:
        for canary in canaries:
            launcher.wait_ready(canary)
    except RuntimeError:
        for canary in canaries:
            launcher.stop(canary)
            state.instances.remove(canary)
        raise
    state.releases[key] = {
        "pins": pins,
        "from": before,
        "percent": 0.0,
        "paused": False,
        "reserved": [[q, dc, gpu, cards] for (q, dc, gpu), cards in sorted(reserved.items())],
        "steps": list(
            spec.services[old[0].service]
            .groups[old[0].group]
            .release.get("canary_steps", [10, 50, 100])
        ),
    }
    numbers: dict[str, Any] = {
        "canaries": len(canaries),
        "reserved_cards": sum(reserved.values()),
    }
    state.save()
    record(state, key, "start", before, pins, numbers)
    return step(state, key, percent)


def step(
    state: State,
    key: str,
    percent: float | None,
    action: str = "step",
    resume: bool = False,
) -> dict[str, Any]:
    release = _active(state, key)
    if release["paused"] and not resume:
        raise ReleaseError(f"the release of {key} is paused; step --resume to go on")
    before = release["percent"]
    if percent is None:
        later = [s for s in release["steps"] if s > before]
        percent = later[0] if later else 100.0
    percent = min(100.0, max(0.0, float(percent)))
    numbers: dict[str, Any] = {"percent": percent, **_set_weights(state, key, percent)}
    release["percent"] = percent
    release["paused"] = False
    state.save()
    wait_registered(state.registry, expected_registry(state))
    record(state, key, action, {"percent": before}, {"percent": percent}, numbers)
    return numbers


def pause(state: State, key: str) -> None:
    release = _active(state, key)
    release["paused"] = True
    state.save()
    record(state, key, "pause", {"percent": release["percent"]}, "paused", {})


def abort(state: State, key: str) -> None:
    release = _active(state, key)
    launcher = launcher_for(state)
    for canary in _members(state, key, "canary"):
        launcher.stop(canary)
        state.instances.remove(canary)
    _set_weights(state, key, 0)
    del state.releases[key]
    state.save()
    wait_registered(state.registry, expected_registry(state))
    record(state, key, "abort", {"percent": release["percent"]}, {"percent": 0}, {})


def promote(spec: PlatformSpec, state: State, key: str, action: str = "promote") -> int:
    """100 % new: canaries become stable, every other old instance is replaced; the revision."""
    release = _active(state, key)
    if release["paused"]:
        raise ReleaseError(f"the release of {key} is paused; step --resume first")
    launcher = launcher_for(state)
    pins = {**state.versions.get(key, {}), **release["pins"]}
    old = sorted(_members(state, key, "stable"), key=lambda i: i.index)
    replaced = 0
    for canary in _members(state, key, "canary"):
        victim = next(
            i
            for i in old
            if (i.template, i.data_center, i.index)
            == (canary.template, canary.data_center, canary.index)
        )
        canary.role = "stable"
        launcher.set_weight(canary, 1.0)
        launcher.stop(victim)
        state.instances.remove(victim)
        old.remove(victim)
        replaced += 1
    for victim in old:
        fresh = new_instance(spec, _slot(victim), state, "stable", pins)
        launcher.start(fresh)
        state.instances.append(fresh)
        launcher.wait_ready(fresh)
        launcher.stop(victim)
        state.instances.remove(victim)
        replaced += 1
    state.versions[key] = pins
    revisions = state.group_revisions.setdefault(key, [])
    revision = (revisions[-1]["revision"] if revisions else 0) + 1
    revisions.append({"revision": revision, "versions": pins, "at": time.time()})
    del state.releases[key]
    state.save()
    wait_registered(state.registry, expected_registry(state))
    record(
        state,
        key,
        action,
        release["from"],
        pins,
        {"percent": 100, "replaced": replaced, "group_revision": revision},
    )
    return revision


def rollback(spec: PlatformSpec, state: State, key: str, revision: int | None) -> int:
    """Back to a recorded group revision (default: the one before the current)."""
    _group(spec, key)
    revisions = state.group_revisions.get(key, [])
    if revision is None:
        revision = revisions[-2]["revision"] if len(revisions) >= 2 else 0
    found = next((r for r in revisions if r["revision"] == revision), None)
    if found is None or not found["versions"]:
        known = ", ".join(str(r["revision"]) for r in revisions) or "none"
        raise ReleaseError(f"{key} has no recorded revision {revision} (recorded: {known})")
    if key in state.releases:
        abort(state, key)
    start(spec, state, key, dict(found["versions"]), 100.0)
    return promote(spec, state, key, action=f"rollback to revision {revision}")


def _slot(instance: LaunchedInstance) -> tuple[str, str, str, str, int]:
    return (
        instance.service,
        instance.group,
        instance.template,
        instance.data_center,
        instance.index,
    )
