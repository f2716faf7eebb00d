"""Triton's qa/L0_string_io: BYTES that are not UTF-8, over HTTP (binary and JSON) and gRPC.

As its test.sh: ``string_identity`` (qa/python_models, dims raised to 8) and the identity
model ``graphdef_nobatch_zero_1_object``, a TensorFlow graph there; here the python
model ``string_identity`` serves its generated config: Triton's onnxruntime backend passes
any bytes through, the Python onnxruntime binding only UTF-8 text (docs/triton-qa.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow


def test_string_io(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_string_io")
    generated = repositories.identity_models(work, tmp_path / "identity", ensembles=False)
    models = work / "models"
    string_identity = work.parent / "python_models" / "string_identity"
    target = models / "string_identity"
    (target / "1").mkdir(parents=True)
    shutil.copy(string_identity / "model.py", target / "1" / "model.py")
    config = (string_identity / "config.pbtxt").read_text().replace("[ 1 ]", "[ 8 ]")
    (target / "config.pbtxt").write_text(config)
    graphdef = models / "graphdef_nobatch_zero_1_object"
    shutil.copytree(generated / "onnx_nobatch_zero_1_object", graphdef)
    (graphdef / "1" / "model.onnx").unlink()
    shutil.copy(string_identity / "model.py", graphdef / "1" / "model.py")
    text = (graphdef / "config.pbtxt").read_text()
    (graphdef / "config.pbtxt").write_text(
        text.replace("onnx_nobatch_zero_1_object", graphdef.name).replace(
            'platform: "onnxruntime_onnx"', 'backend: "python"'
        )
    )
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "string_client_test.py")
    run.check(count=1)
