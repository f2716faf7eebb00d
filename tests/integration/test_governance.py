"""The guard chain in a real server: auth matrix, limits, breakers, reloads."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from modelyard.governance.auth import hash_secret
from tests.support.models import failing, slow_double, write_python_model
from tests.support.servers import ServerProcess, running_server, wait_until

READER_KEY = "reader-key-1"
ADMIN_KEY = "admin-key-1"
OTHER_KEY = "other-key-1"

ZEROS = """
import numpy as np


class Model:
    def execute(self, inputs):
        return {"y": np.zeros_like(inputs["x"])}
"""

SERVICE = f"""\
service: com.example.test.doubler
auth:
  enabled: true
  principals:
    reader:
      api_keys: ["{hash_secret(READER_KEY)}"]
      allow: {{infer: ["slow_*", "failing"], metadata: ["*"]}}
    other:
      api_keys: ["{hash_secret(OTHER_KEY)}"]
      allow: {{infer: ["failing"]}}
    ops:
      api_keys: ["{hash_secret(ADMIN_KEY)}"]
      allow: {{admin: ["*"], infer: ["*"], metadata: ["*"]}}
limits:
  infer:
    instance_qps: 20
    burst_seconds: 1
breakers:
  failing-errors:
    interface: infer
    model: failing
    kind: error_count
    threshold: 3
    min_requests: 3
    window_s: 30
    recovery_s: 60
    fallback: {{model: zeros}}
