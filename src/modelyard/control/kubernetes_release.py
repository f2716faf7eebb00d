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

Moving a model between groups is not made on a cluster yet. Applying the render
again puts the render's arguments back (the versions of the spec's repository):
the control plane's versions last until then.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Protocol

from modelyard.control.apply import State, new_instance
from modelyard.control.kubernetes import (
    TRACK,
    WEIGHTS,
    WEIGHTS_DIR,
    ClusterOptions,
    deployment_name,
    object_name,
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
    record,
    reserve_cards,
)
from modelyard.control.scaling import current_replicas
from modelyard.control.spec import PlatformSpec
from modelyard.discovery.registry import Instance

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
        send(self.client, [config_map_data_request(namespace, WEIGHTS, weights)], SCALE_TIMEOUT)


def canary_name(service: str, group: str, template: str, data_center: str) -> str:
    return object_name(service, group, template, data_center, "canary")


def release_args(
    args: list[str], pins: dict[str, str], weight_key: str, weight: float | None, role: str | None
) -> list[str]:
    """A serve command's arguments with a release's flags replaced: the pinned versions,
    the weight key, the starting weight and the role (None: left out)."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _RELEASE_FLAGS:
            skip = True  # and its value
        elif not arg.startswith(tuple(f"{flag}=" for flag in _RELEASE_FLAGS)):
            kept.append(arg)
    for model, version in sorted(pins.items()):
        kept += ["--model-version", f"{model}={version}"]
    kept += ["--weight-file", f"{WEIGHTS_DIR}/{weight_key}"]
    if weight is not None:
        kept += ["--weight", f"{weight:g}"]
    if role is not None:
        kept += ["--role", role]
    return kept


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


def canary_deployment(stable: dict[str, Any], name: str, pins: dict[str, str]) -> dict[str, Any]:
    """A canary beside ``stable``: its pod template, one pod, the pinned versions, weight
    0 until a step writes its key (its name), registered as a canary."""
    spec = stable["spec"]
    pod = copy.deepcopy(spec["template"]["spec"])
    container = next(c for c in pod["containers"] if c.get("name") == CONTAINER)
    container["args"] = release_args(container.get("args", []), pins, name, 0.0, "canary")
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


def start(
    spec: PlatformSpec,
    state: State,
    cluster: Cluster,
    options: ClusterOptions,
    instances: list[Instance],
    running_cards: int,
    key: str,
    pins: dict[str, str],
    percent: float | None,
) -> dict[str, Any]:
    check_group(spec, key)
    if checked_percent(percent):
        raise ReleaseError(
            "on Kubernetes a release starts at 0 %: step it once the canary pods are ready "
            "(release step)"
        )
    check_pins(spec, state, key, pins)
    check_idle(state, key)
    service, _, group_name = key.partition("/")
    group = spec.services[service].groups[group_name]
    namespace = quota_namespace(options, spec.services[service].quota)
    pins = {**state.versions.get(key, {}), **pins}
    slots, canaries, stables = [], [], []
    for template in group.templates.values():
        if template.spec is None:
            continue
        for dc in sorted(template.queues):
            stable_name = deployment_name(service, group_name, template.name, dc)
            stable = cluster.deployment(namespace, stable_name)
            if stable is None:
                raise ReleaseError(
                    f"Deployment {namespace}/{stable_name} is not on the cluster: apply the "
                    "render first (modelyard platform apply --target kubernetes)"
                )
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
            stables.append(stable)
            canaries.append(canary_deployment(stable, name, own))
    ledgered = [
        new_instance(spec, (service, group_name, s["template"], s["data_center"], 0), state,
                     "canary", {})
        for s in slots
    ]  # fmt: skip
    reserved = reserve_cards(spec, state, key, ledgered, f"release of {key}", running_cards)
    before = _served_versions(instances, key, list(pins))
    revisions = state.group_revisions.setdefault(key, [])
    if not revisions:
        revisions.append({"revision": 1, "versions": before, "at": time.time()})
    cluster.set_weights(namespace, {s["canary"]: "0" for s in slots})
    applied = []
    try:
        for canary in canaries:
            cluster.apply(canary)
            applied.append(canary["metadata"]["name"])
    except Exception:
        for name in applied:
            cluster.delete(namespace, name)
        raise
    state.releases[key] = {
        "target": "kubernetes",
        "namespace": namespace,
        "slots": slots,
        "pins": pins,
        "from": before,
        "percent": 0.0,
        "paused": False,
        "promoting": None,
        "reserved": [[q, dc, gpu, cards] for (q, dc, gpu), cards in sorted(reserved.items())],
        "steps": list(group.release.get("canary_steps", [10, 50, 100])),
    }
    state.save()
    numbers = {"canaries": len(canaries), "reserved_cards": sum(reserved.values())}
    record(state, key, "start", before, pins, {**numbers, "deployments": applied})
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


def step(
    state: State,
    cluster: Cluster,
    instances: list[Instance],
    key: str,
    percent: float | None,
    resume: bool = False,
) -> dict[str, Any]:
    release = active_release(state, key)
    percent = checked_percent(percent)
    if release.get("promoting"):
        raise ReleaseError(f"the release of {key} is being promoted; it finishes on its own")
    if release["paused"] and not resume:
        raise ReleaseError(f"the release of {key} is paused; step --resume to go on")
    before = release["percent"]
    if percent is None:
        later = [s for s in release["steps"] if s > before]
        percent = float(later[0]) if later else 100.0
    slots = release["slots"]
    ready = _listed_canaries(instances, key, slots)
    if percent > 0 and ready < len(slots):
        raise ReleaseError(
            f"{ready} of the {len(slots)} canary pods of {key} are in the registry: a step "
            f"waits for them all (kubectl get pods -l {TRACK}=canary)"
        )
    old = max(1, len(_pods(instances, key, "stable")))
    if percent <= 0:
        old_weight, new_weight = 1.0, 0.0
    elif percent >= 100:
        old_weight, new_weight = 0.0, 1.0
    else:
        old_weight = 1.0
        new_weight = percent * old / ((100.0 - percent) * len(slots))
    weights: dict[str, str | None] = {}
    for slot in slots:
        weights[slot["stable_key"]] = f"{old_weight:.6g}"
        weights[slot["canary"]] = f"{new_weight:.6g}"
    cluster.set_weights(release["namespace"], weights)
    release["percent"] = percent
    release["paused"] = False
    state.save()
    numbers: dict[str, Any] = {
        "percent": percent,
        "old_weight": old_weight,
        "new_weight": new_weight,
        "stable_pods": old,
    }
    record(state, key, "step", {"percent": before}, {"percent": percent}, numbers)
    return numbers


def abort(state: State, cluster: Cluster, key: str) -> None:
    release = active_release(state, key)
    if release.get("promoting"):
        raise ReleaseError(f"the release of {key} is being promoted; roll back once it finished")
    _remove_canaries(cluster, release)
    del state.releases[key]
    state.save()
    record(state, key, "abort", {"percent": release["percent"]}, {"percent": 0}, {})


def _remove_canaries(cluster: Cluster, release: dict[str, Any]) -> None:
    """Delete the canaries, then drop their keys and the stable pods' (weight 1 again)."""
    namespace = release["namespace"]
    for slot in release["slots"]:
        cluster.delete(namespace, slot["canary"])
    weights: dict[str, str | None] = {}
    for slot in release["slots"]:
        weights[slot["canary"]] = None
        weights[slot["stable_key"]] = None
    cluster.set_weights(namespace, weights)


