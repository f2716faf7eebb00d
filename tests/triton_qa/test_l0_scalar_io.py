"""Triton's qa/L0_scalar_io: ONNX models whose tensors are scalars, served with config
dims of ones.

As its test.sh: ``qa_scalar_models`` (``gen_qa_ort_scalar_models.py``: identity models
whose ``INPUT`` and ``OUTPUT`` carry no shape, with configs of dims ``[ 1 ]`` and
``[ 1, 1 ]`` and nothing else, completed by the server), ``scalar_test.py``, then test.sh's
edit of ``onnx_scalar_1dim``'s dims to ``[2]``, with which the server must not start.

The default run takes a selection of it on one server with the other small folders
(test_l0_small_folders.py); this runs it whole under ``TRITON_QA=full``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow


def repository(work: Path) -> Path:
    """test.sh's ``models``: qa_scalar_models."""
    models = work / "models"
    repositories.generated(work, "gen_qa_ort_scalar_models.py", f"--models_dir={models}")
    return models


@pytest.mark.triton_qa_full
def test_scalar_io(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_scalar_io")
    models = repository(work)
    args = [f"--model-repository={models}"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "scalar_test.py")
    run.check(count=1)

    config = models / "onnx_scalar_1dim" / "config.pbtxt"
    config.write_text(re.sub(r"dims.*", "dims:[2]", config.read_text()))
    log = harness.start_fails(host, args, tmp_path / "refused.log")
    assert "onnx_scalar_1dim" in log and "scalar tensor 'INPUT'" in log, log[-3000:]
