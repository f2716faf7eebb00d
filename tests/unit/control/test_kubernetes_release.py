"""A release on a cluster: the canary Deployments it makes, the weights it writes, what it
refuses, and the requests the official client sends for them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from modelyard.control import kubernetes_release, release
from modelyard.control.apply import State
from modelyard.control.kubernetes import ClusterOptions, deployment_name, quota_namespace, render
from modelyard.control.kubernetes_apply import (
    config_map_data_request,
    container_args_request,
    delete_request,
)
from modelyard.control.kubernetes_release import (
    canary_deployment,
    canary_name,
    release_args,
    weight_key,
)
from modelyard.control.release import ReleaseError, history
from modelyard.control.spec import parse_platform_spec
from modelyard.discovery.registry import Instance
from modelyard.errors import ConfigError
from tests.unit.control.test_ledger import BASE

SERVICE = "com.example.search.ranker"
GPU = f"{SERVICE}/gpu"
OPTIONS = ClusterOptions(models_claim="models")
NAMESPACE = quota_namespace(OPTIONS, "search-gpu")
# room for a canary per data centre: the group's share is two cards over what it runs
ROOMY = BASE.replace("total_cards: 6", "total_cards: 8").replace("cards: 6", "cards: 8")


class FakeCluster:
    """The Deployments a render applied, and what a release does to them."""

    def __init__(self, text: str) -> None:
        self.deployments = {
            m["metadata"]["name"]: m
            for m in render(parse_platform_spec(text), OPTIONS)
            if m["kind"] == "Deployment"
        }
        self.applied: list[str] = []
        self.deleted: list[str] = []
        self.weights: dict[str, str] = {}

    def deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.deployments.get(name))

    def apply(self, manifest: dict[str, Any]) -> None:
        self.applied.append(manifest["metadata"]["name"])
        self.deployments[manifest["metadata"]["name"]] = manifest

    def set_args(self, namespace: str, name: str, args: list[str]) -> None:
        self.deployments[name]["spec"]["template"]["spec"]["containers"][0]["args"] = args

    def delete(self, namespace: str, name: str) -> None:
        self.deleted.append(name)
        self.deployments.pop(name, None)

    def set_weights(self, namespace: str, weights: dict[str, str | None]) -> None:
        assert namespace == NAMESPACE
        for key, value in weights.items():
            if value is None:
                self.weights.pop(key, None)
            else:
                self.weights[key] = value


def _on(cluster: FakeCluster, pods: list[Instance]) -> kubernetes_release.OnCluster:
    """The cluster and its pods as a release sees them; the group runs 6 cards."""
    return kubernetes_release.OnCluster(cluster, OPTIONS, pods, 6)


def _pods(stable: int, canaries: int, version: str = "1") -> list[Instance]:
    pods = [
        Instance(SERVICE, "gpu", f"stable-{n}", http=f"10.0.0.{n}:8000",
                 labels={"template": "a30", "data_center": f"dc{1 + n % 2}"},
                 models={"ranker": {version: "READY"}})
        for n in range(stable)
    ]  # fmt: skip
    pods += [
        Instance(SERVICE, "gpu", f"canary-{n}", http=f"10.0.1.{n}:8000",
                 labels={"template": "a30", "data_center": f"dc{1 + n}", "role": "canary"},
                 models={"ranker": {"2": "READY"}})
        for n in range(canaries)
    ]  # fmt: skip
    return pods


def test_the_release_flags_are_replaced_never_repeated() -> None:
    args = ["serve", "--weight", "1", "--model-version=ranker=1", "--load-model", "ranker",
            "--weight-file", "/etc/modelyard/weights/old", "--role", "stable"]  # fmt: skip
    assert release_args(args, {"ranker": "2"}, "new", 0.0, "canary") == [
        "serve", "--load-model", "ranker", "--model-version", "ranker=2",
        "--weight-file", "/etc/modelyard/weights/new", "--weight", "0", "--role", "canary",
    ]  # fmt: skip
    assert release_args(args, {}, "k", None, None) == [
        "serve", "--load-model", "ranker", "--weight-file", "/etc/modelyard/weights/k"
    ]  # fmt: skip


def test_a_canary_is_its_deployment_s_pod_at_the_pinned_versions_and_validates() -> None:
    stable = FakeCluster(BASE).deployments[deployment_name(SERVICE, "gpu", "a30", "dc2")]
    name = canary_name(SERVICE, "gpu", "a30", "dc2")
    canary = canary_deployment(stable, name, {"ranker": "2"})
    kubernetes_validate.validate(canary, kubernetes_validate.latest_version(), strict=True)
    assert canary["metadata"]["namespace"] == stable["metadata"]["namespace"]
    assert canary["spec"]["replicas"] == 1
    # the selectors differ on the track: neither Deployment takes the other's pods
    selector = canary["spec"]["selector"]["matchLabels"]
    assert selector == {**stable["spec"]["selector"]["matchLabels"], "modelyard.io/track": "canary"}
    assert canary["spec"]["template"]["metadata"]["labels"] == selector
    pod, stable_pod = canary["spec"]["template"]["spec"], stable["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == stable_pod["nodeSelector"]  # the same pool and GPU model
    assert pod["containers"][0]["resources"] == stable_pod["containers"][0]["resources"]
    args = pod["containers"][0]["args"]
    assert args[args.index("--model-version") + 1] == "ranker=2"
    assert args[args.index("--weight-file") + 1] == f"/etc/modelyard/weights/{name}"
    assert args[args.index("--role") + 1] == "canary"
    assert weight_key(stable) == stable["metadata"]["name"]


def test_a_deployment_rendered_before_releases_is_refused_with_the_way_out() -> None:
    stable = FakeCluster(BASE).deployments[deployment_name(SERVICE, "gpu", "a30", "dc1")]
    del stable["spec"]["selector"]["matchLabels"]["modelyard.io/track"]
    with pytest.raises(ReleaseError) as error:
        weight_key(stable)
    assert "was rendered before releases on a cluster" in str(error.value)
    assert "render and apply again, deleting it first" in str(error.value)
    with pytest.raises(ReleaseError, match="has no container 'modelyard'"):
        weight_key({"metadata": {"name": "x"}, "spec": {"replicas": 1}})


def test_the_ledger_refuses_a_release_before_any_canary_is_made(tmp_path: Path) -> None:
    spec, cluster, state = parse_platform_spec(BASE), FakeCluster(BASE), State.load(tmp_path)
    with pytest.raises(ReleaseError) as error:
        kubernetes_release.start(spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": "2"}, None)
    assert "its surge of 2 card(s)" in str(error.value)
    assert any(f.code == "GROUP_CARDS_EXCEEDED" for f in error.value.findings)
    assert cluster.applied == [] and cluster.weights == {} and GPU not in state.releases


def test_a_release_on_a_cluster_from_start_to_promotion(tmp_path: Path) -> None:
    spec, cluster, state = parse_platform_spec(ROOMY), FakeCluster(ROOMY), State.load(tmp_path)
    stables = [deployment_name(SERVICE, "gpu", "a30", dc) for dc in ("dc1", "dc2")]
    canaries = [canary_name(SERVICE, "gpu", "a30", dc) for dc in ("dc1", "dc2")]
    with pytest.raises(ReleaseError, match="a release starts at 0 %"):
        kubernetes_release.start(spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": "2"}, 10)
    kubernetes_release.start(spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": "2"}, None)
    assert cluster.applied == canaries
    assert cluster.weights == {canaries[0]: "0", canaries[1]: "0"}
    release = state.releases[GPU]
    assert release["from"] == {"ranker": "1"} and release["reserved"] == [
        ["search-gpu", "dc1", "A30-24G", 1], ["search-gpu", "dc2", "A30-24G", 1]
    ]  # fmt: skip

    with pytest.raises(ReleaseError, match="1 of the 2 canary pods"):
        kubernetes_release.step(state, cluster, _pods(6, 1), GPU, 10)
    # at 10 %: two canaries weigh a ninth of six stable pods
    numbers = kubernetes_release.step(state, cluster, _pods(6, 2), GPU, 10)
    assert numbers["new_weight"] == pytest.approx(10 * 6 / (90 * 2))
    assert cluster.weights[stables[0]] == "1" and cluster.weights[canaries[1]] == "0.333333"
    kubernetes_release.step(state, cluster, _pods(6, 2), GPU, 100)
    assert cluster.weights == {stables[0]: "0", stables[1]: "0",
                               canaries[0]: "1", canaries[1]: "1"}  # fmt: skip

    assert kubernetes_release.promote(state, cluster, GPU) == 2
    assert kubernetes_release.promote(state, cluster, GPU) == 2  # again: the same promotion
    with pytest.raises(ReleaseError, match="is being promoted"):
        kubernetes_release.step(state, cluster, _pods(6, 2), GPU, 50)
    for name in stables:
        args = cluster.deployments[name]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--model-version") + 1] == "ranker=2"
        assert args[args.index("--weight-file") + 1] == f"/etc/modelyard/weights/{name}.r2"
    # the rollout is not over while a pod serves version 1 or pods are missing
    assert not kubernetes_release.finish(spec, state, cluster, _pods(6, 2, version="1"), GPU)
    assert not kubernetes_release.finish(spec, state, cluster, _pods(5, 2, version="2"), GPU)
    assert cluster.deleted == []
    assert kubernetes_release.finish(spec, state, cluster, _pods(6, 2, version="2"), GPU)
    assert cluster.deleted == canaries and cluster.weights == {}
    assert state.versions[GPU] == {"ranker": "2"} and GPU not in state.releases
    assert [r["revision"] for r in state.group_revisions[GPU]] == [1, 2]


def test_the_requests_a_release_sends() -> None:
    patch = container_args_request("ns", "d", "modelyard", ["serve"])
    assert (patch.method, patch.path) == ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d")
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert patch.body == {
        "spec": {"template": {"spec": {"containers": [{"name": "modelyard", "args": ["serve"]}]}}}
    }
    assert ("fieldManager", "modelyard-control-plane") in patch.query
    weights = config_map_data_request("ns", "release-weights", {"a": "0.5", "b": None})
    assert weights.path == "/api/v1/namespaces/ns/configmaps/release-weights"
    assert weights.content_type == "application/merge-patch+json"
    assert weights.body == {"data": {"a": "0.5", "b": None}}  # null removes a key
    gone = delete_request("/apis/apps/v1/namespaces/ns/deployments/c")
    assert gone.method == "DELETE" and gone.body["propagationPolicy"] == "Background"


MOVED = (
    ROOMY.replace("models: [tokenizer]\n", "models: []\n")
    .replace("loads: [tokenizer]", "loads: []")
    .replace("models: [ranker]\n", "models: [ranker, tokenizer]\n")
    .replace("loads: [ranker]", "loads: [ranker, tokenizer]")
)


def _moving_pods(tokenizer_in_gpu: bool, tokenizer_in_preprocess: bool) -> list[Instance]:
    gpu = {"ranker": {"1": "READY"}, **({"tokenizer": {"1": "READY"}} if tokenizer_in_gpu else {})}
    pods = [
        Instance(SERVICE, "gpu", f"gpu-{n}", http=f"10.0.0.{n}:8000",
                 labels={"template": "a30", "data_center": f"dc{1 + n % 2}"}, models=dict(gpu))
        for n in range(6)
    ]  # fmt: skip
    pods += [
        Instance(SERVICE, "preprocess", f"pre-{n}", http=f"10.0.2.{n}:8000",
                 labels={"template": "cpu", "data_center": "dc1"},
                 models={"tokenizer": {"1": "READY"}} if tokenizer_in_preprocess else {})
        for n in range(2)
    ]  # fmt: skip
    return pods + [
        Instance(SERVICE, "gpu", f"canary-{n}", http=f"10.0.1.{n}:8000",
                 labels={"template": "a30", "data_center": f"dc{1 + n}", "role": "canary"},
                 models={"ranker": {"1": "READY"}, "tokenizer": {"1": "READY"}})
        for n in range(2)
    ]  # fmt: skip


def _args(cluster: FakeCluster, name: str) -> list[str]:
    return list(cluster.deployments[name]["spec"]["template"]["spec"]["containers"][0]["args"])


def test_moving_a_model_between_groups_on_a_cluster(tmp_path: Path) -> None:
    # the cluster still runs the render from before the move; the spec binds it to gpu
    spec, cluster, state = parse_platform_spec(MOVED), FakeCluster(ROOMY), State.load(tmp_path)
    preprocess = deployment_name(SERVICE, "preprocess", "cpu", "dc1")
    canaries = [canary_name(SERVICE, "gpu", "a30", dc) for dc in ("dc1", "dc2")]
    pods = _moving_pods(tokenizer_in_gpu=False, tokenizer_in_preprocess=True)
    with pytest.raises(ReleaseError, match="the spec does not bind ranker to"):
        kubernetes_release.move(spec, state, _on(cluster, pods), f"{SERVICE}/preprocess",
                                "ranker", None)  # fmt: skip
    kubernetes_release.move(spec, state, _on(cluster, pods), GPU, "tokenizer", None)
    assert cluster.applied == canaries
    for name in canaries:  # the canaries load the model too
        assert _args(cluster, name).count("--load-model") == 2 and "tokenizer" in _args(
            cluster, name
        )
    release = state.releases[GPU]
    assert release["from_group"] == f"{SERVICE}/preprocess"
    assert release["givers"] == [{"stable": preprocess, "stable_key": preprocess}]

    # the model's traffic leaves the two pre-processing pods for the two canaries
    numbers = kubernetes_release.step(state, cluster, pods, GPU, 50)
    assert numbers["old_pods"] == 2 and numbers["new_weight"] == 1.0
    assert cluster.weights == {preprocess: "1", canaries[0]: "1", canaries[1]: "1"}
    kubernetes_release.step(state, cluster, pods, GPU, 100)
    assert cluster.weights[preprocess] == "0"

    assert kubernetes_release.promote(state, cluster, GPU) == 1
    for dc in ("dc1", "dc2"):
        gpu_args = _args(cluster, deployment_name(SERVICE, "gpu", "a30", dc))
        assert gpu_args.count("--load-model") == 2 and "tokenizer" in gpu_args
    kept = _args(cluster, preprocess)
    assert "tokenizer" not in kept  # it drops the model
    assert kept[kept.index("--weight-file") + 1] == f"/etc/modelyard/weights/{preprocess}.r1"
    # not over while a pre-processing pod serves it, or a gpu pod lacks it
    assert not kubernetes_release.finish(spec, state, cluster, pods, GPU)
    halfway = _moving_pods(tokenizer_in_gpu=False, tokenizer_in_preprocess=False)
    assert not kubernetes_release.finish(spec, state, cluster, halfway, GPU)
    done = _moving_pods(tokenizer_in_gpu=True, tokenizer_in_preprocess=False)
    assert kubernetes_release.finish(spec, state, cluster, done, GPU)
    assert cluster.deleted == canaries and cluster.weights == {}
    for group in ("gpu", "preprocess"):
        events = [e["action"] for e in history(tmp_path, f"{SERVICE}/{group}")]
        assert events == ["move start", "step", "step", "promote started", "move promote"]


class RefusingCluster(FakeCluster):
    """A cluster that refuses to patch one Deployment's container, until told not to."""

    refused: str | None = None

    def set_args(self, namespace: str, name: str, args: list[str]) -> None:
        if name == self.refused:
            raise ConfigError("the cluster refused PATCH", rule="platform/kubernetes-apply")
        super().set_args(namespace, name, args)


