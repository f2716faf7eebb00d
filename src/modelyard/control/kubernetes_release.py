"""Releases on a cluster: canary Deployments of pinned versions, weights from a ConfigMap.

The render runs each template of a group in each data centre as one Deployment
(labelled ``modelyard.io/track: stable``) whose pods read their registry weight from
the key named after the Deployment in their namespace's ``release-weights``
ConfigMap (absent: 1). A release goes as on one machine (``control/release.py``),
with the cluster's objects in place of processes:

* ``start`` reads each of the group's Deployments and applies beside it a canary
  Deployment of one pod: the same pod template, serving the pinned versions (``serve
  --model-version``), registered with the role ``canary`` and reading a key of its
  own, 0 until the first step. The canaries' cards are reserved in the ledger first.
  A release starts at 0 %: the canary pods may take minutes to pull and load.
* ``step`` writes the weights, once every canary is in the registry: at x % the
  canaries' share of the weight is x %, counted over the group's pods the registry
  lists. A pod sees a change when the kubelet refreshes its ConfigMap (about a
  minute by default) and announces it.
* ``abort`` deletes the canaries and gives the stable pods their weight back.
* ``promote`` patches each Deployment's container to the pinned versions and to a
  weight key of the new group revision, which nothing has written: the rolling
  update's new pods come up at weight 1 while the old ones keep 0. The release stays
  ``promoting`` until the registry lists the group's stable pods all at the pinned
  versions, as many as the ledger's replicas; then ``finish`` (the control plane's
  poll) deletes the canaries and the old keys and records the revision.
* ``rollback`` starts a release of a recorded revision and promotes it.

Moving a model from group A to group B (``move``, once the spec binds it to B) is
a release of B whose canaries load the model too; the weights move the model's
traffic from A's pods (the keys of A's Deployments that load it) to B's canaries,
and ``promote`` rolls B's Deployments to load the model and A's to drop it; the
release ends when the registry shows B's pods serving it and none of A's.

Applying the render again puts the render's arguments back (the spec's versions
and loads): what a release changed lasts until then.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Protocol

from modelyard.control.apply import State, new_instance
from modelyard.control.failover import cluster_replicas
from modelyard.control.kubernetes import (
    TRACK,
    WEIGHTS,
    WEIGHTS_DIR,
    ClusterOptions,
    canary_name,
    deployment_name,
    quota_namespace,
)
from modelyard.control.kubernetes_apply import (
    SCALE_TIMEOUT,
    config_map_data_request,
    container_args_request,
    control_plane_apply_request,
    delete_request,
    deployment_path,
    fetch,
    read_request,
    send,
)
from modelyard.control.release import (
    ReleaseError,
    active_release,
    check_group,
    check_idle,
    check_pins,
    checked_percent,
    move_source,
    next_percent,
    record,
    recorded_groups,
    recorded_versions,
    reserve_cards,
    split_weights,
)
from modelyard.control.spec import PlatformSpec
from modelyard.discovery.registry import Instance
from modelyard.processes import FlagValue, flag_arguments

CONTAINER = "modelyard"  # the render's instance container
# flags a release sets on a pod's serve command: each replaced, never repeated
_RELEASE_FLAGS = ("--model-version", "--weight-file", "--weight", "--role")


class Cluster(Protocol):
    """What a release asks of the cluster (``ClusterReleases`` through the official
    client)."""

    def deployment(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def apply(self, manifest: dict[str, Any]) -> None: ...
    def set_args(self, namespace: str, name: str, args: list[str]) -> None: ...
    def delete(self, namespace: str, name: str) -> None: ...
    def set_weights(self, namespace: str, weights: dict[str, str | None]) -> None: ...


@dataclass(frozen=True, slots=True)
class OnCluster:
    """What a release reads and acts on: the cluster, the render's options, the pods the
    registry lists now and the cards the group runs."""

    cluster: Cluster
    options: ClusterOptions
    instances: list[Instance]
    running_cards: int


class ClusterReleases:
    """``Cluster`` through an ``ApiClient``: each call bounded in time, a refusal an error
    line with the cluster's status."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return fetch(self.client, read_request(deployment_path(namespace, name)))

    def apply(self, manifest: dict[str, Any]) -> None:
        send(self.client, [control_plane_apply_request(manifest)])

    def set_args(self, namespace: str, name: str, args: list[str]) -> None:
        send(self.client, [container_args_request(namespace, name, CONTAINER, args)])

    def delete(self, namespace: str, name: str) -> None:
        send(self.client, [delete_request(deployment_path(namespace, name))], SCALE_TIMEOUT, True)

    def set_weights(self, namespace: str, weights: dict[str, str | None]) -> None:
        if fetch(self.client, config_map_data_request(namespace, WEIGHTS, weights)) is None:
            raise ReleaseError(
                f"the ConfigMap {namespace}/{WEIGHTS} the pods read their weights from is not "
                "on the cluster: apply the render again (modelyard platform apply --target "
                "kubernetes)"
            )


