"""Triton's qa/L0_input_validation: missing and optional inputs, and tensors whose bytes
are not what their shape says, refused in Triton's words.

As its test.sh: ``InputValTest`` against the folder's own models, then ``InputShapeTest``
with ``pt_identity`` (a TorchScript identity, saved here as test.sh saves it) and
``graphdef_object_int32_int32`` (a TensorFlow graph there; the ONNX model Triton's
generator makes with the same tensors here), both under pytest as test.sh runs them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

PT_IDENTITY = """
name: "pt_identity"
backend: "pytorch"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [8] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [8] } ]
dynamic_batching { max_queue_delay_microseconds: 1000000 }
"""

OUT_OF_REACH = {
    "InputShapeTest::test_wrong_input_shape_tensor_size": (
        "TensorRT: its models (plan_*_float32_int32) take shape tensors"
    ),
}


def test_input_validation(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_input_validation")
    models = work / "models"
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(
            host, work, "input_validation_test.py", "InputValTest", pytest_style=True
        )
    run.check(count=5)


def test_input_shape_validation(host: LoopbackHost, tmp_path: Path) -> None:
    import torch

    work = harness.work_directory(tmp_path, "L0_input_validation")
    models = work / "models"
    (models / "pt_identity" / "1").mkdir(parents=True)
    torch.jit.save(
        torch.jit.script(torch.nn.Identity()), str(models / "pt_identity" / "1" / "model.pt")
    )
    (models / "pt_identity" / "config.pbtxt").write_text(PT_IDENTITY)
    generated = tmp_path / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    onnx = repositories.renamed(
        generated / "onnx_object_int32_int32", "graphdef_object_int32_int32"
    )
    shutil.move(onnx, models / onnx.name)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(
            host, work, "input_validation_test.py", "InputShapeTest", pytest_style=True
        )
    run.check(count=3, out_of_reach=OUT_OF_REACH)
