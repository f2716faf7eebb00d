"""Applying a render to a cluster: the server-side applies and the scale patch the
official client sends. No cluster runs here: a recording HTTP server on loopback takes
what the client sends, so the method, path, query, content type and body are checked as
they leave it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from modelyard.control.kubernetes import ClusterOptions, render
from modelyard.control.kubernetes_apply import (
    APPLY_PATCH,
    apply_requests,
    object_path,
    scale_request,
    send,
)
from modelyard.control.spec import parse_platform_spec
from modelyard.errors import ConfigError
from modelyard.governance.auth import hash_secret
from tests.unit.control.test_ledger import BASE

MODELS = ClusterOptions(models_claim="models")  # the model repository's claim

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "platform.yaml"


def test_each_object_is_a_server_side_apply_to_its_own_path_namespaces_first() -> None:
    manifests = render(parse_platform_spec(BASE), MODELS)
    requests = apply_requests(manifests)
    assert len(requests) == len(manifests)
    kinds = [request.body["kind"] for request in requests]
    assert kinds[:2] == ["Namespace", "Namespace"] and "Namespace" not in kinds[2:]
    for request in requests:
        assert request.method == "PATCH" and request.content_type == APPLY_PATCH
        assert dict(request.query) == {"fieldManager": "modelyard", "force": "true"}
        meta = request.body["metadata"]
        assert request.path.endswith("/" + meta["name"])
    paths = {request.body["kind"]: request.path for request in requests}
    quota_ns = next(m["metadata"]["name"] for m in manifests if m["kind"] == "ResourceQuota")
    assert paths["Namespace"].startswith("/api/v1/namespaces/")
    assert paths["StatefulSet"] == "/apis/apps/v1/namespaces/modelyard/statefulsets/etcd"
    assert "/apis/policy/v1/namespaces/" in paths["PodDisruptionBudget"]
    assert (
        paths["ResourceQuota"] == f"/api/v1/namespaces/{paths['ResourceQuota'].split('/')[4]}"
        f"/resourcequotas/{quota_ns}"
    )
    scale = scale_request("team", "ranker-gpu", 5)
    assert scale.path == "/apis/apps/v1/namespaces/team/deployments/ranker-gpu/scale"
    assert scale.body == {"spec": {"replicas": 5}}
    with pytest.raises(Exception, match="no API path is known for kind 'CronJob'"):
        object_path({"kind": "CronJob", "apiVersion": "batch/v1", "metadata": {"name": "x"}})


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []
    status = 200

    def do_PATCH(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append({"path": self.path, "type": self.headers["Content-Type"],
                          "body": json.loads(body)})  # fmt: skip
        reply = json.dumps({"kind": "Status", "status": "Success"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.seen, _Recorder.status = [], 200
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_official_client_sends_each_apply_as_built(
    recorder: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = recorder
    configuration = k8s.Configuration(host=url)
    configuration.api_key = {"authorization": "token"}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    requests = apply_requests(render(parse_platform_spec(BASE), MODELS))
    with k8s.ApiClient(configuration) as api:
        lines = send(api, [*requests, scale_request("team", "ranker", 2)])
    assert len(lines) == len(seen) == len(requests) + 1
    for request, got in zip(requests, seen, strict=False):
        assert got["path"] == f"{request.path}?fieldManager=modelyard&force=true"
        assert got["type"] == APPLY_PATCH
        assert got["body"] == request.body
    assert seen[-1]["type"] == "application/merge-patch+json"
    assert seen[-1]["body"] == {"spec": {"replicas": 2}}


def test_platform_apply_to_kubernetes_dry_run_prints_what_it_would_send(tmp_path: Path) -> None:
    service_file = tmp_path / "service.yaml"
    service_file.write_text(
        "service: com.example.search.ranker\nlimits:\n  infer: {cluster_qps: 100}\n"
    )
    keys = tmp_path / "keys.yaml"  # auth: a Secret, for the instances and the control plane
    keys.write_text(
        "service: com.example.search.ranker.keys\nauth:\n  enabled: true\n  principals:\n"
        f"    ops: {{api_keys: ['{hash_secret('ops-key')}'], allow: {{admin: ['*']}}}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", "apply", "--target",
         "kubernetes", "-f", str(EXAMPLE), "--dry-run", "--models-claim", "models",
         "--service-file", str(service_file), "--control-auth-file", str(keys)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PATCH /api/v1/namespaces/modelyard?fieldManager=modelyard")
    assert all(line.startswith("PATCH /") and APPLY_PATCH in line for line in lines)
    assert any("/deployments/" in line for line in lines)
    assert any("/configmaps/" in line for line in lines)  # the service file
    assert any("/secrets/control-plane-auth?" in line for line in lines)
    assert any("/persistentvolumeclaims/control-plane-state?" in line for line in lines)
    assert any(line.startswith("PATCH /apis/apps/v1/namespaces/modelyard/deployments/redis?")
               for line in lines)  # its cluster limits need Redis  # fmt: skip


def test_a_refusal_stops_the_apply_with_the_cluster_s_status(
    recorder: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = recorder
    _Recorder.status = 403
    requests = apply_requests(render(parse_platform_spec(BASE), MODELS))
    with k8s.ApiClient(k8s.Configuration(host=url)) as api, pytest.raises(ConfigError) as refused:
        send(api, requests)
    assert len(seen) == 1  # nothing after the first refusal
    line = refused.value.line()
    assert f"the cluster refused PATCH {requests[0].path}: 403" in line
    assert "rule=platform/kubernetes-apply" in line


def test_the_control_planes_access_is_applied_to_its_own_paths() -> None:
    manifests = render(parse_platform_spec(BASE), ClusterOptions(models_claim="m", spec_text=BASE))
    paths = [request.path for request in apply_requests(manifests)]
    assert "/api/v1/namespaces/modelyard/serviceaccounts/control-plane" in paths
    roles = [p for p in paths if "/roles/" in p]
    assert roles and all(
        p.startswith("/apis/rbac.authorization.k8s.io/v1/namespaces/") for p in roles
    )
    assert any("/rolebindings/modelyard-control-plane" in p for p in paths)
