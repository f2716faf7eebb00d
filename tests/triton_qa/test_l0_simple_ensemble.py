"""Triton's qa/L0_simple_ensemble: an ensemble of six steps over two versions of one
model (``version_policy: { all {} }``, steps naming version 1 or the latest).

As its test.sh: the folder's ``models``, ``simple`` holding versions 1 and 2 of Triton's
example ``simple`` (a TensorFlow graph there, copied by its Dockerfile.QA; here the ONNX
model of the same tensors, ``OUTPUT0 = INPUT0 + INPUT1``, ``OUTPUT1 = INPUT0 - INPUT1``,
with the folder's config, its platform ``onnxruntime_onnx``), and a fresh server for
each of ``ensemble_test.py``'s three tests, which count each version's inferences
(``TRITON_QA=full``). The default run takes ``test_ensemble_add_sub`` on the server it
shares with L0_logging and L0_trace (test_l0_trace.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

QA_FILE = "ensemble_test.py"
TESTS = [
    "EnsembleTest.test_ensemble_add_sub",
    "EnsembleTest.test_ensemble_sequence_flags",
    "EnsembleTest.test_ensemble_add_sub_one_output",
]


def repository(work: Path) -> Path:
    """The folder's ``models`` with ``simple``'s two versions and the ensemble's
    version folder (test.sh makes it)."""
    models = work / "models"
    made = simple_add_sub(work / "made")
    simple = models / "simple"
    for version in ("1", "2"):
        shutil.copytree(made / "1", simple / version)
    config = simple / "config.pbtxt"
    graphdef, onnx = 'platform: "tensorflow_graphdef"', 'platform: "onnxruntime_onnx"'
    config.write_text(config.read_text().replace(graphdef, onnx))
    (models / "ensemble_add_sub_int32_int32_int32" / "1").mkdir(exist_ok=True)
    return models


@pytest.mark.triton_qa_full
@pytest.mark.parametrize("test", TESTS)
def test_simple_ensemble(host: LoopbackHost, tmp_path: Path, test: str) -> None:
    work = harness.work_directory(tmp_path, "L0_simple_ensemble")
    args = [f"--model-repository={repository(work)}"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, QA_FILE, test)
    run.check(count=1)