def promote(state: State, cluster: Cluster, key: str) -> int:
    """Roll the group's Deployments to the pinned versions; ``finish`` ends the release once
    the registry shows them. The revision the group will be at."""
    release = active_release(state, key)
    if release.get("promoting"):
        return int(release["promoting"])
    if release["paused"]:
        raise ReleaseError(f"the release of {key} is paused; step --resume first")
    revisions = state.group_revisions.setdefault(key, [])
    revision = (revisions[-1]["revision"] if revisions else 0) + 1
    namespace = release["namespace"]
    for slot in release["slots"]:
        stable = cluster.deployment(namespace, slot["stable"])
        if stable is None:
            raise ReleaseError(f"Deployment {namespace}/{slot['stable']} is gone from the cluster")
        template = _container(stable)
        loads = _loads(template.get("args", []))
        pins = {m: v for m, v in release["pins"].items() if m in loads}
        # a key nobody wrote: the new pods come up at weight 1, the old ones keep theirs
        slot["promoted_key"] = f"{slot['stable']}.r{revision}"
        args = release_args(template.get("args", []), pins, slot["promoted_key"], None, None)
        cluster.set_args(namespace, slot["stable"], args)
    release["promoting"] = revision
    state.save()
    record(state, key, "promote started", {"percent": release["percent"]},
           {"group_revision": revision}, {"deployments": len(release["slots"])})  # fmt: skip
    return revision


def _loads(args: list[str]) -> set[str]:
    return {args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--load-model"}


def finish(
    spec: PlatformSpec, state: State, cluster: Cluster, instances: list[Instance], key: str
) -> bool:
    """End a promotion whose pods all serve the pinned versions: the canaries go, the
    revision is recorded. Whether it ended."""
    release = state.releases.get(key)
    if release is None or not release.get("promoting"):
        return False
    service, _, group_name = key.partition("/")
    group = spec.services.get(service, None)
    if group is None or group_name not in group.groups:
        return False
    wanted = sum(
        current_replicas(spec, state, service, group.groups[group_name], s["template"])
        for s in release["slots"]
    )
    pods = _pods(instances, key, "stable")
    if len(pods) < wanted or not all(_serves(pod, release["pins"]) for pod in pods):
        return False
    _remove_canaries(cluster, release)
    revision = int(release["promoting"])
    state.versions[key] = dict(release["pins"])
    state.group_revisions.setdefault(key, []).append(
        {"revision": revision, "versions": dict(release["pins"]), "at": time.time()}
    )
    del state.releases[key]
    state.save()
    numbers = {"percent": 100, "stable_pods": len(pods), "group_revision": revision}
    record(state, key, "promote", release["from"], release["pins"], numbers)
    return True


def _serves(pod: Instance, pins: dict[str, str]) -> bool:
    """The pod serves each pinned model it loads at that version only, READY."""
    for model, version in pins.items():
        versions = pod.models.get(model)
        if versions is not None and (versions.get(version) != "READY" or len(versions) > 1):
            return False
    return True


def rollback(
    spec: PlatformSpec,
    state: State,
    cluster: Cluster,
    options: ClusterOptions,
    instances: list[Instance],
    running_cards: int,
    key: str,
    revision: int | None,
) -> int:
    """Back to a recorded group revision (default: the one before the current)."""
    check_group(spec, key)
    revisions = state.group_revisions.get(key, [])
    if revision is None:
        revision = revisions[-2]["revision"] if len(revisions) >= 2 else 0
    found = next((r for r in revisions if r["revision"] == revision), None)
    if found is None or not found["versions"]:
        known = ", ".join(str(r["revision"]) for r in revisions) or "none"
        raise ReleaseError(f"{key} has no recorded revision {revision} (recorded: {known})")
    if key in state.releases:
        abort(state, cluster, key)
    start(spec, state, cluster, options, instances, running_cards, key,
          dict(found["versions"]), None)  # fmt: skip
    return promote(state, cluster, key)
