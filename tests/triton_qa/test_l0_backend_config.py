"""Triton's qa/L0_backend_config (bash alone): ``--backend-config`` parsed, resolved and
applied as tritonserver does.

As its test.sh, one server a run (``--strict-model-config=false --log-verbose=1``) on a
model without a config (``no_config``: ``onnx_float32_float32_float32``'s version 1, made
by ``gen_qa_models.py --onnx``), and its checks of each run's log and of the config the
server completed:

* ``default-max-batch-size``: 4 unless given (``Adding default backend config setting``),
  the backend's own setting over every backend's (``Found overwritten default setting``,
  5, 6 and 8 from test.sh's three command lines); five malformed values stop the start
  with ``--backend-config option format is``;
* applied: a batching ONNX file auto-completes to ``max_batch_size`` 5 with dynamic
  batching (``Starting dynamic-batcher thread``), and with 0 to an unbatched config;
* the settings a backend starts with (the ``backend configuration:`` line's ``cmdline``
  map): at least four, a backend's ``min-compute-capability`` over the server's, and three
  of its own added to them.

test.sh's first runs use TensorFlow's savedmodel and ``tensorflow,`` settings: here the
ONNX model with ``onnxruntime,`` ones (the model's backend); its two TensorFlow batching
trials are the ONNX ones again, out of reach as TensorFlow. test.sh reads values by
splitting glog lines; here the same values are read from modelyard's log line's
``triton=`` field. About 40 s, in the default run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

COMMON_ARGS = ["--strict-model-config=false", "--log-verbose=1"]
NEGATIVE_PARSE_ARGS = [
    "--backend-config=,default-max-batch-size=3",
    "--backend-config=default-max-batch-size=",
    "--backend-config=default-max-batch-size",
    "--backend-config=tensorflow,default-max-batch-size=",
    "--backend-config=tensorflow,default-max-batch-size",
]
# test.sh's POSITIVE_TEST_ARGS (onnxruntime for tensorflow) and POSITIVE_TEST_ANSWERS
POSITIVE_TESTS = [
    (["--backend-config=onnxruntime,default-max-batch-size=5"], 5),
    (["--backend-config=default-max-batch-size=6"], 6),
    (["--backend-config=default-max-batch-size=7",
      "--backend-config=onnxruntime,default-max-batch-size=8"], 8),
]  # fmt: skip


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = harness.work_directory(tmp_path_factory.mktemp("qa"), "L0_backend_config")
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    models = work / "models"
    (models / "no_config").mkdir(parents=True)
    shutil.copytree(generated / "onnx_float32_float32_float32" / "1", models / "no_config" / "1")
    shutil.rmtree(generated)
    return models


def _args(models: Path, *given: str) -> list[str]:
    return [*given, f"--model-repository={models}", *COMMON_ARGS]


def _logged_max_batch_size(log: str, text: str) -> int:
    """parse_default_max_batch_size of test.sh's grep: the value after the setting's comma."""
    found = re.findall(re.escape(text) + r" default-max-batch-size,(\d+)", log)
    assert len(found) >= 1, log[-3000:]
    return int(found[0])


def _config_map(log: str) -> dict[str, str]:
    """get_config_map of test.sh: the ``backend configuration:`` record's map, its
    cmdline (the record's message a JSON string, as Triton writes it)."""
    line = next(line for line in log.splitlines() if "backend configuration:" in line)
    message = json.loads(line.split("] ", 1)[1])
    value = json.loads(message.split("backend configuration:\n", 1)[1])
    cmdline: dict[str, str] = value["cmdline"]
    return cmdline


def _config_of(host: LoopbackHost) -> str:
    """save_model_config of test.sh: the no_config model's config as the server completed it."""
    code, body = harness.curl(host, "/v2/models/no_config/config")
    assert code == "200", body
    return body


def test_default_max_batch_size(host: LoopbackHost, models: Path, tmp_path: Path) -> None:
    with harness.tritonserver(host, _args(models), tmp_path / "default.log") as server:
        pass
    assert _logged_max_batch_size(server.log(), "Adding default backend config setting:") == 4
    for index, (given, answer) in enumerate(POSITIVE_TESTS):
        log_path = tmp_path / f"positive_{index}.log"
        with harness.tritonserver(host, _args(models, *given), log_path) as server:
            pass
        assert _logged_max_batch_size(server.log(), "Found overwritten default setting:") == (
            answer
        ), given


def test_malformed_backend_config(host: LoopbackHost, models: Path, tmp_path: Path) -> None:
    for index, given in enumerate(NEGATIVE_PARSE_ARGS):
        log = harness.start_fails(host, _args(models, given), tmp_path / f"negative_{index}.log")
        assert "--backend-config option format is" in log, (given, log[-3000:])


def test_batching_on_and_off(host: LoopbackHost, models: Path, tmp_path: Path) -> None:
    given = "--backend-config=onnxruntime,default-max-batch-size=5"
    with harness.tritonserver(host, _args(models, given), tmp_path / "on.log") as server:
        config = _config_of(host)
    assert '"max_batch_size":5' in config, config
    assert '"dynamic_batching":{' in config, config
    assert "Starting dynamic-batcher thread" in server.log(), server.log()[-3000:]

    given = "--backend-config=onnxruntime,default-max-batch-size=0"
    with harness.tritonserver(host, _args(models, given), tmp_path / "off.log") as server:
        config = _config_of(host)
    assert '"max_batch_size":0' in config, config
    assert '"dynamic_batching"' not in config, config
    assert "Starting dynamic-batcher thread" not in server.log(), server.log()[-3000:]
    assert not re.search(r'"dynamic_batching": \{}', server.log())  # test.sh's own grep


def test_backend_configuration(host: LoopbackHost, models: Path, tmp_path: Path) -> None:
    with harness.tritonserver(host, _args(models), tmp_path / "defaults.log") as server:
        pass
    defaults = _config_map(server.log())
    assert len(defaults) >= 4, defaults

    given = "--backend-config=onnxruntime,min-compute-capability=XX"
    with harness.tritonserver(host, _args(models, given), tmp_path / "global.log") as server:
        pass
    assert _config_map(server.log())["min-compute-capability"] == "XX"

    given_specific = [f"--backend-config=onnxruntime,{key}=0" for key in ("a", "y", "z")]
    log_path = tmp_path / "specific.log"
    with harness.tritonserver(host, _args(models, *given_specific), log_path) as server:
        pass
    assert len(_config_map(server.log())) == len(defaults) + 3, server.log()[-3000:]
