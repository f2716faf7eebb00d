"""Triton's qa/L0_config_json (bash alone): ``GET /v2/models/<model>/config`` writes 64-bit
numbers as JSON numbers (dims, reshapes, versions, delays, timeouts, priority levels up
to 2^64-1) and an ensemble step's ``model_version``, ``-1`` too.

As its test.sh: eight trials, a server each, on ``savedmodel_nobatch_float32_float32_float32``
(TensorFlow there; here the ONNX model ``gen_qa_models.py --onnx`` makes with the same
tensors and versions, renamed: the file reads only its config) with each trial's edit, the
folder's ``simple_ensemble`` over it, and its identity model ``max_priority_level``; each
count of test.sh's ``grep -o`` the same here. About 15 s, in the default run.
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
MAX_UINT64, MAX_UINT32 = 2**64 - 1, 2**32 - 1
DYNAMIC = """dynamic_batching: { max_queue_delay_microseconds: 42 \
          default_queue_policy: { default_timeout_microseconds: 123 } \
          priority_queue_policy: { key: 1  value: { default_timeout_microseconds: 123 }} \
          priority_queue_policy: { key: 2  value: { default_timeout_microseconds: 123 }}}
"""
SEQUENCE = """sequence_batching: { max_sequence_idle_microseconds: 42 \
          oldest: { max_queue_delay_microseconds: 987 }}
"""
WARMUP_INPUTS = """    inputs [{
        key: "INPUT0"
        value: {
            data_type: TYPE_FP32
            dims: 16
            zero_data: true
        }
    }, {
        key: "INPUT1"
        value: {
            data_type: TYPE_FP32
            dims: 16
            random_data: true
        }
    }]
"""
WARMUP = (
    'model_warmup [{\n    name : "warmup 1"\n    batch_size: 1\n' + WARMUP_INPUTS
    + '  }, {\n    name : "warmup 2"\n    batch_size: 1\n' + WARMUP_INPUTS + "  }]\n"
)  # fmt: skip


def _edited(text: str, trial: str) -> str:
    """test.sh's edit of the model's config for ``trial``."""
    if trial == "reshape":  # sed "s/data_type:.*TYPE_FP32/data_type: TYPE_FP32\nreshape: ..."
        return re.sub(r"data_type:.*TYPE_FP32", "data_type: TYPE_FP32\nreshape: { shape: [ 16 ]}",
                      text)  # fmt: skip
    if trial == "specific":
        return re.sub(r"(?m)^version_policy:.*",
                      "version_policy: { specific: { versions: [1] }}", text)  # fmt: skip
    return text + {"dbatch": DYNAMIC, "sbatch": SEQUENCE, "warmup": WARMUP}.get(trial, "")


# each trial: the model asked, and test.sh's count of each pattern in the answer
TRIALS: dict[str, tuple[str, dict[str, int]]] = {
    "ios": (MODEL, {'"dims":[16]': 4}),
    "reshape": (MODEL, {'"reshape":{"shape":[16]}': 4}),
    "specific": (MODEL, {'"version_policy":{"specific":{"versions":[1]}}': 1}),
    "dbatch": (MODEL, {'"dynamic_batching":{': 1, '"max_queue_delay_microseconds":42': 1,
                       '"default_timeout_microseconds":123': 3}),
    "sbatch": (MODEL, {'"sequence_batching":{': 1, '"max_sequence_idle_microseconds":42': 1,
                       '"oldest":{': 1, '"max_queue_delay_microseconds":987': 1}),
    "ensemble": ("simple_ensemble", {'"model_version":1': 1, '"model_version":-1': 1}),
    "warmup": (MODEL, {'"dims":[16]': 8}),
    "max_priority_level": ("max_priority_level", {
        f'"priority_levels":{MAX_UINT64}': 1,
        f'"default_priority_level":{MAX_UINT32}': 1,
        f'"{MAX_UINT32 + 1}":{{"timeout_action":"REJECT","default_timeout_microseconds":'
        f'{MAX_UINT64},"allow_timeout_override":true,"max_queue_size":10}}': 1,
        f'"default_timeout_microseconds":{MAX_UINT64}': 1,
    }),
}  # fmt: skip


def _models(work: Path, generated: Path, trial: str) -> Path:
    """test.sh's ``models`` for ``trial``."""
    models = work / "models"
    shutil.rmtree(models, ignore_errors=True)
    models.mkdir()
    if trial == "max_priority_level":
        (models / trial / "1").mkdir(parents=True)
        shutil.copy(work / "max_priority_level.pbtxt", models / trial / "config.pbtxt")
        return models
    model = shutil.copytree(generated / MODEL, models / MODEL)
    config = model / "config.pbtxt"
    config.write_text(_edited(config.read_text(), trial))
    if trial == "ensemble":
        (models / "simple_ensemble" / "1").mkdir(parents=True)
        shutil.copy(work / "ensemble_config.pbtxt", models / "simple_ensemble" / "config.pbtxt")
    return models


def test_config_json(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_config_json")
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    repositories.renamed(generated / "onnx_nobatch_float32_float32_float32", MODEL)
    wrong = []
    for trial, (model, patterns) in TRIALS.items():
        models = _models(work, generated, trial)
        args = [f"--model-repository={models}"]
        with harness.tritonserver(host, args, tmp_path / f"{trial}.log"):
            code, body = harness.curl(host, f"/v2/models/{model}/config")
        counts = {pattern: body.count(pattern) for pattern in patterns}
        if code != "200" or counts != patterns:
            wrong.append(f"{trial}: {code} {counts}\n{body}")
    assert not wrong, "\n".join(wrong)
