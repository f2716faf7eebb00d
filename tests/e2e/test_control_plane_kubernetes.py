"""`platform up --target kubernetes`: the control plane beside a rendered platform.

No cluster runs here. A recording Kubernetes API on loopback (reached through a
kubeconfig, as outside a pod) answers the scale patches the official client sends,
and an instance the test starts stands for the group's pod: it registers itself as
a rendered pod does. Under load, the control plane finds it in the registry, decides
as on one machine, and patches the group's Deployment's scale within the quota.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from modelyard.control.apply import State
from modelyard.control.kubernetes import ClusterOptions, deployment_name, quota_namespace
from tests.e2e.test_control_plane import SPEC, under_load
from tests.support.models import bytes_echo, slow_double
from tests.support.platform import SERVICE, running_platform
from tests.support.servers import running_server, wait_until

MAIN = f"{SERVICE}/main"


class _KubernetesApi(BaseHTTPRequestHandler):
    """Takes scale patches and answers with the Scale they make."""

    patches: list[dict[str, Any]] = []

    def do_PATCH(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.patches.append({"path": self.path, "type": self.headers["Content-Type"], "body": body})
        reply = json.dumps(
            {"kind": "Scale", "apiVersion": "autoscaling/v1", "spec": body.get("spec", {})}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def kubernetes_api(directory: Path) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """A kubeconfig naming the recording API, and the patches it took."""
    _KubernetesApi.patches = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KubernetesApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
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
        yield kubeconfig, _KubernetesApi.patches
    finally:
        server.shutdown()
        server.server_close()


def test_on_kubernetes_the_control_plane_scales_the_groups_deployment_within_quota(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    slow_double(repository, delay=0.2)
    bytes_echo(repository)
    spec = tmp_path / "platform.yaml"
    spec.write_text(SPEC)
    state = tmp_path / "state"
    state.mkdir()
    registry = f"embedded://{state.resolve() / 'registry.db'}"
    pod = ("--service", SERVICE, "--group", "main", "--registry", registry, "--data-center", "dc1",
           "--spec", "1C/1G/A30-24G*1")  # fmt: skip
    with (
        kubernetes_api(tmp_path) as (kubeconfig, patches),
        running_server(repository, tmp_path, *pod) as instance,
        running_platform(
            spec, state, repository, "--target", "kubernetes", "--registry", registry,
            "--kubeconfig", str(kubeconfig), "--autoscale-every", "1",
        ) as platform,
    ):  # fmt: skip
        overview = platform.get("/api/v1/overview")
        assert overview["target"] == "kubernetes"
        assert [i["http"] for i in platform.instances(MAIN)] == [instance.http_url]
        assert State.load(state).instances == []  # the cluster runs the pods, not this

        namespace = quota_namespace(ClusterOptions(), "q")
        path = (
            f"/apis/apps/v1/namespaces/{namespace}/deployments/"
            f"{deployment_name(SERVICE, 'main', 't', 'dc1')}/scale"
        )
        # the render leaves an autoscaling group's replicas to the control plane: at its
        # start it set them to the spec's
        assert patches[0]["path"].startswith(path)
        assert patches[0]["body"] == {"spec": {"replicas": 1}}
        assert patches[0]["type"] == "application/merge-patch+json"
        assert "fieldManager=modelyard" in patches[0]["path"]

        # 12 callers on a 0.2 s model: want 6 replicas, the quota holds 2 cards
        def scaled_to(replicas: int) -> bool:
            return any(p["body"] == {"spec": {"replicas": replicas}} for p in patches[1:])

        with under_load(f"http://{instance.http_url}") as errors:
            wait_until(lambda: scaled_to(2), timeout=60)
        assert errors == []
        assert not scaled_to(3)  # the quota's 2 cards held it
        assert all(p["path"].startswith(path) for p in patches)  # the light group has no rule
        events = platform.get(f"/api/v1/groups/{MAIN}/events")["events"]
        assert next(e["to"] for e in events if e["action"] == "autoscale") == {"replicas": 2}
        ledger = platform.get("/api/v1/ledger")
        assert ledger["cards_by_group"][MAIN] == 2  # the ledger holds the decision
        # what runs is what the registry lists: the one pod the test started
        assert ledger["running_by_group"][MAIN] == {"instances": 1, "gpu_instances": 1, "cards": 1}

        # disaster recovery: losing dc1, the only data centre, loses the group, and what is
        # left holds none of the peak the autoscaler saw
        dr = platform.get("/api/v1/dr?lose=dc1")
        assert dr["whole"] is False
        (main,) = [g for g in dr["groups"] if g["group"] == "main"]
        assert main["state"] == "lost" and main["in_flight_held_after"] == 0
        assert main["observed_peak_in_flight"] > 2 and main["holds_peak"] is False
        for query, text in (
            ("", "say which data centre or queue is lost"),
            ("?lose=dc9", "'dc9' is neither a data centre nor a queue of the spec"),
            ("?lose=dc1&group=com.example.double/nope", "no group com.example.double/nope"),
        ):
            answer = httpx.get(f"{platform.control}/api/v1/dr{query}", timeout=10)
            assert answer.status_code == 400 and text in answer.json()["error"], answer.text
            assert "rule=platform/dr" in answer.json()["error"]

        refused = httpx.post(
            f"{platform.control}/api/v1/groups/{MAIN}/release/start",
            json={"model": "slow_double", "version": "1"},
            timeout=10,
        )
        assert refused.status_code == 501, refused.text
        assert (
            "releases on Kubernetes are not made by the control plane yet"
            in (refused.json()["error"])
        )
