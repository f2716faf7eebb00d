"""Triton's qa/L0_backend_python/bls/test.sh: its ``bls_model_loading`` servers.

``qa/python_models/bls_model_loading`` runs three unittest cases in its ``initialize``
that load, reload (with a config override, then with file overrides, also under another
name) and unload ``onnx_int32_int32_int32`` through ``pb_utils.load_model``,
``unload_model`` and ``is_model_ready``, in explicit model-control mode; its execute
answers whether they passed, which ``../test_infer_shm_leak.py`` asks. The model is
loaded with curl, as test.sh loads it (any status but 400 passes). Each case's tearDown
sleeps 30 s, so each server takes about a minute and a half: both runs are
``TRITON_QA=full``'s (the unit tests of ``pb_utils``' model control and of the stub are
the default run's guard).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import (
    CLIENT_ENV,
    _python_model,
    _qa,
    _server_args,
    _shm_pages_unchanged,
)

pytestmark = pytest.mark.slow

MODEL = "bls_model_loading"
ONNX = "onnx_int32_int32_int32"
# test.sh's warmup variant: appended to the model's config
WARMUP = """model_warmup [{
    name : "regular sample"
    batch_size: 1
    inputs {
        key: "INPUT0"
        value: {
            data_type: TYPE_FP32
            dims: 4
            zero_data: false
        }
    }
    inputs {
        key: "INPUT1"
        value: {
            data_type: TYPE_FP32
            dims: 4
            zero_data: false
        }
    }
}]
"""


def _repository(tmp_path: Path) -> Path:
    """test.sh's models: bls_model_loading and the generated ONNX model with only its
    versions 2 and 3."""
    work = harness.work_directory(tmp_path, "L0_backend_python/bls")
    shutil.copy(harness.QA / "L0_backend_python" / "test_infer_shm_leak.py", work.parent)
    _python_model(work, MODEL)
    generated = tmp_path / "generated"
    harness.generate("gen_qa_models.py", "--onnx", f"--models_dir={generated}",
                     cwd=_qa(work) / "common")  # fmt: skip
    shutil.copytree(generated / ONNX, work / "models" / ONNX)
    shutil.rmtree(work / "models" / ONNX / "1")
    return work


def _curl_load(host: LoopbackHost) -> str:
    """test.sh's ``curl -s -w %{http_code} -X POST .../load``: the body, then the status."""
    done = subprocess.run(
        host.command(["curl", "-s", "-w", "%{http_code}", "-X", "POST",
                      f"localhost:8000/v2/repository/models/{MODEL}/load"]),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done.stdout


def _loaded(code: str, log: str) -> None:
    assert code[-3:] == "200", f"load answered {code!r}\n{log[-3000:]}"  # test.sh: not 400


@pytest.mark.triton_qa_full  # about 100 s: each of the model's three cases sleeps 30 s
@pytest.mark.parametrize("warmup", [False, True], ids=["plain", "warmup"])
def test_bls_model_loading(host: LoopbackHost, tmp_path: Path, warmup: bool) -> None:
    """test.sh's bls_model_loading server (the model loaded by curl, then asked by
    test_infer_shm_leak.py whether its cases passed) and its warmup variant (the same
    config with a warmup sample: the load must not answer 400)."""
    work = _repository(tmp_path)
    if warmup:
        with (work / "models" / MODEL / "config.pbtxt").open("a") as config:
            config.write(WARMUP)
    args = _server_args(work, "--model-control-mode=explicit")
    log_name = f"{MODEL}_server{'_warmup' if warmup else ''}.log"
    with (
        host.own_shm(tmp_path / "shm") as shm,
        _shm_pages_unchanged(shm),
        harness.tritonserver(host, args, work / log_name, cwd=work) as server,
    ):
        _loaded(_curl_load(host), server.log())
        if not warmup:
            run = harness.run_qa_file(
                host, work, "../test_infer_shm_leak.py", env={**CLIENT_ENV, "MODEL_NAME": MODEL},
                pytest_style=True,
            )  # fmt: skip
            run.check(count=1)
