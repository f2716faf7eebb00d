"""A service's own interface in a real server: its limit holds the calls to its models over
HTTP (the kept lane and the general path) and gRPC, its name is in the error line, the
counters and the metrics, and a model outside it is not held."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.support.models import bytes_echo, slow_double
from tests.support.servers import scrape, server_in_process

SERVICE = """\
service: com.example.test.declared
interfaces:
  doubling: {models: ["slow_*"]}
limits:
  doubling:
    instance_qps: 2
    burst_seconds: 1
"""

DOUBLE = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
TEXT = {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["a"]}]}


def test_a_declared_interface_s_limit_holds_its_models_and_names_itself(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    bytes_echo(repository)
    service_file = tmp_path / "service.yaml"
    service_file.write_text(SERVICE)
    with server_in_process(repository, "--service-config", str(service_file)) as server:
        base = f"http://{server.http_url}/v2/models"
        with httpx.Client() as client:
            answers = [client.post(f"{base}/slow_double/infer", json=DOUBLE) for _ in range(6)]
            statuses = [a.status_code for a in answers]
            assert 200 in statuses and 429 in statuses, statuses
            line = next(a for a in answers if a.status_code == 429).json()["error"]
            assert "for interface doubling (model slow_double)" in line
            assert "change: limits.doubling.instance_qps in service.yaml" in line
            # a model no declared interface names is an infer call: not held by doubling
            for _ in range(6):
                assert client.post(f"{base}/bytes_echo/infer", json=TEXT).status_code == 200

        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        try:
            item = grpcclient.InferInput("x", [1, 2], "FP32")
            item.set_data_from_numpy(np.asarray([[1.0, 2.0]], dtype=np.float32))
            with pytest.raises(InferenceServerException) as limited:
                for _ in range(6):
                    grpc.infer("slow_double", [item])
            assert limited.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
            assert "for interface doubling" in limited.value.message()
        finally:
            grpc.close()

        governance = httpx.get(f"http://{server.http_url}/v2/modelyard/stats").json()["governance"]
        assert governance["admitted"]["infer"] >= 6  # bytes_echo's calls
        assert governance["admitted"]["doubling"] >= 1
        assert governance["rejected"]["doubling"]["ratelimit/instance-qps"] >= 2
        labels = (("interface", "doubling"), ("service", "com.example.test.declared"))
        assert scrape(server)[("modelyard_governance_admitted_total", labels)] >= 1
