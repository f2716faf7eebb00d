"""A release on Kubernetes: canary Deployments of pinned versions, weights from a ConfigMap.

No cluster runs here. A small API on loopback (reached through a kubeconfig, as
outside a pod) keeps the objects the official client sends, and a kubelet of the
test's runs each Deployment's pod as the render wrote it: its serve command, with
the pod's address, the model volume and the weights ConfigMap (written to files, as
the kubelet projects it) mapped to this machine. The control plane starts a canary
beside the group's Deployment, moves the weights, promotes by rolling the
Deployment to the pinned version, and ends the release when the registry shows it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.client import Client
from modelyard.control.kubernetes import (
    WEIGHTS,
    ClusterOptions,
    deployment_name,
    quota_namespace,
    render,
)
from modelyard.control.kubernetes_release import canary_name
from modelyard.control.spec import parse_platform_spec
from tests.support.models import bytes_echo, slow_double
from tests.support.platform import SERVICE, RunningPlatform, double_spec, running_platform
from tests.support.servers import ServerProcess, running_server, wait_until

pytestmark = pytest.mark.slow  # about 12 s: three pods start

MAIN = f"{SERVICE}/main"
NAMESPACE = quota_namespace(ClusterOptions(), "q")
STABLE = deployment_name(SERVICE, "main", "t", "dc1")
CANARY = canary_name(SERVICE, "main", "t", "dc1")
DOUBLE = {"x": np.array([[1.0, 2.0]], dtype=np.float32)}


class Kubelet:
    """Runs a Deployment's one pod on this machine, from its container's arguments."""

    def __init__(self, directory: Path, repository: Path) -> None:
        self.directory = directory
        self.repository = repository
        self.weights = directory / "weights"
        self.weights.mkdir()
        self.pods: dict[str, tuple[contextlib.ExitStack, ServerProcess]] = {}

    def run(self, deployment: dict[str, Any]) -> ServerProcess:
        name = deployment["metadata"]["name"]
        self.stop(name)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        args = list(container["args"])
        assert args[:3] == ["serve", "--model-repository", "/models"]
        args = args[3:]
        for flag in ("--http-port", "--grpc-port", "--metrics-port"):  # the pod's own: here,
            del args[args.index(flag) : args.index(flag) + 2]  # free ports running_server picks
        args[args.index("--host") + 1] = "127.0.0.1"
        args[args.index("--advertise-host") + 1] = "127.0.0.1"  # the pod's IP
        args[args.index("--deregister-grace") + 1] = "0.5"
        weight_file = args.index("--weight-file") + 1
        assert args[weight_file].startswith("/etc/modelyard/weights/")
        args[weight_file] = str(self.weights / args[weight_file].rsplit("/", 1)[1])
        stack = contextlib.ExitStack()
        pod = stack.enter_context(running_server(self.repository, self.directory, *args))
        self.pods[name] = (stack, pod)
        return pod

    def stop(self, name: str) -> None:
        if name in self.pods:
            self.pods.pop(name)[0].close()

    def project(self, data: dict[str, str]) -> None:
        """The weights ConfigMap as files, as the kubelet refreshes a mounted ConfigMap."""
        for path in self.weights.iterdir():
            if path.name not in data:
                path.unlink()
        for key, value in data.items():
            (self.weights / key).write_text(value)

    def close(self) -> None:
        for name in list(self.pods):
            self.stop(name)


class _Api(BaseHTTPRequestHandler):
    """Deployments and the weights ConfigMap, kept as the client sends them."""

    objects: dict[str, dict[str, Any]] = {}
    calls: list[tuple[str, str, str, Any]] = []  # method, path, content type, body

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        if path.endswith("/scale"):
            self._reply(200, {"kind": "Scale", "spec": {"replicas": 1}})
        elif path in self.objects:
            self._reply(200, self.objects[path])
        else:
            self._reply(404, {"kind": "Status", "code": 404})

    def do_PATCH(self) -> None:
        path, kind = self.path.partition("?")[0], self.headers["Content-Type"]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.calls.append(("PATCH", self.path, kind, body))
        if kind == "application/apply-patch+yaml":
            self.objects[path] = body
        elif kind == "application/strategic-merge-patch+json":
            (patched,) = body["spec"]["template"]["spec"]["containers"]
            for container in self.objects[path]["spec"]["template"]["spec"]["containers"]:
                if container["name"] == patched["name"]:
                    container["args"] = patched["args"]
        elif kind == "application/merge-patch+json" and "/configmaps/" in path:
            if path not in self.objects:  # as an API server: a merge patch makes nothing
                self._reply(404, {"kind": "Status", "code": 404})
                return
            data = self.objects[path].setdefault("data", {})
            for key, value in body["data"].items():
                if value is None:
                    data.pop(key, None)
                else:
                    data[key] = value
        self._reply(200, self.objects.get(path, {}))

    def do_DELETE(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.calls.append(("DELETE", self.path, self.headers["Content-Type"], body))
        found = self.objects.pop(self.path.partition("?")[0], None)
        self._reply(200 if found else 404, {"kind": "Status"})

    def _reply(self, status: int, answer: dict[str, Any]) -> None:
        reply = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def cluster_api(directory: Path, objects: list[dict[str, Any]]) -> Iterator[Path]:
    """A kubeconfig naming an API that holds ``objects``."""
    _Api.objects = {
        f"/apis/apps/v1/namespaces/{m['metadata']['namespace']}/deployments/"
        f"{m['metadata']['name']}": m
        for m in objects
        if m["kind"] == "Deployment"
    }
    _Api.objects.update(
        {
            f"/api/v1/namespaces/{m['metadata']['namespace']}/configmaps/{m['metadata']['name']}": m
            for m in objects
            if m["kind"] == "ConfigMap"
        }
    )
    _Api.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}
                ],
                "users": [{"name": "u", "user": {"token": "test-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    try:
        yield kubeconfig
    finally:
        server.shutdown()
        server.server_close()


def _deployment(name: str) -> dict[str, Any]:
    return _Api.objects[f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}"]


def _weights() -> dict[str, str]:
    found = _Api.objects.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{WEIGHTS}", {})
    return dict(found.get("data", {}))


def _release(platform: RunningPlatform) -> dict[str, Any]:
    services = platform.get("/api/v1/overview")["services"]
    return next(g["release"] for s in services for g in s["groups"] if g["key"] == MAIN)


def _versions_answering(registry: str, calls: int = 30) -> set[float]:
    """The versions the group's pods answer with, as the SDK's weighted balancing picks
    them (slow_double adds its version times 1000)."""
    with Client(SERVICE, registry, timeout=10) as client:
        return {float(client.infer("slow_double", DOUBLE)["y"][0][0]) // 1000 for _ in range(calls)}


def test_a_release_on_kubernetes_runs_a_canary_deployment_and_promotes_by_rolling(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    slow_double(repository, versions=(1, 2))  # the pods serve 1 (an explicit pin) or the latest
    bytes_echo(repository)
    spec_file = tmp_path / "platform.yaml"
    spec_file.write_text(double_spec(quota_cards=2, main_cards=2))
    state = tmp_path / "state"
    state.mkdir()
    registry = f"embedded://{state.resolve() / 'registry.db'}"
    options = ClusterOptions(registry_url=registry, models_claim="models")
    manifests = render(parse_platform_spec(spec_file.read_text()), options)
    kubelet = Kubelet(tmp_path, repository)
    up = ("--target", "kubernetes", "--registry", registry, "--autoscale", "off", "--kubeconfig")
    with cluster_api(tmp_path, manifests) as kubeconfig, contextlib.closing(kubelet):
        stable = _deployment(STABLE)
        # the group's revision 1: its pods pinned to version 1, as a promotion leaves them
        (container,) = stable["spec"]["template"]["spec"]["containers"]
        container["args"] += ["--model-version", "slow_double=1"]
        kubelet.run(stable)
        with running_platform(spec_file, state, repository, *up, str(kubeconfig)) as platform:
            assert _versions_answering(registry) == {1}

            # a release starts at 0 %: the canary pod may take minutes to come
            started = platform.post(
                f"/api/v1/groups/{MAIN}/release/start", {"model": "slow_double", "version": "2"}
            )
            assert started.status_code == 200, started.text
            canary = _deployment(CANARY)
            args = canary["spec"]["template"]["spec"]["containers"][0]["args"]
            assert args[-8:] == ["--model-version", "slow_double=2", "--weight-file",
                                 f"/etc/modelyard/weights/{CANARY}", "--weight", "0", "--role",
                                 "canary"]  # fmt: skip
            assert args.count("--model-version") == 1  # the stable pin replaced
            assert canary["spec"]["replicas"] == 1
            track = canary["spec"]["selector"]["matchLabels"]["modelyard.io/track"]
            assert track == "canary" == canary["spec"]["template"]["metadata"]["labels"][
                "modelyard.io/track"]  # fmt: skip
            assert _weights() == {CANARY: "0"}
            applied = next(c for c in _Api.calls if CANARY in c[1])
            assert applied[2] == "application/apply-patch+yaml"
            assert "fieldManager=modelyard-control-plane" in applied[1]

            # no step before every canary is in the registry
            early = platform.post(f"/api/v1/groups/{MAIN}/release/step", {"percent": 50})
            assert early.status_code == 400, early.text
            assert (
                "0 of the 1 canary pods of com.example.double/main are in the registry"
                in (early.json()["error"])
            )
            assert "rule=platform/release" in early.json()["error"]

            kubelet.run(canary)
            wait_until(lambda: any(i["role"] == "canary" for i in platform.instances(MAIN)), 30)
            half = platform.post(f"/api/v1/groups/{MAIN}/release/step", {"percent": 50})
            assert half.status_code == 200, half.text
            assert half.json()["numbers"]["new_weight"] == 1.0  # one stable pod, one canary
            assert _weights() == {f"{STABLE}": "1", CANARY: "1"}
            whole = platform.post(f"/api/v1/groups/{MAIN}/release/step", {"percent": 100})
            assert whole.status_code == 200, whole.text
            kubelet.project(_weights())
            # the pods announce the weights they read: only the canary takes calls
            wait_until(
                lambda: (
                    {i["role"]: i["weight"] for i in platform.instances(MAIN)}
                    == {"stable": 0.0, "canary": 1.0}
                ),
                30,
            )
            assert _versions_answering(registry) == {2}

            # promote: the Deployment rolls to version 2, its new pods read a key of the
            # new revision, which nobody wrote (weight 1)
            promoted = platform.post(f"/api/v1/groups/{MAIN}/release/promote", {})
            assert promoted.status_code == 200, promoted.text
            assert promoted.json()["numbers"] == {"group_revision": 2, "promoting": True}
            assert _release(platform)["state"] == "promoting"
            rolled = _deployment(STABLE)["spec"]["template"]["spec"]["containers"][0]["args"]
            assert rolled[rolled.index("--model-version") + 1] == "slow_double=2"
            assert rolled[rolled.index("--weight-file") + 1].endswith(f"/{STABLE}.r2")
            assert "--role" not in rolled and rolled.count("--model-version") == 1
            kubelet.run(_deployment(STABLE))  # the rolling update's new pod

            wait_until(lambda: _release(platform)["state"] == "stable", 30)
            release = _release(platform)
            assert release["versions"] == {"slow_double": "2"}
            assert release["group_revision"] == 2
            deleted = [c for c in _Api.calls if c[0] == "DELETE"]
            assert [c[1].rsplit("/", 1)[1] for c in deleted] == [CANARY]
            assert _weights() == {}  # every key dropped: the new pods weigh 1
            kubelet.stop(CANARY)
            kubelet.project(_weights())
            assert _versions_answering(registry) == {2}
            events = platform.get(f"/api/v1/groups/{MAIN}/events")["events"]
            assert [e["action"] for e in events] == [
                "start", "step", "step", "promote started", "promote"
            ]  # fmt: skip
            assert events[-1]["to"] == {"slow_double": "2"}

            # refused, each with its line
            moved = platform.post(f"/api/v1/groups/{MAIN}/release/move", {"model": "x"})
            assert moved.status_code == 400, moved.text
            assert "the spec does not bind x to com.example.double/main" in moved.json()["error"]
            assert "rule=platform/release" in moved.json()["error"]
            at_once = platform.post(
                f"/api/v1/groups/{MAIN}/release/start",
                {"model": "slow_double", "version": "1", "percent": 50},
            )
            assert at_once.status_code == 400, at_once.text
            assert "on Kubernetes a release starts at 0 %" in at_once.json()["error"]
            del _Api.objects[f"/api/v1/namespaces/{NAMESPACE}/configmaps/{WEIGHTS}"]
            applied = len([c for c in _Api.calls if "apply-patch" in c[2]])
            no_map = platform.post(
                f"/api/v1/groups/{MAIN}/release/start", {"model": "slow_double", "version": "1"}
            )
            assert no_map.status_code == 400, no_map.text
            assert f"the ConfigMap {NAMESPACE}/{WEIGHTS} the pods read" in no_map.json()["error"]
            assert len([c for c in _Api.calls if "apply-patch" in c[2]]) == applied
            assert _release(platform)["state"] == "stable"