def test_a_promotion_refused_half_way_finishes_when_run_again_or_is_undone_by_abort(
    tmp_path: Path,
) -> None:
    spec, cluster, state = parse_platform_spec(ROOMY), RefusingCluster(ROOMY), State.load(tmp_path)
    dc1, dc2 = (deployment_name(SERVICE, "gpu", "a30", dc) for dc in ("dc1", "dc2"))
    before = {name: _args(cluster, name) for name in (dc1, dc2)}
    kubernetes_release.start(spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": "007"}, None)
    assert state.releases[GPU]["pins"] == {"ranker": "7"}  # as the registry writes it
    cluster.refused = dc2
    with pytest.raises(ConfigError, match="refused PATCH"):
        kubernetes_release.promote(state, cluster, GPU)
    assert "ranker=7" in _args(cluster, dc1) and _args(cluster, dc2) == before[dc2]
    assert State.load(tmp_path).releases[GPU]["promoting"] == 2  # recorded before the patches
    cluster.refused = None
    assert kubernetes_release.promote(state, cluster, GPU) == 2  # rolls what is left
    assert "ranker=7" in _args(cluster, dc2)
    kubernetes_release.abort(state, cluster, GPU)
    assert {name: _args(cluster, name) for name in (dc1, dc2)} == before
    assert GPU not in state.releases and cluster.weights == {}
    event = history(tmp_path, GPU)[-1]
    assert event["action"] == "abort" and event["numbers"] == {"rolled_back": 2}


def test_a_cluster_release_is_refused_while_a_place_is_lost_or_by_the_local_commands(
    tmp_path: Path,
) -> None:
    spec, cluster, state = parse_platform_spec(ROOMY), FakeCluster(ROOMY), State.load(tmp_path)
    state.lost["dc2"] = {"at": "now", "how": "declared"}
    with pytest.raises(ReleaseError, match="dc2 is declared lost: restore it first"):
        kubernetes_release.start(spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": "2"}, None)
    assert cluster.applied == []
    state.lost.clear()
    for version in ("0", "²", "v2"):
        with pytest.raises(ReleaseError, match="is not a version number"):
            kubernetes_release.start(
                spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": version}, None
            )
    kubernetes_release.start(spec, state, _on(cluster, _pods(6, 0)), GPU, {"ranker": "2"}, None)
    with pytest.raises(ReleaseError, match="runs on kubernetes: act on it through its control"):
        release.abort(state, GPU)  # the local command: it would leave the canaries running
    assert cluster.deleted == [] and GPU in state.releases
