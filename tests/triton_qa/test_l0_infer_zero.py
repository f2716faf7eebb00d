"""Triton's qa/L0_infer_zero: zero-sized tensors through models and ensembles.

As its test.sh: the identity models and the identity ensembles (``simple_zero``,
``sequence_zero``, ``fan_zero``, over ``nop_*`` identity-backend steps, batching and not)
in one repository, one server, ``infer_zero_test.py`` with ``BACKENDS=onnx`` (the file's
variable for the backends whose models exist: here Triton's generator makes them ONNX).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow


def test_infer_zero(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_infer_zero")
    models = repositories.identity_models(work, work / "models")
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "infer_zero_test.py", env={"BACKENDS": "onnx"})
    run.check(count=28)
