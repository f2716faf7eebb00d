"""The README's main command: `modelyard demo` builds the examples and serves them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.servers import free_ports, wait_until

IRIS = {
    "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}]
}


def test_demo_builds_the_examples_and_answers_the_readme_call(tmp_path: Path) -> None:
    http, grpc, metrics = free_ports(3)
    log = (tmp_path / "demo.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "modelyard.cli.main",
            "demo",
            "--http-port",
            str(http),
            "--grpc-port",
            str(grpc),
            "--metrics-port",
            str(metrics),
        ],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:

        def ready() -> bool:
            assert process.poll() is None, (tmp_path / "demo.log").read_text()
            try:
                return httpx.get(f"http://127.0.0.1:{http}/v2/health/ready").status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=240, interval=0.5)
        response = httpx.post(f"http://127.0.0.1:{http}/v2/models/iris_sklearn/infer", json=IRIS)
        assert response.status_code == 200
        outputs = {o["name"]: o for o in response.json()["outputs"]}
        assert outputs["label"]["data"] == [0]
        assert (tmp_path / "model_repository" / "text_classifier" / "config.pbtxt").exists()

        def announced() -> bool:
            text = (tmp_path / "demo.log").read_text()
            return "curl -s localhost:" in text and "server_ready" in text

        # The HTTP port answers before the startup log lines are flushed.
        wait_until(announced, timeout=30, interval=0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        log.close()
