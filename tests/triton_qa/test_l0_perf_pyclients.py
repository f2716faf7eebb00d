"""Triton's qa/L0_perf_pyclients, as its test.sh runs it: ``simple_perf_client.py``
(unchanged) against a server of ``custom_models`` (``custom_zero_1_int32``, the identity
backend) over gRPC, then HTTP: 500 warm-up and 1,000 timed calls of 100,000 INT32
elements each, its CSV turned into the benchmark record by ``qa/common/reporter.py``
(unchanged; no URL is given, so nothing is posted). Each run must succeed and the record
carry its throughput, as test.sh checks the exit codes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

FOLDER = "L0_perf_pyclients"
MODEL = "custom_zero_1_int32"
# test.sh's benchmark description, written beside the CSV for reporter.py
DESCRIPTION = (
    '[{{"s_benchmark_kind":"benchmark_perf","s_benchmark_name":"python_client",'
    '"s_server":"triton","s_protocol":"{protocol}","s_framework":"custom",'
    '"s_model":"' + MODEL + '","l_concurrency":1,"l_batch_size":1,"l_instance_count":1}}]'
)


@pytest.mark.timeout(300)
def test_python_client_benchmark(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    (work / "custom_models" / MODEL / "1").mkdir()  # as Triton's Dockerfile.QA makes it
    args = [f"--model-repository={work / 'custom_models'}",
            "--backend-config=tensorflow,version=2"]  # fmt: skip
    for protocol in ("grpc", "http"):
        name = f"{MODEL}_{protocol}"
        extra = ["-i", "grpc", "-u", "localhost:8001"] if protocol == "grpc" else []
        with harness.tritonserver(host, args, tmp_path / f"{protocol}.log", cwd=work):
            client = subprocess.run(
                host.command([sys.executable, "simple_perf_client.py", "-m", MODEL,
                              "--shape", "100000", "--csv", f"{name}.csv", *extra]),
                cwd=work, env=harness.environment(), capture_output=True, text=True,
                timeout=240,
            )  # fmt: skip
        assert client.returncode == 0, client.stdout[-3000:] + client.stderr[-3000:]
        assert "Throughput:" in client.stdout
        (work / f"{name}.tjson").write_text(DESCRIPTION.format(protocol=protocol))
        reporter = subprocess.run(
            [sys.executable, "../common/reporter.py", "-v", "-o", f"{name}.json",
             "--csv", f"{name}.csv", f"{name}.tjson"],
            cwd=work, env=harness.environment(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert reporter.returncode == 0, reporter.stdout[-3000:] + reporter.stderr[-3000:]
        (record,) = json.loads((work / f"{name}.json").read_text())
        assert record["s_protocol"] == protocol and record["d_infer_per_sec"] > 0, record
