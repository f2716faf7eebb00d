"""Triton's qa/L0_infer_variable: variable-size tensors through models and ensembles.

As its test.sh: qa_variable_model_repository and its ensembles
(``gen_qa_models.py --onnx --variable``, ``--libtorch --variable`` and ``--ensemble
--variable``, whose ``nop_*`` steps are Triton's identity backend, version folders made
as util.sh's create_nop_version_dir makes them), ``instance_group [ { kind: KIND_CPU }]``
added to the graphdef, savedmodel, onnx and libtorch configs, one server
(``--exit-timeout-secs=120``), ``infer_variable_test.py``.

The file asks each test's shapes of every backend it knows. Here the ONNX and PyTorch
models are the generator's (TorchScript on the project's torch); the TensorFlow ones
(``graphdef_*``, ``savedmodel_*``) and the TensorRT ones (``plan_*``, which the file asks
for FP32 and INT32 with shapes its generator gives the ONNX models too) are the ONNX
models renamed: the generator makes each from the same calls, with the same tensors and
arithmetic (OUTPUT0 the sum, OUTPUT1 the difference). test.sh's second target (``gpu``:
``KIND_GPU`` instances) needs a GPU and is not run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

# the platforms whose configs test.sh gives a KIND_CPU instance group
INSTANCE_GROUP = ("graphdef", "savedmodel", "onnx", "libtorch")


def repository(work: Path) -> Path:
    """test.sh's ``models`` for its ``cpu`` target."""
    models = work / "models"
    for flag in ("--onnx", "--libtorch", "--ensemble"):
        repositories.generated(
            work, "gen_qa_models.py", flag, "--variable", f"--models_dir={models}"
        )
    for onnx in list(models.glob("onnx_*")):
        for platform in ("graphdef", "savedmodel", "plan"):
            name = onnx.name.replace("onnx", platform, 1)
            shutil.move(repositories.renamed(onnx, name), models / name)
    for nop in models.glob("nop_*"):  # create_nop_version_dir
        (nop / "1").mkdir(exist_ok=True)
    for model in models.iterdir():
        if model.name.startswith(INSTANCE_GROUP):
            config = model / "config.pbtxt"
            config.write_text(config.read_text() + "instance_group [ { kind: KIND_CPU }]\n")
    return models


@pytest.mark.triton_qa_full
def test_infer_variable(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_infer_variable")
    models = repository(work)
    args = [f"--model-repository={models}", "--exit-timeout-secs=120"]
    with harness.tritonserver(host, args, tmp_path / "server.log", timeout=180):
        run = harness.run_qa_file(host, work, "infer_variable_test.py")
    run.check(count=21)
