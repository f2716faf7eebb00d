"""Triton's qa/L0_perf_analyzer_ground_truth, as its test.sh runs it: perf_analyzer
(tritonclient's binary, unchanged) at a concurrency of 2 against ``ground_truth``
(qa/python_models: one instance, no dynamic batching, each request sleeping as long as
its input says), over HTTP and gRPC, for delays of 0.05 s and 0.5 s: the throughput it
reports must be 1/delay within 5 % (the server runs the model's requests one at a time,
batching none), and over gRPC its ``gRPC`` times are not zero. No perf_analyzer error
line may be printed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.support.perf_analyzer import PERF_ANALYZER, checked, environment
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

FOLDER = "L0_perf_analyzer_ground_truth"
MODEL = "ground_truth"
TOLERANCE = 0.05  # test.sh's


def _models(work: Path) -> Path:
    """test.sh's ``models``: ground_truth's model.py and config."""
    source = work.parent / "python_models" / MODEL
    target = work / "models" / MODEL
    (target / "1").mkdir(parents=True)
    shutil.copy(source / "model.py", target / "1" / "model.py")
    shutil.copy(source / "config.pbtxt", target / "config.pbtxt")
    return work / "models"


@pytest.mark.triton_qa_full
@pytest.mark.timeout(600)
def test_perf_analyzer_ground_truth(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    args = [f"--model-repository={_models(work)}"]
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=work):
        for delay in (0.05, 0.5):
            (work / "input_data.json").write_text(
                json.dumps({"data": [{"INPUT0": [delay]}]})
            )  # test.sh's create_input_data
            for protocol in ("http", "grpc"):
                results = work / "results"
                done = subprocess.run(
                    host.command([str(PERF_ANALYZER), "-v", "-i", protocol,
                                  "--concurrency-range", "2", "--input-data",
                                  "input_data.json", "-m", MODEL, "-f", str(results)]),
                    cwd=work, env=harness.environment(environment()), capture_output=True,
                    text=True, timeout=240,
                )  # fmt: skip
                said = checked(done)  # test.sh's check_perf_analyzer_error
                # check_performance: the second line's second column, infer/sec
                measured = float(results.read_text().splitlines()[1].split(",")[1])
                expected = 1 / delay
                assert abs(measured - expected) <= expected * TOLERANCE, (delay, protocol, said)
                if protocol == "grpc":  # check_grpc_time: each gRPC time line's 4th field
                    times = [line.split()[3] for line in said.splitlines() if "gRPC" in line]
                    assert times and all(value != "0" for value in times), said[-3000:]
