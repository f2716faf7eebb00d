"""Triton's qa/L0_libtorch_inference_mode, L0_libtorch_optimized_execution and
L0_libtorch_disable_cudnn (bash alone, one script shape): a TorchScript model's config
parameter (``INFERENCE_MODE``, ``DISABLE_OPTIMIZED_EXECUTION``, ``DISABLE_CUDNN``) set
true, then false; the model answers (``qa/common/libtorch_infer_client.py``) and the log
says the switch's state once for each of its three versions, in the libtorch backend's
words (``Inference Mode is enabled for model instance '...'``).

As each test.sh: ``libtorch_int32_int32_int32`` (``gen_qa_models.py --libtorch``, on the
project's torch) with the parameter appended to its config, ``--log-verbose=1``, a server
a value. About 25 s for the three folders, in the default run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

MODEL = "libtorch_int32_int32_int32"
# each folder: its parameter, and its log's words for true and for false
FOLDERS = {
    "L0_libtorch_inference_mode": (
        "INFERENCE_MODE", "Inference Mode is enabled", "Inference Mode is disabled"),
    "L0_libtorch_optimized_execution": (
        "DISABLE_OPTIMIZED_EXECUTION", "Optimized execution is disabled",
        "Optimized execution is enabled"),
    "L0_libtorch_disable_cudnn": ("DISABLE_CUDNN", "cuDNN is disabled", "cuDNN is enabled"),
}  # fmt: skip
PARAMETER = """
    parameters: {{
        key: \\"{key}\\"
        value: {{
            string_value: \\"{flag}\\"
        }}
    }}"""


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_libtorch_parameter(host: LoopbackHost, tmp_path: Path, folder: str) -> None:
    key, said_true, said_false = FOLDERS[folder]
    work = harness.work_directory(tmp_path, folder)
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--libtorch", f"--models_dir={generated}")
    for flag, said in (("true", said_true), ("false", said_false)):
        models = work / "models"
        shutil.rmtree(models, ignore_errors=True)
        model = shutil.copytree(generated / MODEL, models / MODEL)
        config = model / "config.pbtxt"  # test.sh's echo """...""" (its \" are quotes)
        config.write_text(config.read_text() + PARAMETER.format(key=key, flag=flag)
                          .replace('\\"', '"') + "\n")  # fmt: skip
        args = ["--model-repository=models", "--log-verbose=1"]
        with harness.tritonserver(host, args, tmp_path / f"{flag}.log", cwd=work) as server:
            run = harness.run_qa_file(host, work.parent / "common", "libtorch_infer_client.py")
            log = server.log()
        run.check(count=1)
        lines = [line for line in log.splitlines() if said in line]
        assert len(lines) == 3, (flag, lines, log[-3000:])  # test.sh: grep -c ... == 3
