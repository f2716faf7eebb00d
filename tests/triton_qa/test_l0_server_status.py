"""Triton's qa/L0_server_status: ``server_status_test.py``'s two classes, on one server in
poll mode, with test.sh's change to the repository between them.

As its test.sh: ``--repository-poll-secs=1 --model-control-mode=poll`` on Triton's
qa_model_repository, whose ONNX models ``gen_qa_models.py --onnx`` makes here; its
TensorFlow ``graphdef_*`` models the file names are those ONNX models under the graphdef
names (the same tensors, versions and version policies: the file checks names, versions,
statistics and answers). ``ServerMetadataTest`` runs, then test.sh removes versions 2 and
3 of both ``*_int32_int32_int32`` models and copies ``graphdef_float16_float32_float32``'s
version 1 to 7, and ``ModelMetadataTest`` runs after poll mode saw it. About 30 s, in the
default run.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

TRITON_VERSION = "2.51.0"
# the file's TensorFlow models, each served by the ONNX model of the same tensors
GRAPHDEF = ("int32_int8_int8", "int32_int32_int32", "float16_float32_float32",
            "float32_float32_float32")  # fmt: skip
ONNX_ONLY = (
    "the qa_model_repository of every platform holds 219 ready versions; here only its "
    "ONNX models and the four graphdef names the file uses"
)
OUT_OF_REACH = {
    "ModelMetadataTest::test_infer_stats_no_model": ONNX_ONLY,
    "ServerMetadataTest::test_model_latest_infer": (
        "asserts graphdef_int32_int32_int32's platform is tensorflow_graphdef (TensorFlow)"
    ),
    "ServerMetadataTest::test_model_specific_infer": (
        "infers on plan_float32_float32_float32 (TensorRT)"
    ),
}


def models(work: Path) -> Path:
    target = work / "models"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={target}")
    for name in GRAPHDEF:
        graphdef = repositories.renamed(target / f"onnx_{name}", f"graphdef_{name}")
        assert graphdef.parent == target
    return target


def test_server_status(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_server_status")
    repository = models(work)
    args = ["--repository-poll-secs=1", "--model-control-mode=poll",
            f"--model-repository={repository}"]  # fmt: skip
    env = {"TRITON_SERVER_VERSION": TRITON_VERSION}
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        metadata = harness.run_qa_file(
            host, work, "server_status_test.py", "ServerMetadataTest", env=env
        )
        for name in ("graphdef_int32_int32_int32", "onnx_int32_int32_int32"):  # test.sh's
            for version in ("2", "3"):
                shutil.rmtree(repository / name / version)
        float16 = repository / "graphdef_float16_float32_float32"
        shutil.copytree(float16 / "1", float16 / "7")
        time.sleep(3)
        versions = harness.run_qa_file(
            host, work, "server_status_test.py", "ModelMetadataTest", env=env
        )
    for run, test_class, count in ((metadata, "ServerMetadataTest", 5),
                                   (versions, "ModelMetadataTest", 4)):  # fmt: skip
        mine = {k: v for k, v in OUT_OF_REACH.items() if k.startswith(f"{test_class}::")}
        run.check(count=count, out_of_reach=mine)
