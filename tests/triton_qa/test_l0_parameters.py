"""Triton's qa/L0_parameters: request parameters and forwarded headers, through a python
model and an ensemble (identity backend, then the python ``parameter`` model).

As its test.sh: its own model repository, one server per case with the case's
``--grpc-header-forward-pattern`` / ``--http-header-forward-pattern``, and
``parameters_test.py`` with ``TEST_HEADER`` naming the case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

CASES = {
    "test_params": [],
    "test_headers": [
        "--grpc-header-forward-pattern", "my_header.*",
        "--http-header-forward-pattern", "my_header.*",
    ],
    "test_header_forward_pattern_case_insensitive": [
        "--grpc-header-forward-pattern", "MY_HEADER.*",
        "--http-header-forward-pattern", "MY_HEADER.*",
    ],
    "test_grpc_header_forward_pattern_case_sensitive": [
        "--grpc-header-forward-pattern", "(?-i)MY_HEADER.*",
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    "case",
    [case if case == "test_params" else pytest.param(case, marks=pytest.mark.triton_qa_full)
     for case in CASES],
)  # fmt: skip
def test_parameters(host: LoopbackHost, tmp_path: Path, case: str) -> None:
    work = harness.work_directory(tmp_path, "L0_parameters")
    models = work / "model_repository"
    for model in ("identity", "ensemble"):
        (models / model / "1").mkdir(parents=True, exist_ok=True)
    args = [f"--model-repository={models}", "--exit-timeout-secs=120", *CASES[case]]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "parameters_test.py", env={"TEST_HEADER": case})
    run.check(count=8)
