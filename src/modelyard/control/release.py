"""Releases per group: a canary of new model versions by weight steps, promote, abort, rollback.

``start`` launches one canary instance per template and data centre of the
group, serving the new versions (``serve --model-version`` pins them), after
reserving the canaries' cards in the ledger: a release the quota cannot
hold is refused before anything starts. Traffic moves by registry weights:
at x % the canaries' weight share new / (new + old) is x %, which the
client's weighted balancing honours. ``promote`` makes the canaries stable
and replaces the other old instances one at a time (never more than the
reserved surge at once); ``abort`` stops the canaries; ``rollback`` is a
release to a recorded group revision, started at 100 % and promoted.

Moving a model from group A to group B is a release too (``move``), started
once the spec binds the model to B. B gets one canary per template and data
centre, loading its templates' models, the moved one included; weights then
move the model's traffic from A's instances to B's canaries step by step.
Weights are per instance, but they only matter among the instances that
serve a model: A's other models are served by A alone, B's by B's old
instances and its canaries (the same versions), so only the moved model's
traffic shifts. ``promote`` makes the canaries stable and replaces B's other
instances and A's (whose template no longer loads the model), each started
before the old one stops. Callers name the service and the model
throughout and never change.

A canary is named as a stable instance of its slot and a later revision
(``SERVICE/GROUP/TEMPLATE/DC/INDEX@rN``): promoted, it keeps its name, and its
role (canary or stable) is in the state, the status and the console.

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
    slot_of,
    wait_listed,
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


def check_group(spec: PlatformSpec, key: str) -> None:
    service, _, group = key.partition("/")
    if service not in spec.services or group not in spec.services[service].groups:
        raise ReleaseError(f"no group {key} in {spec.document.filename}")


def _members(state: State, key: str, role: str) -> list[LaunchedInstance]:
    return [i for i in state.instances if f"{i.service}/{i.group}" == key and i.role == role]


def active_release(state: State, key: str, target: str | None = "local") -> dict[str, Any]:
    """The group's release in progress, made here (``target``: "local", "kubernetes", or
    None for either): a cluster's canaries are Deployments that only its control plane
    removes."""
    release = state.releases.get(key)
    if release is None:
        raise ReleaseError(f"no release in progress for {key}")
    made = release.get("target", "local")
    if target is not None and made != target:
        raise ReleaseError(
            f"the release of {key} runs on {made}: act on it through its control plane "
            "(platform release ... --control URL)"
        )
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


def _moved_from(state: State, release: dict[str, Any]) -> list[LaunchedInstance]:
    """The instances a move takes its model away from."""
    return [
        i for i in _members(state, release["from_group"], "stable") if release["model"] in i.loads
    ]


def split_weights(percent: float, old: int, new: int) -> tuple[float, float]:
    """The weights of each of ``old`` instances and of each of ``new`` ones (canaries) that
    give the new ones ``percent`` % of the traffic."""
    if percent <= 0:
        return 1.0, 0.0
    if percent >= 100:
        return 0.0, 1.0
    return 1.0, percent * old / ((100.0 - percent) * max(1, new))


def _set_weights(state: State, key: str, percent: float) -> dict[str, float]:
    launcher = launcher_for(state)
    old, new = _members(state, key, "stable"), _members(state, key, "canary")
    release = state.releases.get(key) or {}
    if release.get("kind") == "move":
        old = _moved_from(state, release)
    old_weight, new_weight = split_weights(percent, len(old), len(new))
    for instance in old:
        launcher.set_weight(instance, old_weight)
    for instance in new:
        launcher.set_weight(instance, new_weight)
    return {"old_weight": old_weight, "new_weight": new_weight}


def start(
    spec: PlatformSpec, state: State, key: str, pins: dict[str, str], percent: float | None
) -> dict[str, Any]:
    check_group(spec, key)
    percent = checked_percent(percent)
    pins = check_pins(spec, state, key, pins)
    check_idle(state, key)
    old = _members(state, key, "stable")
    if not old:
        raise ReleaseError(f"{key} runs no instances; apply the spec first")
    first: dict[tuple[str, str], LaunchedInstance] = {}
    for instance in sorted(old, key=lambda i: i.index):
        first.setdefault((instance.template, instance.data_center), instance)
    canaries = []
    for instance in first.values():
        # the slot of the instance it replaces at promotion: a canary's name is a stable name
        # of a later revision, so a promoted one needs no renaming (its role is in the state)
        canary = new_instance(
            spec, slot_of(instance), state, "canary", {**state.versions.get(key, {}), **pins}
        )
        canaries.append(canary)
    reserved = reserve_cards(spec, state, key, canaries, f"release of {key}")
    before = _served_versions(state, key, list(pins))
    revisions = state.group_revisions.setdefault(key, [])
    if not revisions:
        revisions.append({"revision": 1, "versions": before, "at": time.time()})
    _start_canaries(launcher_for(state), state, canaries)
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


def checked_percent(value: Any) -> float | None:
    """A traffic share from 0 to 100, or None for the next canary step."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ReleaseError(f"percent must be a number from 0 to 100, got {value!r}")
    return float(value)


