"""A tritonserver command line, given to ``modelyard serve`` unchanged."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import httpx
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelyard.processes import serve_command
from tests.support.models import failing, slow_double, times_ten, write_python_model
from tests.support.servers import free_ports, running_server, wait_until

ECHO = """
class Model:
    def execute(self, inputs):
        return {"y": inputs["x"]}
"""

ECHO_CONFIG = """
backend: "python"
max_batch_size: 4
input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
"""


def infer(url: str, model: str) -> list[float]:
    body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
    response = httpx.post(f"http://{url}/v2/models/{model}/infer", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return list(response.json()["outputs"][0]["data"])


def refuses_connections(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_two_repositories_addresses_log_flags_and_tuning_flags(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    slow_double(first)
    write_python_model(second, "echo", ECHO, ECHO_CONFIG)
    log_file = tmp_path / "triton.log"
    with running_server(
        first,
        tmp_path,
        "--model-store", str(second),
        "--http-address=127.0.0.1", "--allow-grpc=false", "--strict-readiness=true",
        "--log-verbose=1", f"--log-file={log_file}", "--log-format=ISO8601",
        "--exit-timeout-secs=5", "--model-load-thread-count=2",
        "--pinned-memory-pool-byte-size=268435456",
        "--backend-config=python,shm-default-byte-size=1",
    ) as server:  # fmt: skip
        assert infer(server.http_url, "slow_double") == [1002.0, 1004.0]
        assert infer(server.http_url, "echo") == [1.0, 2.0]
        index = httpx.post(f"http://{server.http_url}/v2/repository/index").json()
        assert {row["name"] for row in index} == {"slow_double", "echo"}
        assert refuses_connections(server.grpc_port)  # --allow-grpc=false
        logged = log_file.read_text()
    assert "server_ready" in logged
    assert "triton_flag_not_applied" in logged and "--pinned-memory-pool-byte-size" in logged
    # --backend-config is applied: the python backend starts with the setting given
    assert "backend configuration" in logged and "shm-default-byte-size" in logged


def test_exit_on_error_ends_the_server_with_the_failed_models_line(tmp_path: Path) -> None:
    slow_double(tmp_path)
    broken = failing(tmp_path)
    (broken / "config.pbtxt").write_text("this is not a config")
    command = serve_command(tmp_path, http_port=0, metrics_port=-1)
    result = subprocess.run(
        [*command, "--exit-on-error=true"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "failed to load 1 model(s) at start: failing:" in result.stderr
    assert "rule=serve/exit-on-error" in result.stderr and "Traceback" not in result.stderr


def test_a_flag_value_that_is_neither_true_nor_false_is_refused_at_start(tmp_path: Path) -> None:
    slow_double(tmp_path)
    command = serve_command(tmp_path, http_port=0, metrics_port=-1)
    result = subprocess.run(
        [*command, "--model-namespacing=maybe"], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--model-namespacing: expected true or false, got 'maybe'" in result.stderr
    assert "Traceback" not in result.stderr


def test_model_config_name_picks_each_models_custom_config(tmp_path: Path) -> None:
    """tritonserver's --model-config-name: configs/NAME.pbtxt where a model has it, else
    config.pbtxt; --http-max-input-size is --http-max-body-bytes."""
    repository = tmp_path / "models"
    slow_double(repository)
    times_ten(repository, "other")
    custom = repository / "slow_double" / "configs"
    custom.mkdir()
    config = (repository / "slow_double" / "config.pbtxt").read_text()
    (custom / "h100.pbtxt").write_text(config.replace("max_batch_size: 16", "max_batch_size: 3"))
    with running_server(
        repository, tmp_path, "--model-config-name=h100", "--http-max-input-size=5000"
    ) as server:
        base = f"http://{server.http_url}/v2/models"
        assert httpx.get(f"{base}/slow_double/config").json()["max_batch_size"] == 3
        assert httpx.get(f"{base}/other/config").json()["max_batch_size"] == 16
        too_big = httpx.post(f"{base}/other/infer", content=b"x" * 6000)
        assert too_big.status_code == 413


def test_trace_file_flags_write_triton_s_trace_file_when_the_server_stops(tmp_path: Path) -> None:
    """tritonserver's older --trace-file/--trace-level/--trace-rate: Triton's JSON trace
    file, written at shutdown; tritonclient reads the settings, a model's level changes
    live."""
    slow_double(tmp_path / "models")
    times_ten(tmp_path / "models", "other")
    path = tmp_path / "trace.json"
    with running_server(
        tmp_path / "models", tmp_path, f"--trace-file={path}", "--trace-level=TIMESTAMPS",
        "--trace-rate=1",
    ) as server:  # fmt: skip
        client = httpclient.InferenceServerClient(server.http_url)
        try:
            settings = client.get_trace_settings()
            assert settings["trace_file"] == str(path) and settings["trace_mode"] == "triton"
            client.update_trace_settings("other", {"trace_level": ["OFF"]})
            for model in ("slow_double", "other", "slow_double"):
                infer(server.http_url, model)
        finally:
            client.close()
        assert not path.exists()
        server.stop()
    records = json.loads(path.read_text())
    heads = [r for r in records if "model_name" in r]
    assert [(r["id"], r["model_name"]) for r in heads] == [(1, "slow_double"), (2, "slow_double")]
    names = [s["name"] for r in records if r["id"] == 1 for s in r.get("timestamps", [])]
    assert names[0] == "HTTP_RECV_START" and names[-1] == "HTTP_SEND_END"
    assert "COMPUTE_START" in names and "QUEUE_START" in names


def test_allow_http_false_serves_every_call_over_grpc_alone(tmp_path: Path) -> None:
    slow_double(tmp_path)
    http_port, grpc_port = free_ports(2)
    command = serve_command(tmp_path, http_port=http_port, grpc_port=grpc_port)
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*command, "--allow-http=false"], stdout=out, stderr=out)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
    try:

        def ready() -> bool:
            assert process.poll() is None, log.read_text()
            try:
                return bool(client.is_server_ready())
            except InferenceServerException:
                return False

        wait_until(ready, timeout=60)
        item = grpcclient.InferInput("x", [1, 2], "FP32")
        item.set_data_from_numpy(np.array([[1, 2]], dtype=np.float32))
        assert client.infer("slow_double", [item]).as_numpy("y").tolist() == [[1002, 1004]]
        assert client.get_model_repository_index().models[0].name == "slow_double"
        assert refuses_connections(http_port)
    finally:
        client.close()
        process.terminate()
        process.wait(15)
