"""`modelyard tune` on a small sweep recommends a config that meets the SLO when served."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.examples.build import build_tiny_onnx
from tests.support.servers import running_server

SLO_MS = 50.0


def test_tune_recommends_a_config_that_meets_the_slo(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    build_tiny_onnx(repository, seed=0)
    out = tmp_path / "tune"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelyard.cli.main",
            "tune",
            "tiny_onnx",
            "--repository",
            str(repository),
            "--latency-slo-ms",
            str(SLO_MS),
            "--instances",
            "1,2",
            "--max-batch-sizes",
            "4",
            "--queue-delays-us",
            "0",
            "--concurrency",
            "1,4",
            "--seconds",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "recommended:" in result.stdout
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    sweep = json.loads((out / "sweep.json").read_text())
    assert len(sweep) == 2 and all(len(c["steps"]) == 2 for c in sweep)
    config = text_format.Parse((out / "config.pbtxt").read_text(), mc.ModelConfig())
    assert config.instance_group[0].count in (1, 2)

    served = tmp_path / "served"
    shutil.copytree(repository / "tiny_onnx", served / "tiny_onnx")
    shutil.copy(out / "config.pbtxt", served / "tiny_onnx" / "config.pbtxt")
    with running_server(served, tmp_path) as server:
        bench = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelyard.cli.main",
                "bench",
                "--url",
                server.http_url,
                "--model",
                "tiny_onnx",
                "--concurrency",
                "4",
                "--duration",
                "2",
                "--warmup",
                "0.5",
                "--out",
                str(tmp_path / "bench"),
                "--name",
                "check",
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert bench.returncode == 0, bench.stderr
    step = json.loads((tmp_path / "bench" / "check.json").read_text())["steps"][0]
    assert step["errors"] == 0
    assert step["p99_ms"] < SLO_MS