def check_pins(spec: PlatformSpec, state: State, key: str, pins: dict[str, str]) -> dict[str, str]:
    """Every pinned model belongs to the group, and its version is in the repository (where
    this machine has it); the pins as the registry writes versions ("007" is "7")."""
    service, _, group_name = key.partition("/")
    owned = spec.services[service].groups[group_name].models
    repository = Path(state.model_repository) if state.model_repository else None
    canonical = {}
    for model, version in pins.items():
        if model not in owned:
            raise ReleaseError(
                f"{key} does not own model {model!r} (it owns {', '.join(owned) or 'none'})"
            )
        if not (version.isascii() and version.isdigit()) or int(version) == 0:
            raise ReleaseError(f"version {version!r} of {model} is not a version number")
        version = canonical[model] = str(int(version))
        if repository is not None and not (repository / model / version).is_dir():
            found = (
                sorted(
                    (p.name for p in (repository / model).iterdir() if p.name.isdigit()),
                    key=int,
                )
                if (repository / model).is_dir()
                else []
            )
            raise ReleaseError(
                f"{model} has no version {version} in {repository} "
                f"(found: {', '.join(found) or 'none'})"
            )
    return canonical


def check_idle(state: State, key: str) -> None:
    if key in state.releases:
        raise ReleaseError(f"a release of {key} is in progress; promote, abort or rollback it")
    for other, release in state.releases.items():
        if release.get("from_group") == key:
            raise ReleaseError(
                f"{other} is moving {release['model']} out of {key}; finish it first"
            )


def reserve_cards(
    spec: PlatformSpec,
    state: State,
    key: str,
    instances: list[LaunchedInstance],
    what: str,
    running: int | None = None,
) -> Counter[tuple[str, str, str]]:
    """The cards ``instances`` add, checked against the ledger before anything starts
    (``running``: the group's cards now; None, those it launched here)."""
    quota = spec.services[key.partition("/")[0]].quota
    reserved: Counter[tuple[str, str, str]] = Counter()
    for instance in instances:
        if instance.cards:
            gpu = instance.spec.split("/")[2].split("*")[0]
            reserved[(quota, instance.data_center, gpu)] += instance.cards
    total = Counter(state.reserved())
    total.update(reserved)
    findings = validate(spec, reserved=dict(total))
    surge = sum(reserved.values())
    service, _, group = key.partition("/")
    share = spec.services[service].groups[group].cards
    if running is None:
        running = sum(i.cards for i in state.instances if i.service == service and i.group == group)
    if surge and running + surge > share:  # the surge is the group's cards too
        findings.append(
            Finding(
                "GROUP_CARDS_EXCEEDED",
                f"group {key} runs {running} card(s) and its release would add {surge}: "
                f"{running + surge} over its share of {share}",
                spec.where("services", service, "groups", group, "cards"),
                requested=running + surge,
                limit=share,
            )
        )
    if findings:
        refused = ReleaseError(
            f"{what} refused before anything started: the ledger cannot hold "
            f"its surge of {surge} card(s)",
            findings,
        )
        record(state, key, "refused", None, None, {
            "what": what, "surge_cards": surge, "findings": [f.line() for f in findings]
        })  # fmt: skip
        raise refused
    return reserved


