"""A tritonserver command line, given to ``modelyard serve`` unchanged."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import httpx

from modelyard.processes import serve_command
from tests.support.models import failing, slow_double, times_ten, write_python_model
from tests.support.servers import running_server

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
    assert "--backend-config" in logged


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


def test_a_flag_asking_for_what_is_not_served_is_refused_at_start(tmp_path: Path) -> None:
    slow_double(tmp_path)
    command = serve_command(tmp_path, http_port=0, metrics_port=-1)
    result = subprocess.run(
        [*command, "--model-namespacing=true"], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--model-namespacing=true asks for what modelyard does not serve" in result.stderr
    assert "rule=serve/triton-flag" in result.stderr and "Traceback" not in result.stderr


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
