"""Triton's qa/L0_sagemaker, its single-model half: the SageMaker front door
(``--allow-sagemaker``), started as its test.sh starts it.

test.sh starts most servers with Triton's SageMaker ``serve`` script (vendored unchanged
from ``docker/sagemaker/serve``), which serves ``/opt/ml/model``: here each runs in a
mount namespace of its own whose ``/opt`` is an empty tmpfs holding only that link to
the test's ``models`` (nothing of the host's ``/opt`` changes), with this checkout's
``tritonserver`` first on its ``PATH``. ``models/sm_model`` is ``gen_qa_models.py
--onnx``'s ``onnx_int32_int32_int32`` (version 1). In test.sh's order: ``sagemaker_test.py``
(unchanged, 9 tests) on the default port, on ``SAGEMAKER_BIND_TO_PORT``, and within a safe
port range (a server whose HTTP port is outside it refused at start in Triton's words);
``serve``'s own refusal of a model name with no directory and its warning when none is
given; an invocation of an unnamed model (Triton's placeholder name, an unknown model);
``/ping`` not ready when the model failed to load.

The multi-model half: ``sagemaker_multi_model_test.py`` (unchanged, 7 tests) against
``serve`` with ``SAGEMAKER_MULTI_MODEL=true``, whose namespace also links
``/opt/ml/models`` to the test's ``models``, holding test.sh's three model folders:
``onnx_int32_int32_int32`` and ``gen_qa_identity_models.py``'s ``onnx_zero_1_float32``
renamed, and the ensemble of Python's ``add_sub`` between ``gen_qa_models.py
--ensemble``'s ``nop_TYPE_FP32_-1`` identity steps.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.support.netns import HostProcess, LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

FOLDER = "L0_sagemaker"
BASE = "onnx_int32_int32_int32"
UNIT_TEST_COUNT = 9  # test.sh's
MULTI_MODEL_UNIT_TEST_COUNT = 7
SERVE = harness.VENDOR / "server" / "docker" / "sagemaker" / "serve"
# the variables serve and the tests read, emptied between runs (serve tests -n)
SAGEMAKER_VARIABLES = ("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME", "SAGEMAKER_BIND_TO_PORT",
                       "SAGEMAKER_SAFE_PORT_RANGE", "SAGEMAKER_MULTI_MODEL")  # fmt: skip


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path("/opt").is_dir():
        pytest.skip("serve links /opt/ml/model: the host has no /opt to mount over")
    made = harness.work_directory(tmp_path_factory.mktemp("qa"), FOLDER)
    generated = made / "generated"
    repositories.generated(made, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    model = shutil.copytree(generated / BASE, made / "models" / "sm_model")
    for version in ("2", "3"):
        shutil.rmtree(model / version)
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace(BASE, "sm_model", 1))
    return made


@pytest.fixture(scope="module")
def multi_model_work(work: Path) -> Path:
    """test.sh's MME folders, beside sm_model in ``models``."""
    generated = work / "generated"
    model1 = shutil.copytree(generated / BASE, work / "models/123456789abcdefghi/model")
    for version in ("2", "3"):
        shutil.rmtree(model1 / version)
    _sed(model1 / "config.pbtxt", BASE, "sm_mme_model_1")
    identity = repositories.identity_models(work, work / "identity", ensembles=False)
    model2 = shutil.copytree(identity / "onnx_zero_1_float32",
                             work / "models/987654321ihgfedcba/model")  # fmt: skip
    _sed(model2 / "config.pbtxt", "onnx_zero_1_float32", "sm_mme_model_2")
    ensemble = work / "models/123456789ensemble/model"
    name = "python_float32_float32_float32"
    python_models = work.parent / "python_models"
    step = ensemble / name
    (step / "1").mkdir(parents=True)
    shutil.copy(python_models / "add_sub/model.py", step / "1")
    config = (python_models / "add_sub/config.pbtxt").read_text()
    (step / "config.pbtxt").write_text(_without_labels(config) + "max_batch_size: 64\n")
    fan = ensemble / f"fan_{name}"
    (fan / "1").mkdir(parents=True)
    shutil.copy(python_models / "add_sub/model.py", fan / "1")
    config = _without_labels((python_models / "fan_add_sub/config.pbtxt").read_text())
    config = config.replace('model_name: "ENSEMBLE_MODEL_NAME"', f'model_name: "{name}"')
    config = re.sub(r"name:.*", f'name: "fan_{name}"', config, count=1)
    (fan / "config.pbtxt").write_text(config + "max_batch_size: 64\n")
    repositories.generated(work, "gen_qa_models.py", "--ensemble", f"--models_dir={generated}")
    shutil.copytree(generated / "nop_TYPE_FP32_-1", ensemble / "nop_TYPE_FP32_-1")
    (ensemble / "nop_TYPE_FP32_-1" / "1").mkdir(exist_ok=True)
    return work


