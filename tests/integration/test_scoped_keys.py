"""A key scoped to one model, against a real server: what it may list, load and reach.

Over HTTP and gRPC alike: listings show only its models, a load whose config reaches
another model is refused, and a failed load answers an error with no path in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from modelyard.governance.auth import hash_secret
from tests.support.models import ENSEMBLE_OVER_OTHER, XY_TENSORS, slow_double, times_ten
from tests.support.servers import Served, ServerProcess, running_server, server_in_process

SCOPED_KEY = "scoped-key-1"
OPS_KEY = "ops-key-1"

SERVICE = f"""\
service: com.example.test.scoped
auth:
  enabled: true
  principals:
    scoped:
      api_keys: ["{hash_secret(SCOPED_KEY)}"]
      allow: {{admin: ["slow_double"], infer: ["slow_double"], metadata: ["slow_double"]}}
    ops:
      api_keys: ["{hash_secret(OPS_KEY)}"]
      allow: {{admin: ["*"], infer: ["*"], metadata: ["*"]}}
"""

BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
ABSOLUTE = re.compile(r"(?<![\w.])/(?:tmp|home|root|work|private|var)/")


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    root = tmp_path_factory.mktemp("scoped")
    repository = root / "models"
    slow_double(repository)
    times_ten(repository, "other")
    times_ten(repository, "alias")
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
        yield server, root


def post(server: Served, path: str, body: object, key: str) -> httpx.Response:
    return httpx.post(f"http://{server.http_url}{path}", json=body, headers={"x-api-key": key})


def load_body(config: dict[str, Any]) -> dict[str, Any]:
    return {"parameters": {"config": json.dumps(config)}}


def test_a_scoped_key_lists_only_its_models(scoped: tuple[ServerProcess, Path]) -> None:
    server, _ = scoped
    url = f"http://{server.http_url}"

    def stats(key: str) -> set[str]:
        response = httpx.get(f"{url}/v2/models/stats", headers={"x-api-key": key})
        assert response.status_code == 200
        return {s["name"] for s in response.json()["model_stats"]}

    def index(key: str) -> set[str]:
        response = post(server, "/v2/repository/index", {}, key)
        assert response.status_code == 200
        return {row["name"] for row in response.json()}

    assert stats(SCOPED_KEY) == index(SCOPED_KEY) == {"slow_double"}
    assert stats(OPS_KEY) == index(OPS_KEY) == {"slow_double", "other", "alias"}

    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        for key, names in (
            (SCOPED_KEY, {"slow_double"}),
            (OPS_KEY, {"slow_double", "other", "alias"}),
        ):
            headers = {"x-api-key": key}
            statistics = client.get_inference_statistics("", headers=headers, as_json=True)
            assert {s["name"] for s in statistics["model_stats"]} == names
            rows = client.get_model_repository_index(headers=headers, as_json=True)["models"]
            assert {row["name"] for row in rows} == names


def test_a_load_that_reaches_a_model_the_key_may_not_use_is_refused(
    scoped: tuple[ServerProcess, Path],
) -> None:
    server, _ = scoped
    refused = post(
        server,
        "/v2/repository/models/slow_double/load",
        load_body(ENSEMBLE_OVER_OTHER),
        SCOPED_KEY,
    )
    assert refused.status_code == 403
    line = refused.json()["error"]
    assert line.startswith(
        "[governance] request rejected: principal 'scoped' may not call interface infer "
        "for model 'other', which the config of 'slow_double' reaches as an ensemble step"
    )
    assert "; rule=auth/permission; change: auth.principals.scoped.allow.infer in " in line

    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        with pytest.raises(InferenceServerException) as grpc_refused:
            client.load_model(
                "slow_double",
                headers={"x-api-key": SCOPED_KEY},
                config=json.dumps(ENSEMBLE_OVER_OTHER),
            )
        assert grpc_refused.value.status() == "StatusCode.PERMISSION_DENIED"
        assert "for model 'other'" in grpc_refused.value.message()

    # slow_double is what it was, and the key still reads only slow_double's own outputs
    answer = post(server, "/v2/models/slow_double/infer", BODY, SCOPED_KEY)
    assert answer.status_code == 200
    assert answer.json()["outputs"][0]["data"] == [1002.0, 1004.0]

    # a key that may use the step loads the same config
    ok = post(server, "/v2/repository/models/alias/load", load_body(ENSEMBLE_OVER_OTHER), OPS_KEY)
    assert ok.status_code == 200, ok.text
    through = post(server, "/v2/models/alias/infer", BODY, OPS_KEY)
    assert through.json()["outputs"][0]["data"] == [10.0, 20.0]


def test_a_failed_load_is_an_error_without_paths_and_the_old_version_serves_on(
    scoped: tuple[ServerProcess, Path],
) -> None:
    server, root = scoped
    pickle = {"backend": "python", "default_model_filename": "model.pkl", **XY_TENSORS}
    failed = post(server, "/v2/repository/models/slow_double/load", load_body(pickle), OPS_KEY)
    assert failed.status_code == 400
    line = failed.json()["error"]
    assert line.startswith(
        "load failed for model 'slow_double': version 1 is at UNAVAILABLE state: Invalid "
        "argument: "
    )
    assert "no model file model.pkl in slow_double/1" in line
    assert str(root) not in line and not ABSOLUTE.search(line), line
    assert str(root) in server.log()  # the log keeps the whole path

    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        with pytest.raises(InferenceServerException) as grpc_failed:
            client.load_model(
                "slow_double", headers={"x-api-key": OPS_KEY}, config=json.dumps(pickle)
            )
        assert grpc_failed.value.status() == "StatusCode.INVALID_ARGUMENT"
        assert not ABSOLUTE.search(grpc_failed.value.message())

    answer = post(server, "/v2/models/slow_double/infer", BODY, OPS_KEY)
    assert answer.json()["outputs"][0]["data"] == [1002.0, 1004.0]
    rows = post(server, "/v2/repository/index", {}, OPS_KEY).json()
    (row,) = [r for r in rows if r["name"] == "slow_double"]
    assert row["state"] == "READY"
    assert "the last load failed: failed to load 'slow_double' version 1: " in row["reason"]
    assert not ABSOLUTE.search(json.dumps(rows))


BLS_CALLER = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            answer = pb_utils.InferenceRequest(
                model_name="slow_double", requested_output_names=["y"],
                inputs=[pb_utils.Tensor("x", x)],
            ).exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            y = pb_utils.get_output_tensor_by_name(answer, "y").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("y", y)]))
        return responses
"""

