"""Triton's qa/L0_output_name: a request for an output the model does not have is refused
over gRPC in Triton's words (``unexpected inference output 'DUMMY' for model ...``).

As its test.sh: one server on the identity repository's ``*_nobatch_zero_1_float32``
models, ``OutputNameValidationTest``, which asks each of ``graphdef``, ``libtorch``,
``onnx``, ``plan`` and ``savedmodel``. Here each is the ONNX model Triton's generator makes
(``onnx_nobatch_zero_1_float32``), renamed for the others (TensorFlow, PyTorch and
TensorRT there): the refusal is the server's, before any backend runs.

The default run takes a selection of it on one server with the other small folders
(test_l0_small_folders.py); this runs it whole under ``TRITON_QA=full``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

TRIALS = ("graphdef", "libtorch", "onnx", "plan", "savedmodel")


def repository(work: Path) -> Path:
    """test.sh's ``models``: each trial's ``*_nobatch_zero_1_float32``."""
    generated = repositories.identity_models(work, work / "identity", ensembles=False)
    models = work / "models"
    models.mkdir()
    onnx = generated / "onnx_nobatch_zero_1_float32"
    for trial in TRIALS:
        name = f"{trial}_nobatch_zero_1_float32"
        source = onnx if trial == "onnx" else repositories.renamed(onnx, name)
        shutil.copytree(source, models / name)
    return models


@pytest.mark.triton_qa_full
def test_output_name(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_output_name")
    models = repository(work)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "output_name_test.py", "OutputNameValidationTest")
    run.check(count=1)