"""

BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
FAILING_BODY = {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1.0]}]}


@pytest.fixture(scope="module")
def governed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    root = tmp_path_factory.mktemp("governed")
    repository = root / "models"
    slow_double(repository)
    failing(repository)
    write_python_model(
        repository,
        "zeros",
        ZEROS,
        """
        backend: "python"
        max_batch_size: 4
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 1 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 1 ] }]
        """,
    )
    service_file = root / "service.yaml"
    service_file.write_text(SERVICE)
    with running_server(
        repository,
        root,
        "--model-control-mode",
        "explicit",
        "--load-model",
        "*",
        "--service-config",
        str(service_file),
    ) as server:
        yield server, service_file


def post(server: ServerProcess, path: str, body: object, key: str | None) -> httpx.Response:
    headers = {"x-api-key": key} if key else {}
    return httpx.post(f"http://{server.http_url}{path}", json=body, headers=headers)


AUTH_MATRIX = [
    ("no key", None, "/v2/models/slow_double/infer", BODY, 401, "no credentials"),
    ("bad key", "wrong", "/v2/models/slow_double/infer", BODY, 401, "unknown API key"),
    (
        "key without that model",
        OTHER_KEY,
        "/v2/models/slow_double/infer",
        BODY,
        403,
        "principal 'other' may not call interface infer for model 'slow_double'",
    ),
    (
        "admin operation without admin",
        READER_KEY,
        "/v2/repository/models/slow_double/unload",
        {},
        403,
        "principal 'reader' may not call interface admin",
    ),
]


@pytest.mark.parametrize(
    ("key", "path", "body", "status", "fragment"),
    [case[1:] for case in AUTH_MATRIX],
    ids=[case[0] for case in AUTH_MATRIX],
)
def test_auth_matrix(
    governed: tuple[ServerProcess, Path],
    key: str | None,
    path: str,
    body: object,
    status: int,
    fragment: str,
) -> None:
    server, _ = governed
    time.sleep(0.1)  # keep clear of the instance limit
    response = post(server, path, body, key)
    assert response.status_code == status
    line = response.json()["error"]
    assert line.startswith("[governance] request rejected: ")
    assert fragment in line
    assert "; rule=auth/" in line and "; change: " in line


def test_the_right_key_passes_and_admin_may_administer(
    governed: tuple[ServerProcess, Path],
) -> None:
    server, _ = governed
    time.sleep(0.1)
    ok = post(server, "/v2/models/slow_double/infer", BODY, READER_KEY)
    assert ok.status_code == 200
    assert ok.json()["outputs"][0]["data"] == [1002.0, 1004.0]
    index = post(server, "/v2/repository/index", {}, ADMIN_KEY)
    assert index.status_code == 200
    assert httpx.get(f"http://{server.http_url}/v2/health/ready").status_code == 200


def test_grpc_applies_the_same_auth(governed: tuple[ServerProcess, Path]) -> None:
    server, _ = governed
    client = grpcclient.InferenceServerClient(server.grpc_url)
    x = grpcclient.InferInput("x", [1, 2], "FP32")
    x.set_data_from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
    with pytest.raises(InferenceServerException) as refused:
        client.infer("slow_double", [x], headers={"x-api-key": OTHER_KEY})
    assert refused.value.status() == "StatusCode.PERMISSION_DENIED"
    assert "principal 'other' may not call interface infer" in refused.value.message()
    time.sleep(0.1)
    result = client.infer("slow_double", [x], headers={"x-api-key": READER_KEY})
    assert result.as_numpy("y").tolist() == [[1002.0, 1004.0]]


def test_instance_limit_rejects_with_429_headers_and_the_classic_fields(
    governed: tuple[ServerProcess, Path],
) -> None:
    server, _ = governed
    time.sleep(1.2)  # a full bucket
    statuses = []
    rejected = None
    with httpx.Client() as client:
        for _ in range(60):
            response = client.post(
                f"http://{server.http_url}/v2/models/slow_double/infer",
                json=BODY,
                headers={"x-api-key": READER_KEY},
            )
            statuses.append(response.status_code)
            if response.status_code == 429:
                rejected = response
    assert 15 <= statuses.count(200) <= 30  # 20/s burst plus what refills meanwhile
    assert rejected is not None
    line = rejected.json()["error"]
    assert "instance-qps" in line and "over limit 20/s for interface infer" in line
    assert "(strategy: instance-qps, code: 429, msg: the current limit has been reached)" in line
    assert "rule=ratelimit/instance-qps" in line
    assert "change: limits.infer.instance_qps in service.yaml" in line
    assert int(rejected.headers["retry-after"]) >= 1
    assert rejected.headers["ratelimit-limit"] == "20"
    assert rejected.headers["ratelimit-remaining"] == "0"
    assert rejected.headers["x-request-id"]
    assert "Request is Degraded" in server.log()


def test_grpc_rate_limit_is_resource_exhausted_with_trailing_metadata(
    governed: tuple[ServerProcess, Path],
) -> None:
    server, _ = governed
    time.sleep(1.2)
    from tritonclient.grpc import service_pb2 as pb
    from tritonclient.grpc import service_pb2_grpc

    channel = grpc.insecure_channel(server.grpc_url)
    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
    request = pb.ModelInferRequest(model_name="slow_double")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[1, 2])
    tensor.contents.fp32_contents.extend([1.0, 2.0])
    error = None
    for _ in range(60):
        try:
            stub.ModelInfer(request, metadata=[("x-api-key", READER_KEY)])
        except grpc.RpcError as exc:
            error = exc
            break
    channel.close()
    assert error is not None
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "strategy: instance-qps, code: 429" in error.details()
    trailing = dict(error.trailing_metadata() or ())
    assert trailing["ratelimit-limit"] == "20"
    assert int(trailing["retry-after"]) >= 1


def test_breaker_opens_and_degrades_to_the_fallback_model(
    governed: tuple[ServerProcess, Path],
) -> None:
    server, _ = governed
    time.sleep(1.2)
    errors = []
    for _ in range(3):
        response = post(server, "/v2/models/failing/infer", FAILING_BODY, READER_KEY)
        errors.append(response.status_code)
    assert errors == [500, 500, 500]
    degraded = post(server, "/v2/models/failing/infer", FAILING_BODY, READER_KEY)
    assert degraded.status_code == 200
    doc = degraded.json()
    assert doc["parameters"] == {"degraded": True, "degraded_rule": "breaker/failing-errors"}
    assert doc["outputs"][0]["data"] == [0.0]
    assert "breaker_state_changed" in server.log()


def test_rules_command_prints_each_rule_with_file_and_line(
    governed: tuple[ServerProcess, Path],
) -> None:
    server, _ = governed
    denied = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "rules", "--url", server.http_url,
         "--api-key", READER_KEY],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert denied.returncode == 1
    assert "may not call interface admin" in denied.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "rules", "--url", server.http_url,
         "--api-key", ADMIN_KEY],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "service com.example.test.doubler" in shown.stdout
    assert re.search(r"limits\.infer\.instance_qps\s+20\s+\[service\.yaml:16\]", shown.stdout)
    assert re.search(r"breakers\.failing-errors\s+\{.*\}\s+\[service\.yaml:19\]", shown.stdout)


def test_reload_applies_a_valid_change_and_refuses_an_invalid_one(
    governed: tuple[ServerProcess, Path],
) -> None:
    server, service_file = governed

    def limit() -> object:
        doc = httpx.get(
            f"http://{server.http_url}/v2/modelyard/rules", headers={"x-api-key": ADMIN_KEY}
        ).json()
        return next(r["value"] for r in doc["rules"] if r["rule"] == "limits.infer.instance_qps")

    service_file.write_text(SERVICE.replace("instance_qps: 20", "instance_qps: 25"))
    wait_until(lambda: limit() == 25, timeout=10)
    service_file.write_text(SERVICE.replace("instance_qps: 20", "instance_qps: -5"))
    wait_until(lambda: "service_config_rejected" in server.log(), timeout=10)
    assert limit() == 25
    log = server.log()
    assert "service.yaml:16" in log and "must be a positive number" in log
    service_file.write_text(SERVICE)
    wait_until(lambda: limit() == 20, timeout=10)


def test_a_loud_warning_when_listening_beyond_loopback_without_auth(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    open_service = tmp_path / "service.yaml"
    open_service.write_text(textwrap.dedent("service: com.example.test.open\n"))
    with running_server(
        repository, tmp_path, "--host", "0.0.0.0", "--service-config", str(open_service)
    ) as server:
        wait_until(lambda: "listening_beyond_loopback_without_auth" in server.log(), timeout=10)