def _start_canaries(
    launcher: Any, state: State, canaries: list[LaunchedInstance]
) -> list[LaunchedInstance]:
    """Start every canary at weight 0 and wait for it; on any failure none stays running."""
    started = []
    try:
        for canary in canaries:
            canary.weight = 0.0
            launcher.start(canary)
            state.instances.append(canary)
            started.append(canary)
        for canary in canaries:
            launcher.wait_ready(canary)
    except Exception:
        for canary in started:
            launcher.stop(canary)
            state.instances.remove(canary)
        raise
    return canaries


def move(
    spec: PlatformSpec, state: State, key: str, model: str, percent: float | None
) -> dict[str, Any]:
    """Start moving ``model`` into group ``key``, which the spec already binds it to."""
    check_group(spec, key)
    percent = checked_percent(percent)
    service, _, group_name = key.partition("/")
    group = spec.services[service].groups[group_name]
    holders = {f"{i.service}/{i.group}" for i in state.stable() if model in i.loads}
    source = move_source(spec, state, key, model, holders)
    templates = {name: t for name, t in group.templates.items() if model in t.loads}
    old = {(i.template, i.data_center): i for i in _members(state, key, "stable")}
    pins = state.versions.get(key, {})
    canaries = []
    for name, template in sorted(templates.items()):
        for dc in sorted(template.queues):
            stable = old.get((name, dc))
            index = stable.index if stable is not None else 0
            slot = (service, group_name, name, dc, index)
            canaries.append(new_instance(spec, slot, state, "canary", pins))
    reserved = reserve_cards(spec, state, key, canaries, f"moving {model} into {key}")
    _start_canaries(launcher_for(state), state, canaries)
    state.releases[key] = {
        "kind": "move",
        "model": model,
        "from_group": source,
        "pins": {},
        "from": {},
        "percent": 0.0,
        "paused": False,
        "reserved": [[q, dc, gpu, cards] for (q, dc, gpu), cards in sorted(reserved.items())],
        "steps": list(group.release.get("canary_steps", [10, 50, 100])),
    }
    state.save()
    numbers = {"model": model, "canaries": len(canaries), "reserved_cards": sum(reserved.values())}
    record(state, key, "move start", {"group": source}, {"group": key}, numbers)
    record(state, source, "move start", {"group": source}, {"group": key}, numbers)
    return step(state, key, percent)


def move_source(spec: PlatformSpec, state: State, key: str, model: str, holders: set[str]) -> str:
    """The group a move of ``model`` into ``key`` takes it from: the one other group of the
    service among ``holders`` (SERVICE/GROUP of what serves it now). The spec must bind the
    model to ``key`` and a template there load it; neither group may be in a release."""
    service, _, group_name = key.partition("/")
    group = spec.services[service].groups[group_name]
    if model not in group.models:
        raise ReleaseError(
            f"the spec does not bind {model} to {key}: move it to that group's models and "
            "its templates' loads first"
        )
    sources = sorted(h for h in holders if h.partition("/")[0] == service and h != key)
    if len(sources) != 1:
        raise ReleaseError(
            f"{model} must be served by exactly one other running group of {service} to move "
            f"it into {key} (found: {', '.join(sources) or 'none'})"
        )
    check_idle(state, key)
    check_idle(state, sources[0])
    if not any(model in t.loads for t in group.templates.values()):
        raise ReleaseError(f"no template of {key} loads {model} in the spec")
    return sources[0]


def next_percent(
    release: dict[str, Any], key: str, percent: Any, resume: bool
) -> tuple[float, float]:
    """The release's share now and the one a step asks for (``None``: its next canary
    step, else 100 %); a paused release steps only to resume."""
    wanted = checked_percent(percent)
    if release["paused"] and not resume:
        raise ReleaseError(f"the release of {key} is paused; step --resume to go on")
    before = float(release["percent"])
    if wanted is None:
        later = [s for s in release["steps"] if s > before]
        wanted = float(later[0]) if later else 100.0
    return before, wanted


