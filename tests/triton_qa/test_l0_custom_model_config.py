"""Triton's qa/L0_custom_model_config (bash alone): ``--model-config-name`` picks a
model's ``configs/<name>.pbtxt`` over its ``config.pbtxt``, falls back to the latter
where the model has no such file, and an empty name stops the server at start.

As its test.sh: ``savedmodel_nobatch_float32_float32_float32`` (TensorFlow there; here
the ONNX model ``gen_qa_models.py --onnx`` makes with the same tensors and versions,
renamed) with test.sh's four configs, each pinning other versions; a server a run, whose
``GET .../config`` must hold the chosen config's ``version_policy`` exactly once. About
10 s, in the default run.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

MODEL = "savedmodel_nobatch_float32_float32_float32"
# test.sh's configs: where each is, the versions it pins
CONFIGS = {"config.pbtxt": "1,3", "configs/h100.pbtxt": "1", "configs/v100.pbtxt": "2",
           "configs/config.pbtxt": "3"}  # fmt: skip
# test.sh's runs: --model-config-name (None: not given), the versions the config says
RUNS = [(None, "1,3"), ("h100", "1"), ("v100", "2"), ("config", "3"), ("h200", "1,3")]


def repository(work: Path) -> Path:
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    models = work / "models"
    models.mkdir()
    onnx = repositories.renamed(generated / "onnx_nobatch_float32_float32_float32", MODEL)
    model = shutil.move(onnx, models / MODEL)
    shutil.rmtree(generated)
    (model / "configs").mkdir()
    text = (model / "config.pbtxt").read_text()
    for path, versions in CONFIGS.items():  # test.sh's sed of the version_policy line
        policy = f"version_policy: {{ specific: {{ versions: [{versions}] }}}}"
        (model / path).write_text(re.sub(r"(?m)^version_policy:.*", policy, text))
    return models


def test_custom_model_config(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_custom_model_config")
    models = repository(work)
    for name, versions in RUNS:
        args = [f"--model-repository={models}"]
        args += [] if name is None else [f"--model-config-name={name}"]
        with harness.tritonserver(host, args, tmp_path / f"{name}.log"):
            code, body = harness.curl(host, f"/v2/models/{MODEL}/config")
        assert code == "200", body
        policy = f'"version_policy":{{"specific":{{"versions":[{versions}]}}}}'
        assert body.count(policy) == 1, (name, body)
    log = harness.start_fails(
        host, [f"--model-repository={models}", "--model-config-name="], tmp_path / "empty.log"
    )
    assert "model-config-name" in log, log[-3000:]
