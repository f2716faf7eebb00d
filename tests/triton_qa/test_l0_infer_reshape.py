"""Triton's qa/L0_infer_reshape: config ``reshape`` on inputs and outputs, through models
and ensembles, batching and not.

As its test.sh: qa_reshape_model_repository and its ensembles
(``gen_qa_reshape_models.py --onnx --variable``, ``--libtorch --variable`` and
``--ensemble``, whose ``nop_*`` steps are Triton's identity backend, version folders made
as util.sh's create_nop_version_dir makes them), test.sh's ``custom_*`` copies (the
identity backend with the ``graphdef_*`` configs), one server, ``infer_reshape_test.py``.

The file asks each test's shapes of every backend it knows. Here the ONNX and PyTorch
models are the generator's (TorchScript on the project's torch, served by modelyard's
pytorch engine, ``libtorch_zero_1_object``'s strings a ``List[str]``). The TensorFlow
ones (``graphdef_*``, ``savedmodel_*``) are the ONNX models renamed (the generator makes
both from the same calls: the same tensors and reshapes), and so are test.sh's
``custom_*`` copies of them; the TensorRT ones (``plan_*``) are the identity backend
with the configs the generator writes for them (its own reshapes: ``[ 2, 2, 4 ]`` for
``[ 4, 4 ]``, ...), as test.sh serves its ``custom_*`` models. The default run takes a
selection of it on one server with the other small folders (test_l0_small_folders.py);
this runs it whole under ``TRITON_QA=full``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

# test.sh's loop over the custom_ copies
CUSTOM = [
    "nobatch_zero_3_float32", "nobatch_zero_4_float32", "zero_1_float32", "zero_2_float32",
    "zero_3_float32", "zero_4_float32", "nobatch_zero_1_int32", "nobatch_zero_2_int32",
    "nobatch_zero_3_int32", "zero_1_int32", "zero_2_int32", "zero_3_int32",
]  # fmt: skip

# the generator's create_trt_models calls, its config writer only (TensorRT is not here)
PLAN_CONFIGS = """
import numpy as np
import sys
import gen_qa_reshape_models as gen
import test_util

gen.tu = test_util
f32 = np.float32
for args in [
    (([1], [8]), ([1, 1, 1], [4, 1, 2]), ([1], [8]), ([1, 1, 1], [4, 1, 2])),
    (([4, 4], [2], [2, 2, 3], [1]), ([2, 2, 4], [1, 2, 1], [3, 2, 2], [1, 1, 1]),
     ([2, 2, 4], [1, 2, 1], [3, 2, 2], [1, 1, 1]), ([2, 2, 4], [1, 2, 1], [3, 2, 2], [1, 1, 1])),
    (([1],), ([1],), ([1],), ([1],)),
]:
    for max_batch in (8, 0):
        gen.create_plan_modelconfig(sys.argv[1], 1, max_batch, f32, *args)
"""



def _identity(config: Path, name: str) -> None:
    """test.sh's edit of a copied config: the identity backend, its name, a CPU instance."""
    text = re.sub(r"(?m)^platform:.*", 'backend: "identity"', config.read_text())
    text = re.sub(r"(?m)^name:.*", f'name: "{name}"', text)
    config.write_text(text + "instance_group [ { kind: KIND_CPU }]\n")


def repository(work: Path, whole: bool = True) -> Path:
    """test.sh's ``models``; not ``whole``: only what the INT32 tests ask for (no PyTorch
    model, ensemble or TensorRT stand-in: the file asks none of them for INT32)."""
    models = work / "models"
    for flag in ("--onnx", "--libtorch") if whole else ("--onnx",):
        repositories.generated(
            work, "gen_qa_reshape_models.py", flag, "--variable", f"--models_dir={models}"
        )
    if whole:
        repositories.generated(
            work, "gen_qa_reshape_models.py", "--ensemble", f"--models_dir={models}"
        )
        (work.parent / "common" / "plan_configs.py").write_text(PLAN_CONFIGS)
        repositories.generated(work, "plan_configs.py", str(models))
    for plan in models.glob("plan_*"):
        _identity(plan / "config.pbtxt", plan.name)
    for onnx in list(models.glob("onnx_*")):
        for platform in ("graphdef", "savedmodel"):
            name = onnx.name.replace("onnx", platform, 1)
            shutil.move(repositories.renamed(onnx, name), models / name)
    for suffix in CUSTOM:
        custom = models / f"custom_{suffix}"
        shutil.copytree(models / f"graphdef_{suffix}", custom)
        shutil.rmtree(custom / "1")
        (custom / "1").mkdir()
        _identity(custom / "config.pbtxt", custom.name)
    for model in models.iterdir():  # create_nop_version_dir, and the plan stand-ins'
        if model.name.startswith(("nop_", "plan_")):
            (model / "1").mkdir(exist_ok=True)
    return models


@pytest.mark.triton_qa_full
def test_infer_reshape(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_infer_reshape")
    models = repository(work)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "infer_reshape_test.py")
    run.check(count=8)