def step(
    state: State,
    key: str,
    percent: float | None,
    action: str = "step",
    resume: bool = False,
) -> dict[str, Any]:
    release = active_release(state, key)
    before, percent = next_percent(release, key, percent, resume)
    numbers: dict[str, Any] = {"percent": percent, **_set_weights(state, key, percent)}
    release["percent"] = percent
    release["paused"] = False
    state.save()
    wait_registered(state.registry, expected_registry(state))
    for group in recorded_groups(key, release):
        record(state, group, action, {"percent": before}, {"percent": percent}, numbers)
    return numbers


def recorded_groups(key: str, release: dict[str, Any]) -> list[str]:
    """A move is in both groups' records; any other release only in its own."""
    return [key, release["from_group"]] if release.get("kind") == "move" else [key]


def pause(state: State, key: str) -> None:
    release = active_release(state, key, target=None)
    release["paused"] = True
    state.save()
    for group in recorded_groups(key, release):
        record(state, group, "pause", {"percent": release["percent"]}, "paused", {})


def abort(state: State, key: str) -> None:
    release = active_release(state, key)
    launcher = launcher_for(state)
    for canary in _members(state, key, "canary"):
        launcher.stop(canary)
        state.instances.remove(canary)
    _set_weights(state, key, 0)
    del state.releases[key]
    state.save()
    wait_registered(state.registry, expected_registry(state))
    for group in recorded_groups(key, release):
        record(state, group, "abort", {"percent": release["percent"]}, {"percent": 0}, {})


def promote(spec: PlatformSpec, state: State, key: str, action: str = "promote") -> int:
    """100 % new: canaries become stable, every other old instance is replaced; the revision."""
    release = active_release(state, key)
    if release["paused"]:
        raise ReleaseError(f"the release of {key} is paused; step --resume first")
    launcher = launcher_for(state)
    pins = {**state.versions.get(key, {}), **release["pins"]}
    old = sorted(_members(state, key, "stable"), key=lambda i: i.index)
    replaced = 0
    for canary in _members(state, key, "canary"):
        victim = next(
            (
                i
                for i in old
                if (i.template, i.data_center, i.index)
                == (canary.template, canary.data_center, canary.index)
            ),
            None,
        )
        canary.role = "stable"
        launcher.set_weight(canary, 1.0)
        if victim is not None:
            launcher.stop(victim)
            state.instances.remove(victim)
            old.remove(victim)
            replaced += 1
    if release.get("kind") == "move":
        # the source group's instances still load the model: replace them from the spec
        old += _moved_from(state, release)
    for victim in old:
        group_pins = pins if f"{victim.service}/{victim.group}" == key else {}
        fresh = new_instance(spec, slot_of(victim), state, "stable", group_pins)
        launcher.start(fresh)
        state.instances.append(fresh)
        launcher.wait_ready(fresh)
        wait_listed(state.registry, fresh)
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
    numbers = {"percent": 100, "replaced": replaced, "group_revision": revision}
    if release.get("kind") == "move":
        moved = {"model": release["model"], **numbers}
        for group in recorded_groups(key, release):
            to = {"group": key}
            record(state, group, f"move {action}", {"group": release["from_group"]}, to, moved)
        return revision
    record(state, key, action, release["from"], pins, numbers)
    return revision


def recorded_versions(state: State, key: str, revision: int | None) -> tuple[int, dict[str, str]]:
    """A recorded group revision and its versions (``None``: the one before the current)."""
    revisions = state.group_revisions.get(key, [])
    if revision is None:
        revision = revisions[-2]["revision"] if len(revisions) >= 2 else 0
    found = next((r for r in revisions if r["revision"] == revision), None)
    if found is None or not found["versions"]:
        known = ", ".join(str(r["revision"]) for r in revisions) or "none"
        raise ReleaseError(f"{key} has no recorded revision {revision} (recorded: {known})")
    return revision, dict(found["versions"])


def rollback(spec: PlatformSpec, state: State, key: str, revision: int | None) -> int:
    """Back to a recorded group revision (default: the one before the current)."""
    check_group(spec, key)
    revision, versions = recorded_versions(state, key, revision)
    if key in state.releases:
        abort(state, key)
    start(spec, state, key, versions, 100.0)
    return promote(spec, state, key, action=f"rollback to revision {revision}")
