"""Triton's qa/L0_client_nobatch: a request without the batch dimension to a batching
model, and one with it to a model that does not batch, are refused; the right shapes are
answered. Over HTTP and gRPC.

As its test.sh: one server on the repository, ``client_test.py`` (four tests). The file
asks for Triton's TensorFlow ``graphdef_int32_int8_int8`` and its ``_nobatch`` twin; here
they are the ONNX models Triton's generator makes with the same tensors, renamed.

The default run takes it on one server with the other small folders
(test_l0_small_folders.py); this runs it as test.sh does under ``TRITON_QA=full``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

MODELS = {
    "onnx_int32_int8_int8": "graphdef_int32_int8_int8",
    "onnx_nobatch_int32_int8_int8": "graphdef_nobatch_int32_int8_int8",
}


def repository(work: Path) -> Path:
    """The two models the file asks for, in ``work/models``."""
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    models = work / "models"
    models.mkdir()
    for onnx_name, name in MODELS.items():
        shutil.move(repositories.renamed(generated / onnx_name, name), models / name)
    shutil.rmtree(generated)
    return models


@pytest.mark.triton_qa_full
def test_client_nobatch(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_client_nobatch")
    models = repository(work)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        run = harness.run_qa_file(host, work, "client_test.py")
    run.check(count=4)
