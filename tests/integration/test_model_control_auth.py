"""A python model that loads another (pb_utils.load_model) on a server with auth on: the
load is for the principals of the request the model executes, so a key allowed only to
infer cannot load a model through it, and a key that may administer that model can."""

from __future__ import annotations

from pathlib import Path

import httpx

from modelyard.governance.auth import hash_secret
from tests.support.models import slow_double, write_python_model
from tests.support.servers import server_in_process

INFER_KEY = "infer-key-1"
ADMIN_KEY = "admin-key-1"

LOADER = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        pb_utils.load_model("slow_double")
        ready = pb_utils.is_model_ready("slow_double")
        return [pb_utils.InferenceResponse([pb_utils.Tensor("y", np.array([ready]))])
                for _ in requests]
"""

SERVICE = f"""\
service: com.example.test.loader
auth:
  enabled: true
  principals:
    user:
      api_keys: ["{hash_secret(INFER_KEY)}"]
      allow: {{infer: ["loader"]}}
    ops:
      api_keys: ["{hash_secret(ADMIN_KEY)}"]
      allow: {{infer: ["loader"], admin: ["slow_double"], health: ["slow_double"]}}
"""

BODY = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1.0]}]}


def test_a_model_s_load_is_for_its_caller_who_must_administer_the_model(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    write_python_model(repository, "loader", LOADER, """
        backend: "python"
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 1 ] }]
        output [{ name: "y" data_type: TYPE_BOOL dims: [ 1 ] }]
        """)  # fmt: skip
    service_file = tmp_path / "service.yaml"
    service_file.write_text(SERVICE)
    flags = ("--service-config", str(service_file), "--model-control-mode", "explicit",
             "--load-model", "loader")  # fmt: skip
    with server_in_process(repository, *flags) as server:
        url = f"http://{server.http_url}/v2/models/loader/infer"
        refused = httpx.post(url, json=BODY, headers={"x-api-key": INFER_KEY}, timeout=30)
        assert refused.status_code == 500, refused.text
        line = refused.json()["error"]
        # the model raises load_model's error: Triton's stub words the exception, then
        # python_backend's words for the refused load, then the governance line
        assert line.startswith("Failed to process the request(s) for model 'loader_0', "
                               "message: TritonModelException: Failed to load model: Failed "
                               "to process the request for model 'loader_0', message: "
                               "[governance] ")  # fmt: skip
        assert "principal 'user' may not call interface admin for model 'slow_double'" in line
        assert "slow_double" not in str(server.manager.index(ready_only=True))
        allowed = httpx.post(url, json=BODY, headers={"x-api-key": ADMIN_KEY}, timeout=30)
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["outputs"][0]["data"] == [True]
