"""Triton's qa/L0_libtorch_shared_weights: ``ENABLE_WEIGHT_SHARING`` makes a TorchScript
model's instances on one device share one loaded module (the first loads it, the other
fifteen of sixteen log ``Reusing TorchScript model for instance '...'``), and 128
concurrent requests are answered right either way.

As its test.sh: ``libtorch_nobatch_zero_1_float32`` (``gen_qa_identity_models.py
--libtorch``, on the project's torch) with sixteen instances, first without the
parameter (no line), then with it, each on a server of its own, and
``libtorch_shared_weights_test.py``. test.sh's first run and its last put the instances
on a GPU (``KIND_GPU``): the first runs with ``KIND_CPU`` here (the check is the same:
nothing shared), the last is out of reach. About 20 s, in the default run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

MODEL = "libtorch_nobatch_zero_1_float32"
REUSE = "Reusing TorchScript model for instance"
SHARING = """
        parameters: {
            key: "ENABLE_WEIGHT_SHARING"
            value: {
                string_value: "true"
            }
        }
"""


def test_libtorch_shared_weights(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_libtorch_shared_weights")
    generated = work / "generated"
    repositories.generated(
        work, "gen_qa_identity_models.py", "--libtorch", f"--models_dir={generated}"
    )
    for shared, reused in ((False, 0), (True, 15)):
        models = work / "models"
        shutil.rmtree(models, ignore_errors=True)
        config = shutil.copytree(generated / MODEL, models / MODEL) / "config.pbtxt"
        text = config.read_text() + "instance_group [ { count: 16 kind: KIND_CPU}]\n"
        config.write_text(text + (SHARING if shared else ""))
        args = [f"--model-repository={models}", "--exit-on-error=false",
                "--exit-timeout-secs=10"]  # fmt: skip
        with harness.tritonserver(host, args, tmp_path / f"{shared}.log") as server:
            run = harness.run_qa_file(
                host, work, "libtorch_shared_weights_test.py",
                "SharedWeightsTest.test_pytorch_identity_model",
            )  # fmt: skip
            log = server.log()
        run.check(count=1)
        lines = [line for line in log.splitlines() if REUSE in line]
        assert len(lines) == reused, (shared, lines)