def release_args(
    args: list[str],
    pins: dict[str, str],
    weight_key: str,
    weight: float | None,
    role: str | None,
    loads: dict[str, bool] | None = None,
) -> list[str]:
    """A serve command's arguments with a release's flags replaced: the pinned versions,
    the weight key, the starting weight and the role (None: left out); ``loads``: models
    to load (True) or not (False) from the start."""
    kept: list[str] = []
    skip = False
    dropped = {model for model, load in (loads or {}).items() if not load}
    for index, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in _RELEASE_FLAGS:
            skip = True  # and its value
        elif arg.startswith(tuple(f"{flag}=" for flag in _RELEASE_FLAGS)):
            continue
        elif arg == "--load-model" and index + 1 < len(args) and args[index + 1] in dropped:
            skip = True
        else:
            kept.append(arg)
    loaded = _loads(kept)
    added: dict[str, FlagValue] = {
        "load_model": [m for m, load in sorted((loads or {}).items()) if load and m not in loaded],
        "model_version": [f"{model}={version}" for model, version in sorted(pins.items())],
        "weight_file": f"{WEIGHTS_DIR}/{weight_key}",
    }
    if weight is not None:
        added["weight"] = f"{weight:g}"
    if role is not None:
        added["role"] = role
    return kept + flag_arguments(**added)


def _loads(args: list[str]) -> set[str]:
    return {args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--load-model"}


def _pins(args: list[str]) -> dict[str, str]:
    """The versions a serve command pins (``--model-version MODEL=VERSION``)."""
    pairs = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--model-version"]
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    pod = deployment.get("spec", {}).get("template", {}).get("spec", {})
    containers = pod.get("containers", []) if isinstance(pod, dict) else []
    found = next((c for c in containers if c.get("name") == CONTAINER), None)
    if found is None:
        raise ReleaseError(
            f"Deployment {deployment['metadata']['name']} has no container '{CONTAINER}': "
            "it was not rendered by modelyard platform render kubernetes"
        )
    return found


def weight_key(deployment: dict[str, Any]) -> str:
    """The ConfigMap key the Deployment's pods read their weight from."""
    args = _container(deployment).get("args", [])
    selector = deployment.get("spec", {}).get("selector", {}).get("matchLabels", {})
    if "--weight-file" not in args or selector.get(TRACK) != "stable":
        name = deployment["metadata"]["name"]
        raise ReleaseError(
            f"Deployment {name} was rendered before releases on a cluster (no weight file, "
            f"no {TRACK} in its selector); render and apply again, deleting it first "
            "(a selector cannot change)"
        )
    return str(args[args.index("--weight-file") + 1]).rsplit("/", 1)[-1]


def canary_deployment(
    stable: dict[str, Any], name: str, pins: dict[str, str], loads: str | None = None
) -> dict[str, Any]:
    """A canary beside ``stable``: its pod template, one pod, the pinned versions (and the
    model ``loads``, for a move), weight 0 until a step writes its key (its name),
    registered as a canary."""
    spec = stable["spec"]
    pod = copy.deepcopy(spec["template"]["spec"])
    container = next(c for c in pod["containers"] if c.get("name") == CONTAINER)
    container["args"] = release_args(
        container.get("args", []), pins, name, 0.0, "canary", {loads: True} if loads else None
    )
    pod_labels = {**spec["template"]["metadata"].get("labels", {}), TRACK: "canary"}
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": stable["metadata"]["namespace"],
            "labels": {**stable["metadata"].get("labels", {}), TRACK: "canary"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {**spec["selector"]["matchLabels"], TRACK: "canary"}},
            "template": {"metadata": {"labels": pod_labels}, "spec": pod},
        },
    }
    if "strategy" in spec:
        manifest["spec"]["strategy"] = copy.deepcopy(spec["strategy"])
    return manifest


