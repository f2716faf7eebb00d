"""`platform up --target kubernetes`: the control plane beside a rendered platform.

No cluster runs here. A recording Kubernetes API on loopback (reached through a
kubeconfig, as outside a pod) answers the scale patches the official client sends,
and an instance the test starts stands for the group's pod: it registers itself as
a rendered pod does. Under load, the control plane finds it in the registry, decides
as on one machine, and patches the group's Deployment's scale within the quota.
"""

from __future__ import annotations

import json
import subprocess
import sys
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
    """Deployments' scale: read (a Deployment made without replicas holds 1) and patched."""

    patches: list[dict[str, Any]] = []
    reads: list[str] = []
    replicas: dict[str, int] = {}

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        self.reads.append(path)
        self._reply(self.replicas.get(path, 1))

    def do_PATCH(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.patches.append({"path": self.path, "type": self.headers["Content-Type"], "body": body})
        self.replicas[self.path.partition("?")[0]] = body["spec"]["replicas"]
        self._reply(body["spec"]["replicas"])

    def _reply(self, replicas: int) -> None:
        reply = json.dumps(
            {"kind": "Scale", "apiVersion": "autoscaling/v1", "spec": {"replicas": replicas}}
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
    _KubernetesApi.patches, _KubernetesApi.reads, _KubernetesApi.replicas = [], [], {}
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
    path = (
        f"/apis/apps/v1/namespaces/{quota_namespace(ClusterOptions(), 'q')}/deployments/"
        f"{deployment_name(SERVICE, 'main', 't', 'dc1')}/scale"
    )
    up = ("--target", "kubernetes", "--registry", registry, "--kubeconfig")
    with (
        kubernetes_api(tmp_path) as (kubeconfig, patches),
        running_server(repository, tmp_path, *pod) as instance,
    ):
        with running_platform(
            spec, state, repository, *up, str(kubeconfig), "--autoscale-every", "1"
        ) as platform:
            overview = platform.get("/api/v1/overview")
            assert overview["target"] == "kubernetes"
            (pod_row,) = platform.instances(MAIN)
            assert pod_row["http"] == instance.http_url and pod_row["alive"]
            assert pod_row["spec"] == "1C/1G/A30-24G*1" and pod_row["data_center"] == "dc1"
            assert State.load(state).instances == []  # the cluster runs the pods, not this
            # at its start it read the Deployment's scale (1, the rule's min): nothing to set
            assert _KubernetesApi.reads == [path] and patches == []

            # 12 callers on a 0.2 s model: want 6 replicas, the quota's cores hold 2
            def scaled_to(replicas: int) -> bool:
                return any(p["body"] == {"spec": {"replicas": replicas}} for p in patches)

            with under_load(f"http://{instance.http_url}") as errors:
                wait_until(lambda: scaled_to(2), timeout=60)
            assert errors == []
            assert not scaled_to(3)  # the quota's cores held it
            assert all(p["path"].startswith(path) for p in patches)  # light has no rule
            assert patches[0]["type"] == "application/merge-patch+json"
            assert "fieldManager=modelyard-control-plane" in patches[0]["path"]
            events = platform.get(f"/api/v1/groups/{MAIN}/events")["events"]
            assert next(e["to"] for e in events if e["action"] == "autoscale") == {"replicas": 2}
            ledger = platform.get("/api/v1/ledger")
            assert ledger["cards_by_group"][MAIN] == 2  # the ledger holds the decision
            # what runs is what the registry lists: the one pod the test started
            running = ledger["running_by_group"][MAIN]
            assert running == {"instances": 1, "gpu_instances": 1, "cards": 1}

            # disaster recovery: losing dc1, the only data centre, loses the group's two
            # replicas, and what is left holds none of the peak the autoscaler saw
            dr = platform.get("/api/v1/dr?lose=dc1")
            assert dr["whole"] is False
            (main,) = [g for g in dr["groups"] if g["group"] == "main"]
            assert main["state"] == "lost" and main["lost_instances"] == 2
            assert main["in_flight_held_after"] == 0 and main["holds_peak"] is False
            assert main["observed_peak_in_flight"] > 2
            assert [p["lose"] for p in platform.get("/api/v1/dr")["places"]] == ["dc1"]
            for query, text in (
                ("?lose=dc9", "'dc9' is neither a data centre nor a queue of the spec"),
                ("?lose=dc1&group=com.example.double/nope", "no group com.example.double/nope"),
            ):
                answer = httpx.get(f"{platform.control}/api/v1/dr{query}", timeout=10)
                assert answer.status_code == 400 and text in answer.json()["error"], answer.text
                assert "rule=platform/dr" in answer.json()["error"]

            # declared lost, dc1's Deployments hold none (no data centre survives to take
            # them); restored, each holds what it held. Autoscaling decisions are held
            # meanwhile, so the last patches before the restore are the fail-over's and the
            # first after it the restore's
            light = path.replace(deployment_name(SERVICE, "main", "t", "dc1"),
                                 deployment_name(SERVICE, "light", "cpu", "dc1"))  # fmt: skip
            lost = httpx.post(f"{platform.control}/api/v1/dr/fail-over", json={"lose": "dc1"},
                              timeout=30)  # fmt: skip
            assert lost.status_code == 200, lost.text
            assert list(lost.json()["lost"]) == ["dc1"]
            before = len(patches)
            last = {p["path"].partition("?")[0]: p["body"] for p in patches}
            zero = {"spec": {"replicas": 0}}
            assert last[path] == zero and last[light] == zero
            events = platform.get(f"/api/v1/groups/{MAIN}/events")["events"]
            assert events[-1]["action"] == "dr fail-over"
            assert events[-1]["numbers"]["replicas"] == {"t/dc1": 0}
            back = httpx.post(f"{platform.control}/api/v1/dr/restore", json={"place": "dc1"},
                              timeout=30)  # fmt: skip
            assert back.status_code == 200, back.text
            assert back.json()["lost"] == {}
            first = {p["path"].partition("?")[0]: p["body"] for p in reversed(patches[before:])}
            restored = next(
                e for e in reversed(platform.get(f"/api/v1/groups/{MAIN}/events")["events"])
                if e["action"] == "dr restore"
            )  # fmt: skip
            replicas = restored["numbers"]["replicas"]["t/dc1"]
            assert replicas in (1, 2)  # the autoscaler's: 2 under the load, 1 once it ended
            assert first[path] == {"spec": {"replicas": replicas}}
            assert first[light] == {"spec": {"replicas": 1}}

        # a control plane that restarts keeps no state: it adopts the cluster's 2 replicas
        fresh = tmp_path / "fresh-state"
        fresh.mkdir()
        patched = len(patches)
        with running_platform(
            spec, fresh, repository, *up, str(kubeconfig), "--autoscale", "off"
        ) as again:
            assert len(patches) == patched  # nothing set back to the spec's 1
            assert again.get("/api/v1/ledger")["cards_by_group"][MAIN] == 2


def test_on_kubernetes_without_the_cluster_s_registry_the_control_plane_says_where(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "platform.yaml"
    spec.write_text(SPEC)
    done = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", "up", "-f", str(spec),
         "--state", str(tmp_path / "state"), "--target", "kubernetes", "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "rule=platform/kubernetes" in done.stdout
    assert "--target kubernetes --registry etcd://HOST:2379" in done.stdout