BLS_SERVICE = f"""\
service: com.example.test.bls
auth:
  enabled: true
  principals:
    scoped:
      api_keys: ["{hash_secret(SCOPED_KEY)}"]
      allow: {{infer: ["caller"]}}
    ops:
      api_keys: ["{hash_secret(OPS_KEY)}"]
      allow: {{infer: ["caller", "slow_double"]}}
"""


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_model_s_own_calls_reach_only_what_its_caller_may_use(
    tmp_path: Path, protocol: str
) -> None:
    """Triton's BLS under auth: a python model's call to another model is made for the
    principals of the requests it executes, and refused for one that may not infer on it."""
    from tests.support.models import write_python_model

    repository = tmp_path / "models"
    slow_double(repository)
    config = """
        backend: "python"
        max_batch_size: 16
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
        """
    write_python_model(repository, "caller", BLS_CALLER, config)
    service_file = tmp_path / "service.yaml"
    service_file.write_text(BLS_SERVICE)
    with server_in_process(repository, "--service-config", str(service_file)) as server:
        for _ in range(2):  # the second time through the HTTP lane the first one kept
            if protocol == "http":
                allowed = post(server, "/v2/models/caller/infer", BODY, OPS_KEY)
                assert allowed.status_code == 200, allowed.text
                assert allowed.json()["outputs"][0]["data"] == [1002.0, 1004.0]
                refused = post(server, "/v2/models/caller/infer", BODY, SCOPED_KEY)
                assert refused.status_code == 500
                line = refused.json()["error"]
            else:
                client = grpcclient.InferenceServerClient(server.grpc_url)
                try:
                    item = grpcclient.InferInput("x", [1, 2], "FP32")
                    item.set_data_from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
                    result = client.infer("caller", [item], headers={"x-api-key": OPS_KEY})
                    assert result.as_numpy("y").tolist() == [[1002.0, 1004.0]]
                    with pytest.raises(InferenceServerException) as failed:
                        client.infer("caller", [item], headers={"x-api-key": SCOPED_KEY})
                    line = failed.value.message()
                finally:
                    client.close()
            assert "principal 'scoped' may not call interface infer for model 'slow_double'" in (
                line
            )
            assert "calls from its own code (BLS)" in line