def _pods(instances: list[Instance], key: str, role: str) -> list[Instance]:
    return [
        i
        for i in instances
        if f"{i.service}/{i.group}" == key and i.labels.get("role", "stable") == role
    ]


def _served_versions(instances: list[Instance], key: str, models: list[str]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for pod in _pods(instances, key, "stable"):
        for model in models:
            ready = [v for v, s in pod.models.get(model, {}).items() if s == "READY"]
            if ready:
                versions[model] = max(ready, key=lambda v: (len(v), v))
    return versions


def _not_while_lost(state: State) -> None:
    """A place declared lost holds pods that cannot come: a canary there would never be
    ready, nor would a promotion's pods."""
    if state.lost:
        lost = ", ".join(sorted(state.lost))
        raise ReleaseError(f"{lost} is declared lost: restore it first (platform dr restore)")


def _starts_at_zero(percent: float | None) -> None:
    if checked_percent(percent):
        raise ReleaseError(
            "on Kubernetes a release starts at 0 %: step it once the canary pods are ready "
            "(release step)"
        )


def _required(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    found = cluster.deployment(namespace, name)
    if found is None:
        raise ReleaseError(
            f"Deployment {namespace}/{name} is not on the cluster: apply the render first "
            "(modelyard platform apply --target kubernetes)"
        )
    return found


def _canaries(
    spec: PlatformSpec,
    cluster: Cluster,
    namespace: str,
    key: str,
    pins: dict[str, str],
    moved: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A slot per template (that loads ``moved``, for a move) and data centre of the
    group: its Deployment, its weight key and its canary; and the canaries."""
    service, _, group_name = key.partition("/")
    slots, canaries = [], []
    for template in spec.services[service].groups[group_name].templates.values():
        if template.spec is None or (moved is not None and moved not in template.loads):
            continue
        for dc in sorted(template.queues):
            stable_name = deployment_name(service, group_name, template.name, dc)
            stable = _required(cluster, namespace, stable_name)
            name = canary_name(service, group_name, template.name, dc)
            own = {m: v for m, v in pins.items() if m in template.loads}
            slots.append(
                {
                    "template": template.name,
                    "data_center": dc,
                    "stable": stable_name,
                    "stable_key": weight_key(stable),
                    "canary": name,
                }
            )
            canaries.append(canary_deployment(stable, name, own, moved))
    return slots, canaries


def _begin(
    spec: PlatformSpec,
    state: State,
    on: OnCluster,
    namespace: str,
    key: str,
    slots: list[dict[str, Any]],
    canaries: list[dict[str, Any]],
    what: str,
    release: dict[str, Any],
) -> dict[str, Any]:
    """Reserve the canaries' cards, then apply them at weight 0; on a failure none stays."""
    service, _, group_name = key.partition("/")
    ledgered = [
        new_instance(spec, (service, group_name, s["template"], s["data_center"], 0), state,
                     "canary", {})
        for s in slots
    ]  # fmt: skip
    reserved = reserve_cards(spec, state, key, ledgered, what, on.running_cards)
    on.cluster.set_weights(namespace, {s["canary"]: "0" for s in slots})
    applied = []
    try:
        for canary in canaries:
            on.cluster.apply(canary)
            applied.append(canary["metadata"]["name"])
    except Exception:
        for name in applied:
            on.cluster.delete(namespace, name)
        raise
    state.releases[key] = {
        "target": "kubernetes",
        "namespace": namespace,
        "slots": slots,
        "percent": 0.0,
        "paused": False,
        "promoting": None,
        "reserved": [[q, dc, gpu, cards] for (q, dc, gpu), cards in sorted(reserved.items())],
        "steps": list(
            spec.services[service].groups[group_name].release.get("canary_steps", [10, 50, 100])
        ),
        **release,
    }
    state.save()
    return {"canaries": len(canaries), "reserved_cards": sum(reserved.values())}


def start(
    spec: PlatformSpec,
    state: State,
    on: OnCluster,
    key: str,
    pins: dict[str, str],
    percent: float | None,
) -> dict[str, Any]:
    check_group(spec, key)
    _starts_at_zero(percent)
    _not_while_lost(state)
    pins = check_pins(spec, state, key, pins)
    check_idle(state, key)
    service = key.partition("/")[0]
    namespace = quota_namespace(on.options, spec.services[service].quota)
    pins = {**state.versions.get(key, {}), **pins}
    slots, canaries = _canaries(spec, on.cluster, namespace, key, pins)
    before = _served_versions(on.instances, key, list(pins))
    release = {"pins": pins, "from": before}
    numbers = _begin(spec, state, on, namespace, key, slots, canaries, f"release of {key}",
                     release)  # fmt: skip
    revisions = state.group_revisions.setdefault(key, [])
    if not revisions:
        revisions.append({"revision": 1, "versions": before, "at": time.time()})
        state.save()
    record(state, key, "start", before, pins, numbers)
    return {"percent": 0.0, **numbers}


def move(
    spec: PlatformSpec, state: State, on: OnCluster, key: str, model: str, percent: float | None
) -> dict[str, Any]:
    """Start moving ``model`` into group ``key``, which the spec already binds it to."""
    check_group(spec, key)
    _starts_at_zero(percent)
    _not_while_lost(state)
    service = key.partition("/")[0]
    holders = {
        f"{i.service}/{i.group}"
        for i in on.instances
        if model in i.models and i.labels.get("role", "stable") == "stable"
    }
    source = move_source(spec, state, key, model, holders)
    namespace = quota_namespace(on.options, spec.services[service].quota)
    slots, canaries = _canaries(
        spec, on.cluster, namespace, key, state.versions.get(key, {}), model
    )
    givers = []  # the source's Deployments that load the model: their pods give it away
    source_name = source.partition("/")[2]
    source_group = spec.services[service].groups.get(source_name)
    for template in source_group.templates.values() if source_group else []:
        for dc in sorted(template.queues):
            name = deployment_name(service, source_name, template.name, dc)
            found = on.cluster.deployment(namespace, name)
            if found is not None and model in _loads(_container(found).get("args", [])):
                givers.append({"stable": name, "stable_key": weight_key(found)})
    if not givers:
        raise ReleaseError(
            f"no Deployment of {source} loads {model} (--load-model): its pods serve it "
            "from elsewhere, and a move cannot take it from them"
        )
    release = {"kind": "move", "model": model, "from_group": source, "givers": givers,
               "pins": {}, "from": {}}  # fmt: skip
    numbers = _begin(spec, state, on, namespace, key, slots, canaries,
                     f"moving {model} into {key}", release)  # fmt: skip
    numbers = {"model": model, **numbers}
    for group_key in recorded_groups(key, state.releases[key]):
        record(state, group_key, "move start", {"group": source}, {"group": key}, numbers)
    return {"percent": 0.0, **numbers}


def _listed_canaries(instances: list[Instance], key: str, slots: list[dict[str, Any]]) -> int:
    canaries = _pods(instances, key, "canary")
    return sum(
        any(
            c.labels.get("template") == s["template"]
            and c.labels.get("data_center") == s["data_center"]
            for c in canaries
        )
        for s in slots
    )


def _giving(release: dict[str, Any]) -> list[dict[str, Any]]:
    """The Deployments whose pods' weights give way to the canaries: the group's own, or,
    for a move, the source group's that load the model."""
    return list(release["givers"] if release.get("kind") == "move" else release["slots"])


def _old_pods(instances: list[Instance], key: str, release: dict[str, Any]) -> int:
    if release.get("kind") == "move":
        pods = _pods(instances, release["from_group"], "stable")
        return len([p for p in pods if release["model"] in p.models])
    return len(_pods(instances, key, "stable"))


def step(
    state: State,
    cluster: Cluster,
    instances: list[Instance],
    key: str,
    percent: float | None,
    resume: bool = False,
) -> dict[str, Any]:
    release = active_release(state, key, "kubernetes")
    if release.get("promoting"):
        raise ReleaseError(f"the release of {key} is being promoted; it finishes on its own")
    before, percent = next_percent(release, key, percent, resume)
    slots = release["slots"]
    ready = _listed_canaries(instances, key, slots)
    if percent > 0 and ready < len(slots):
        raise ReleaseError(
            f"{ready} of the {len(slots)} canary pods of {key} are in the registry: a step "
            f"waits for them all (kubectl get pods -l {TRACK}=canary)"
        )
    old = max(1, _old_pods(instances, key, release))
    old_weight, new_weight = split_weights(percent, old, len(slots))
    weights: dict[str, str | None] = {
        g["stable_key"]: f"{old_weight:.6g}" for g in _giving(release)
    }
    weights.update({s["canary"]: f"{new_weight:.6g}" for s in slots})
    cluster.set_weights(release["namespace"], weights)
    release["percent"] = percent
    release["paused"] = False
    state.save()
    numbers: dict[str, Any] = {
        "percent": percent,
        "old_weight": old_weight,
        "new_weight": new_weight,
        "old_pods": old,
    }
    for group_key in recorded_groups(key, release):
        record(state, group_key, "step", {"percent": before}, {"percent": percent}, numbers)
    return numbers


def abort(state: State, cluster: Cluster, key: str) -> None:
    """Stop the release: the canaries go and every pod weighs 1 again; during a promotion,
    the Deployments it rolled get their arguments back first."""
    release = active_release(state, key, "kubernetes")
    namespace = release["namespace"]
    rolled_back = 0
    for rolled, _ in _rolls(release):
        if "previous_args" in rolled:
            cluster.set_args(namespace, rolled["stable"], rolled["previous_args"])
            rolled_back += 1
    _remove_canaries(cluster, release)
    del state.releases[key]
    state.save()
    numbers = {"rolled_back": rolled_back} if rolled_back else {}
    for group_key in recorded_groups(key, release):
        record(state, group_key, "abort", {"percent": release["percent"]}, {"percent": 0},
               numbers)  # fmt: skip


def _remove_canaries(cluster: Cluster, release: dict[str, Any]) -> None:
    """Delete the canaries, then drop their keys and the old pods' (weight 1 again)."""
    namespace = release["namespace"]
    for slot in release["slots"]:
        cluster.delete(namespace, slot["canary"])
    weights: dict[str, str | None] = {s["canary"]: None for s in release["slots"]}
    weights.update({g["stable_key"]: None for g in _giving(release)})
    cluster.set_weights(namespace, weights)


def _rolls(release: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The Deployments a promotion rolls, and whether each receives what is released (for
    a move, the source's drop the model)."""
    rolls = [(slot, True) for slot in release["slots"]]
    if release.get("kind") == "move":
        rolls += [(giver, False) for giver in release["givers"]]
    return rolls


def promote(state: State, cluster: Cluster, key: str) -> int:
    """Roll the group's Deployments to the pinned versions (for a move: the group's to load
    the model, the source's to drop it); ``finish`` ends the release once the registry
    shows them. The revision the group will be at. The arguments each Deployment had are
    kept first, so running it again after a refusal rolls the rest, and ``abort`` puts
    them back."""
    release = active_release(state, key, "kubernetes")
    namespace = release["namespace"]
    rolls = _rolls(release)
    if not release.get("promoting"):
        if release["paused"]:
            raise ReleaseError(f"the release of {key} is paused; step --resume first")
        revisions = state.group_revisions.setdefault(key, [])
        revision = (revisions[-1]["revision"] if revisions else 0) + 1
        for rolled, _ in rolls:
            stable = cluster.deployment(namespace, rolled["stable"])
            if stable is None:
                raise ReleaseError(
                    f"Deployment {namespace}/{rolled['stable']} is gone from the cluster"
                )
            rolled["previous_args"] = list(_container(stable).get("args", []))
            # a key nobody wrote: the new pods come up at weight 1, the old ones keep theirs
            rolled["promoted_key"] = f"{rolled['stable']}.r{revision}"
        release["promoting"] = revision
        state.save()
        for group_key in recorded_groups(key, release):
            record(state, group_key, "promote started", {"percent": release["percent"]},
                   {"group_revision": revision}, {"deployments": len(rolls)})  # fmt: skip
    moved = release.get("model") if release.get("kind") == "move" else None
    for rolled, receives in rolls:
        args = rolled["previous_args"]
        pins = _pins(args) if moved is not None else {}
        pins.update({m: v for m, v in release["pins"].items() if m in _loads(args)})
        loads = None
        if moved is not None:
            loads = {moved: receives}
            if not receives:
                pins.pop(moved, None)
        new_args = release_args(args, pins, rolled["promoted_key"], None, None, loads)
        cluster.set_args(namespace, rolled["stable"], new_args)
    return int(release["promoting"])


def finish(
    spec: PlatformSpec, state: State, cluster: Cluster, instances: list[Instance], key: str
) -> bool:
    """End a promotion whose pods all serve what it promoted: the canaries go, the
    revision is recorded. Whether it ended."""
    release = state.releases.get(key)
    if release is None or not release.get("promoting"):
        return False
    service, _, group_name = key.partition("/")
    found = spec.services.get(service)
    if found is None or group_name not in found.groups:
        return False
    # as many pods as the Deployments hold now: a lost place's none, its replacements too
    counts = cluster_replicas(spec, state)[0]
    wanted = sum(
        counts.get((service, group_name, s["template"], s["data_center"]), 0)
        for s in release["slots"]
    )
    pods = _pods(instances, key, "stable")
    if len(pods) < wanted or not all(_serves(pod, release["pins"]) for pod in pods):
        return False
    moved = release.get("model") if release.get("kind") == "move" else None
    if moved is not None:
        receiving = {(s["template"], s["data_center"]) for s in release["slots"]}
        receivers = [
            p for p in pods if (p.labels.get("template"), p.labels.get("data_center")) in receiving
        ]
        givers = _pods(instances, release["from_group"], "stable")
        if not all(moved in p.models for p in receivers) or any(moved in p.models for p in givers):
            return False
    _remove_canaries(cluster, release)
    revision = int(release["promoting"])
    pins = {**state.versions.get(key, {}), **release["pins"]}
    state.versions[key] = pins
    state.group_revisions.setdefault(key, []).append(
        {"revision": revision, "versions": dict(pins), "at": time.time()}
    )
    del state.releases[key]
    state.save()
    numbers = {"percent": 100, "stable_pods": len(pods), "group_revision": revision}
    if moved is not None:
        for group_key in recorded_groups(key, release):
            record(state, group_key, "move promote", {"group": release["from_group"]},
                   {"group": key}, {"model": moved, **numbers})  # fmt: skip
        return True
    action = release.get("action", "promote")
    record(state, key, action, release["from"], release["pins"], numbers)
    return True


def _serves(pod: Instance, pins: dict[str, str]) -> bool:
    """The pod serves each pinned model it loads at that version only, READY."""
    for model, version in pins.items():
        versions = pod.models.get(model)
        if versions is not None and (versions.get(version) != "READY" or len(versions) > 1):
            return False
    return True


def rollback(
    spec: PlatformSpec, state: State, on: OnCluster, key: str, revision: int | None
) -> int:
    """Back to a recorded group revision (default: the one before the current)."""
    check_group(spec, key)
    revision, versions = recorded_versions(state, key, revision)
    if key in state.releases:
        abort(state, on.cluster, key)
    start(spec, state, on, key, versions, None)
    state.releases[key]["action"] = f"rollback to revision {revision}"
    state.save()
    return promote(state, on.cluster, key)