def _sed(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def _without_labels(config: str) -> str:
    return re.sub(r"label_filename:.*", "", config)


def _environment(**variables: str) -> dict[str, str]:
    """serve's environment: this checkout's tritonserver first on the PATH, the SageMaker
    variables test.sh exports (the others emptied)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"PATH": path, **dict.fromkeys(SAGEMAKER_VARIABLES, ""), **variables}


def _serve(host: LoopbackHost, work: Path, log: Path, **variables: str) -> HostProcess:
    """``serve``, as test.sh runs it, its /opt/ml/model (and /opt/ml/models) the test's
    models."""
    models = work / "models"
    argv = [*harness.in_opt_ml(model=models, models=models), "bash", str(SERVE)]
    return host.start(argv, log, cwd=work, env=harness.environment(_environment(**variables)))


def _stop(served: HostProcess) -> None:
    """Stop serve and the tritonserver it started (as test.sh kills the server's pid): its
    whole process group, waited for until none of it is left (its port free)."""
    group = served.process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        served.process.poll()  # reaped, so that the group is gone once its server is
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    served.stop()


def _ping(host: LoopbackHost, port: int = 8080) -> str:
    code, _ = harness.curl_at(host, f"localhost:{port}/ping")
    return code


def _ready(host: LoopbackHost, process: HostProcess, port: int = 8080) -> None:
    """test.sh's ``sagemaker_wait_for_server_ready``."""
    deadline = time.monotonic() + 60
    while _ping(host, port) != "200":
        assert process.process.poll() is None, process.log()[-3000:]
        assert time.monotonic() < deadline, process.log()[-3000:]
        time.sleep(0.2)


def _client_tests(host: LoopbackHost, work: Path, **variables: str) -> None:
    run = harness.run_qa_file(host, work, "sagemaker_test.py", "SageMakerTest", env=variables)
    run.check(count=UNIT_TEST_COUNT)


def test_single_model_endpoint(host: LoopbackHost, work: Path, tmp_path: Path) -> None:
    """The default port, SAGEMAKER_BIND_TO_PORT, and a safe port range."""
    named = {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "sm_model"}
    served = _serve(
        host, work, tmp_path / "default.log", SAGEMAKER_TRITON_DEFAULT_MODEL_NAME="sm_model"
    )
    try:
        _ready(host, served)
        _client_tests(host, work)
    finally:
        _stop(served)
    assert "Started Sagemaker HTTPService at" in served.log()
    served = _serve(host, work, tmp_path / "port.log", **named, SAGEMAKER_BIND_TO_PORT="8000")
    try:
        _ready(host, served, 8000)
        _client_tests(host, work, SAGEMAKER_BIND_TO_PORT="8000")
    finally:
        _stop(served)
    args = ["--allow-sagemaker=true", "--allow-grpc", "false", "--allow-http", "true",
            "--allow-metrics", "false", "--model-control-mode=explicit", "--load-model=sm_model",
            f"--model-repository={work / 'models'}",
            "--sagemaker-safe-port-range=8081-9000"]  # fmt: skip
    said = harness.start_fails(host, args, tmp_path / "range.log", cwd=work)
    assert "The server cannot listen to HTTP requests at port 8000" in said, said[-3000:]
    served = _serve(host, work, tmp_path / "range_serve.log", **named,
                    SAGEMAKER_SAFE_PORT_RANGE="8081-9000")  # fmt: skip
    try:
        _ready(host, served)
        _client_tests(host, work)
    finally:
        _stop(served)


def test_default_model_name(host: LoopbackHost, work: Path, tmp_path: Path) -> None:
    """serve's refusal of a name with no directory, its warning where none is given, and
    an invocation of a server started without one."""
    served = _serve(host, work, tmp_path / "incorrect.log",
                    SAGEMAKER_TRITON_DEFAULT_MODEL_NAME="incorrect_model_name")  # fmt: skip
    assert served.process.wait(30) != 0
    assert ("ERROR: Directory with provided SAGEMAKER_TRITON_DEFAULT_MODEL_NAME "
            "incorrect_model_name does not exist") in served.log()  # fmt: skip
    served = _serve(host, work, tmp_path / "unset.log")
    try:
        _ready(host, served)
    finally:
        _stop(served)
    assert "WARNING: No SAGEMAKER_TRITON_DEFAULT_MODEL_NAME provided" in served.log()
    args = ["--allow-sagemaker=true", "--allow-grpc", "false", "--allow-http", "false",
            "--allow-metrics", "false", f"--model-repository={work / 'models'}",
            "--model-control-mode=explicit", "--exit-on-error=false"]  # fmt: skip
    env = _environment()
    with harness.tritonserver(host, args, tmp_path / "unnamed.log", wait="/ping", cwd=work,
                              env=env, http_port=8080):  # fmt: skip
        code, body = harness.curl_at(host, "localhost:8080/invocations", "-X", "POST",
                                     "--data-raw", "dummy")  # fmt: skip
    assert code != "200", body
    unknown = "Request for unknown model: 'unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME'"
    assert f"{unknown} is not found" in body, body


def test_ping_is_not_ready_when_the_model_failed(
    host: LoopbackHost, work: Path, tmp_path: Path
) -> None:
    broken = work / "broken"
    model = shutil.copytree(work / "models" / "sm_model", broken / "sm_model")
    for file in (model / "1").iterdir():
        file.unlink()
    args = ["--allow-sagemaker=true", "--allow-grpc", "false", "--allow-http", "false",
            "--allow-metrics", "false", f"--model-repository={broken}",
            "--model-control-mode=explicit", "--load-model=sm_model",
            "--exit-on-error=false"]  # fmt: skip
    server = host.start([*harness.TRITONSERVER, *args], tmp_path / "broken.log", cwd=work,
                        env=harness.environment(_environment()))  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "Started Sagemaker HTTPService at" not in server.log():  # it answers from then
            assert server.process.poll() is None and time.monotonic() < deadline, server.log()
            time.sleep(0.2)
        assert _ping(host) not in ("200", "000"), server.log()[-3000:]
    finally:
        server.stop()


def test_multi_model_endpoint(host: LoopbackHost, multi_model_work: Path, tmp_path: Path) -> None:
    """test.sh's MME run: load, list, get, invoke, unload, and an ensemble's load, invoke
    and unload."""
    work = multi_model_work
    variables = {"SAGEMAKER_MULTI_MODEL": "true", "SAGEMAKER_TRITON_LOG_VERBOSE": "true"}
    served = _serve(host, work, tmp_path / "mme.log", **variables)
    try:
        _ready(host, served)
        run = harness.run_qa_file(host, work, "sagemaker_multi_model_test.py",
                                  "SageMakerMultiModelTest", env=variables)  # fmt: skip
        run.check(count=MULTI_MODEL_UNIT_TEST_COUNT)
    finally:
        _stop(served)
    log = served.log()
    assert "Triton is running in SageMaker MME mode" in log
    assert "Model repository registered: /opt/ml/models/123456789abcdefghi" in log
    assert "Model repository unregistered: /opt/ml/models/123456789ensemble/model" in log
