"""The README's main command: `modelyard demo` builds the examples and runs the example platform."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_ports, wait_until

IRIS = {
    "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}]
}


def test_demo_runs_the_example_platform_and_answers_the_readme_call(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    # the demo builds its models on first run; its MiniLM export (model_repository.cache)
    # is the one test_embedding.py caches in pytest's cache directory: made once for both
    pytest_cache = getattr(pytestconfig, "cache", None)  # absent with -p no:cacheprovider
    if pytest_cache is not None:
        (tmp_path / "model_repository.cache").symlink_to(
            pytest_cache.mkdir("modelyard-minilm-onnx"), target_is_directory=True
        )
    http, grpc, control = free_ports(3)
    log = (tmp_path / "demo.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "modelyard.cli.main",
            "demo",
            "--gateway-port",
            str(http),
            "--gateway-grpc-port",
            str(grpc),
            "--port",
            str(control),
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
            return "curl -s localhost:" in text and "control_plane_ready" in text

        wait_until(announced, timeout=30, interval=0.2)
        text = (tmp_path / "demo.log").read_text()
        assert f"console   http://127.0.0.1:{control}/" in text
        assert f"ledger    http://127.0.0.1:{control}/api/v1/ledger" in text

        # the whole example platform: a CPU-only pre-processing group and a "GPU" group,
        # launched instances in the embedded registry, the gateway in front
        ledger = httpx.get(f"http://127.0.0.1:{control}/api/v1/ledger").json()
        running = ledger["running_by_group"]
        assert running["com.example.demo/preprocess"] == {
            "instances": 1,
            "gpu_instances": 0,
            "cards": 0,
        }
        assert running["com.example.demo/gpu"]["gpu_instances"] == 1
        text_call = {
            "inputs": [
                {"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": ["a late goal"]}
            ]
        }
        answer = httpx.post(
            f"http://127.0.0.1:{http}/v2/models/text_classifier/infer", json=text_call, timeout=30
        )
        assert answer.status_code == 200, answer.text

        # a burst at the pre-processing instance itself is refused with the same line
        overview = httpx.get(f"http://127.0.0.1:{control}/api/v1/overview").json()
        (group,) = [
            g for s in overview["services"] for g in s["groups"] if g["name"] == "preprocess"
        ]
        instance = group["instances"][0]["http"]
        refusals: list[str] = []

        def burst() -> None:
            with httpx.Client(timeout=10) as client:
                for _ in range(60):
                    reply = client.post(
                        f"http://{instance}/v2/models/iris_sklearn/infer", json=IRIS
                    )
                    if reply.status_code == 429:
                        refusals.append(reply.json()["error"])

        threads = [threading.Thread(target=burst) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert refusals, "360 calls at once were all admitted under a 100/s limit"
        line = refusals[0]
        assert "instance-qps" in line and "over limit 100/s for interface infer" in line
        assert "rule=ratelimit/instance-qps" in line and "limits.infer.instance_qps" in line

        # the governance story, as the banner tells it: the bench through the gateway is
        # refused by the central rule, and prints each rule's count and first line; the
        # console counts the same refusals, on the instances and at the gateway
        lines = [line.split()[1:] for line in text.splitlines() if line.startswith("  modelyard ")]

        def banner_command(*start: str) -> subprocess.CompletedProcess[str]:
            (words,) = [w for w in lines if tuple(w[: len(start)]) == start]
            return subprocess.run(
                [sys.executable, "-m", "modelyard.cli.main", *words],
                capture_output=True, text=True, timeout=120, cwd=tmp_path,
            )  # fmt: skip

        def refused_so_far() -> tuple[int, int]:
            governance = httpx.get(f"http://127.0.0.1:{control}/api/v1/governance").json()
            entry = governance["services"]["com.example.demo"]
            return (
                entry["rejected"].get("infer", {}).get("ratelimit/instance-qps", 0),
                entry["gateway"]["refused"].get("ratelimit/instance-qps", 0),
            )

        time.sleep(1.5)  # the collector has polled the burst's refusals
        before = refused_so_far()
        over = banner_command("bench")
        assert over.returncode == 0, over.stderr
        counted = re.search(r"(\d+) x ratelimit/instance-qps", over.stdout)
        assert counted is not None, over.stdout
        assert "the first: [429] [governance] request rejected: instance-qps" in over.stdout
        assert "change: limits.infer.instance_qps in central:com.example.demo@r1" in over.stdout
        refused = int(counted.group(1))
        wait_until(lambda: refused_so_far() == (before[0] + refused, before[1] + refused),
                   timeout=10, interval=0.5)  # fmt: skip
        raised = banner_command("rules", "set")
        assert raised.returncode == 0 and "revision 1 -> revision 2" in raised.stdout, raised
        time.sleep(1.5)  # the instances follow the new revision within a second
        passed = banner_command("bench")
        assert passed.returncode == 0 and "x ratelimit" not in passed.stdout, passed.stdout
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        log.close()
    assert "stopped com.example.demo/gpu" in (tmp_path / "demo.log").read_text()
