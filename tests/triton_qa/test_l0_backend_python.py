"""Triton's qa/L0_backend_python: its python-backend models, as its test.sh files run them.

Each subfolder's test.sh builds a repository of ``qa/python_models`` (with its own
edits), starts the server, runs its test file and checks the server's log and
``/dev/shm``. Here each runs the same way, with ``TEST_JETSON=1``: Triton's switch for
machines where its shared-memory probe does not apply (``qa/common/shm_util.py``:
``ShmLeakDetector`` then never imports ``triton_shm_monitor``, the C extension its CI
builds to read the free space of the python backend's shared-memory regions; modelyard's
python stub passes arrays over a socket pair and makes no such region). test.sh's own
check stays: it counts the entries of ``/dev/shm`` before the server starts and after it
ends, and the counts must be equal. Triton's CI runs each test.sh in a container with a
``/dev/shm`` of its own; here the server and its clients get one too (a directory of the
test's, bound on ``/dev/shm`` in their mount namespaces), so what other work on the
machine does with the machine's ``/dev/shm`` cannot move the count.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.conftest import FULL

pytestmark = pytest.mark.slow

# what L0_backend_python/test.sh exports for every subfolder's test.sh: the server's
# backends are where Triton installs them; the shm probe is Jetson's (above)
BACKEND_DIR = "/opt/tritonserver/backends"
CLIENT_ENV = {"TEST_JETSON": "1", "TEST_WINDOWS": "0"}


def _qa(work: Path) -> Path:
    """The work directory's ``qa`` folder (``work`` is L0_backend_python or a subfolder)."""
    return next(folder for folder in work.parents if folder.name == "qa")


def _python_model(work: Path, source: str, name: str | None = None) -> Path:
    """test.sh's ``mkdir -p models/NAME/1/; cp ../../python_models/SOURCE/model.py
    ./models/NAME/1/; cp ../../python_models/SOURCE/config.pbtxt ./models/NAME/``."""
    name = name or source
    origin = _qa(work) / "python_models" / source
    model = work / "models" / name
    (model / "1").mkdir(parents=True)
    shutil.copy(origin / "model.py", model / "1" / "model.py")
    if (origin / "config.pbtxt").exists():
        shutil.copy(origin / "config.pbtxt", model / "config.pbtxt")
    return model


def _sed(path: Path, pattern: str, replacement: str) -> None:
    path.write_text(re.sub(pattern, replacement, path.read_text(), flags=re.MULTILINE))


def _append(path: Path, line: str) -> None:
    with path.open("a") as file:
        file.write(line + "\n")


@contextlib.contextmanager
def _shm_pages_unchanged(directory: Path) -> Iterator[None]:
    """common.sh's ``get_shm_pages`` before and after: as many entries in /dev/shm."""
    before = sorted(p.name for p in directory.iterdir())
    yield
    after = sorted(p.name for p in directory.iterdir())
    assert len(after) == len(before), (
        f"Shared memory pages were not cleaned properly: {len(before)} before starting "
        f"the server ({before}), {len(after)} after it ended ({after})"
    )


def _server_args(work: Path, *extra: str) -> list[str]:
    """A subfolder's SERVER_ARGS: its ``models``, Triton's backends, verbose logs."""
    return [f"--model-repository={work / 'models'}", f"--backend-directory={BACKEND_DIR}",
            *extra, "--log-verbose=1"]  # fmt: skip


def _run(
    host: LoopbackHost,
    tmp_path: Path,
    work: Path,
    test_file: str,
    *selection: str,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    count: int | None = None,
    out_of_reach: dict[str, str] | None = None,
    server_log: str = "server.log",
) -> str:
    """test.sh's run_server, its test file (pytest, as test.sh runs it), kill_server, with
    /dev/shm counted before and after; the server's log."""
    args = args if args is not None else _server_args(work)
    with host.own_shm(tmp_path / "shm") as shm, _shm_pages_unchanged(shm):
        with harness.tritonserver(host, args, work / server_log, cwd=work) as server:
            run = harness.run_qa_file(
                host, work, test_file, *selection, env={**CLIENT_ENV, **(env or {})},
                pytest_style=True,
            )  # fmt: skip
            run.check(count=count, out_of_reach=out_of_reach)
        return server.log()


# -- L0_backend_python/test.sh: python_test.py and the checks of its own ---------------


def _retyped(work: Path, name: str, dtype: str, *extra: str) -> None:
    """test.sh's ``cp -r ./models/identity_fp32 ./models/NAME`` with its seds."""
    model = Path(shutil.copytree(work / "models" / "identity_fp32", work / "models" / name))
    config = model / "config.pbtxt"
    _sed(config, r"^name:.*", f'name: "{name}"')
    _sed(config, "TYPE_FP32", dtype)
    for line in extra:
        if line.startswith("max_batch_size:"):
            _sed(config, r"^max_batch_size:.*", line)
        elif line == "no max_batch_size":
            _sed(config, r"^max_batch_size:.*", "")
        else:
            _append(config, line)


def _main_models(work: Path) -> None:
    for name in ("identity_fp32", "identity_bf16"):
        _python_model(work, name)
    _retyped(work, "identity_uint8", "TYPE_UINT8", "max_batch_size: 8",
             "dynamic_batching { preferred_batch_size: [8], max_queue_delay_microseconds: "
             "12000000 }")  # fmt: skip
    _retyped(work, "identity_uint8_nobatch", "TYPE_UINT8", "no max_batch_size")
    _retyped(work, "identity_uint32", "TYPE_UINT32")
    _retyped(work, "identity_bool", "TYPE_BOOL")
    default = Path(shutil.copytree(work / "models" / "identity_fp32",
                                   work / "models" / "default_model_name"))  # fmt: skip
    (default / "1" / "model.py").rename(default / "1" / "mymodel.py")
    _sed(default / "config.pbtxt", r"^name:.*", 'name: "default_model_name"')
    _append(default / "config.pbtxt", 'default_model_filename: "mymodel.py"')
    config = _python_model(work, "pytorch_fp32_fp32") / "config.pbtxt"
    _sed(config, r"^name:.*", 'name: "pytorch_fp32_fp32"')
    for name in ("delayed_model", "init_args", "optional", "non_contiguous", "string",
                 "string_fixed", "dlpack_identity"):  # fmt: skip
        _python_model(work, name)


def _children(pid: int) -> list[int]:
    """``pgrep --parent PID``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# python_test.py's tests (with TEST_JETSON set: its two CUDA shared memory tests are not
# defined); test_growth_error is not run (docs/triton-qa.md): it sends 1 GiB and 512 MiB
# tensors over HTTP for Triton's python-backend shared-memory pool to refuse in its words
PYTHON_TESTS = [
    "test_async_infer", "test_bool", "test_bf16", "test_infer_pytorch", "test_init_args",
    "test_unicode", "test_optional_input", "test_string", "test_non_contiguous",
]  # fmt: skip


@pytest.mark.triton_qa_full  # about 45 s: fifteen models, five servers
def test_python_test(host: LoopbackHost, tmp_path: Path) -> None:
    """L0_backend_python/test.sh itself: python_test.py against its repository (TRITON_DIR
    is where the QA tree is, as in Triton's CI: init_args checks its model's path), then
    the server killed with SIGKILL, whose model processes must end within 10 s; a model
    of several files, a model that reads the server's environment, and one whose process
    is killed while it initializes (the server must not start, and say which stub is not
    healthy). Its KIND_GPU run is test.sh's own to skip where TEST_JETSON is set."""
    work = harness.work_directory(tmp_path, "L0_backend_python")  # MODELDIR
    env = {"TRITON_DIR": str(tmp_path), "MY_ENV": "MY_ENV"}
    base = _server_args(work)
    args = [*base, "--backend-config=python,shm-default-byte-size=5242880"]
    _main_models(work)
    shm = tmp_path / "shm"
    with host.own_shm(shm):
        log_path = work / "inference_server.log"
        with _shm_pages_unchanged(shm), harness.tritonserver(
            host, args, log_path, cwd=work, env=env
        ):
            run = harness.run_qa_file(
                host, work, "python_test.py", *(f"PythonTest::{test}" for test in PYTHON_TESTS),
                env=CLIENT_ENV, pytest_style=True,
            )  # fmt: skip
            run.check(count=len(PYTHON_TESTS))

        # Triton non-graceful exit: the model processes end with the server
        with harness.tritonserver(host, args, work / "kill9.log", cwd=work, env=env) as server:
            pid = server.process.process.pid
            stubs = _children(pid)
            assert stubs, "the server started no model process"
            server.process.kill()
            deadline = time.monotonic() + 10
            while any(map(_alive, stubs)) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not any(map(_alive, stubs)), f"model processes {stubs} outlived the server"

        checks = [("multi_file", "identity_fp32"), ("model_env", "model_env")]
        for name, config_of in checks:
            shutil.rmtree(work / "models")
            model = _python_model(work, name)
            for extra in (_qa(work) / "python_models" / name).glob("*.py"):
                shutil.copy(extra, model / "1")
            if config_of != name:
                shutil.copy(_qa(work) / "python_models" / config_of / "config.pbtxt", model)
                _sed(model / "config.pbtxt", r"^name:.*", f'name: "{name}"')
            with _shm_pages_unchanged(shm), harness.tritonserver(
                host, args, work / f"{name}.log", cwd=work, env=env
            ):
                pass

        shutil.rmtree(work / "models")
        _python_model(work, "init_exit")
        with _shm_pages_unchanged(shm):
            log = harness.start_fails(host, args, work / "init_exit.log")
        assert "Stub process 'init_exit_0_0' is not healthy." in log, log[-3000:]


# -- model_control, ensemble, argument_validation ---------------------------------------


@pytest.mark.triton_qa_full
def test_model_control(host: LoopbackHost, tmp_path: Path) -> None:
    """model_control/test.sh: a python model and an ensemble over it loaded and unloaded
    five times over, in explicit mode."""
    work = harness.work_directory(tmp_path, "L0_backend_python/model_control")
    _python_model(work, "identity_fp32")
    ensemble = work / "models" / "simple_identity_fp32"
    (ensemble / "1").mkdir(parents=True)
    shutil.copy(_qa(work) / "python_models" / "simple_identity_fp32" / "config.pbtxt", ensemble)
    args = _server_args(work, "--model-control-mode=explicit")
    _run(host, tmp_path, work, "model_control_test.py", args=args, count=1)


@pytest.mark.triton_qa_full
def test_ensemble(host: LoopbackHost, tmp_path: Path) -> None:
    """ensemble/test.sh: an ensemble of two add_sub python models. Its ensemble_gpu (a
    TorchScript model on a KIND_GPU instance after add_sub) is left out of the repository:
    with no GPU it fails to load, and the server with it."""
    work = harness.work_directory(tmp_path, "L0_backend_python/ensemble")
    ensemble = work / "models" / "ensemble"
    (ensemble / "1").mkdir(parents=True)
    shutil.copy(_qa(work) / "python_models" / "ensemble" / "config.pbtxt", ensemble)
    for name in ("add_sub_1", "add_sub_2"):
        _python_model(work, "add_sub", name)
    _run(
        host, tmp_path, work, "ensemble_test.py", count=2,
        out_of_reach={"EnsembleTest::test_ensemble_gpu": "a KIND_GPU TorchScript step"},
    )  # fmt: skip


def test_argument_validation(host: LoopbackHost, tmp_path: Path) -> None:
    """argument_validation/test.sh: the model runs unittest cases of pb_utils' argument
    checks inside its execute (``../test_infer_shm_leak.py`` asks it and reads 1)."""
    work = harness.work_directory(tmp_path, "L0_backend_python/argument_validation")
    shutil.copy(harness.QA / "L0_backend_python" / "test_infer_shm_leak.py", work.parent)
    _run(host, tmp_path, work, "../test_infer_shm_leak.py", count=1,
         env={"MODEL_NAME": "argument_validation"})  # fmt: skip


# -- decoupled -------------------------------------------------------------------------


# decoupled_test.py's tests run here; test_decoupled_bls is not (docs/triton-qa.md): its
# response thread adds tensors on a GPU first, and on failing waits for a response
# without end
DECOUPLED_TESTS = [
    "test_decoupled_execute_error", "test_decoupled_bls_stream",
    "test_decoupled_return_response_error",
    "test_decoupled_send_after_close_error", "test_decoupled_execute_cancel",
    "test_decoupled_raise_exception",
]  # fmt: skip


@pytest.mark.triton_qa_full  # about 25 s: its batch waits out a 12 s queue delay
def test_decoupled(host: LoopbackHost, tmp_path: Path) -> None:
    """decoupled/test.sh: its decoupled models (BLS from their response threads, to a
    decoupled model too; errors in and after execute; cancellation), with identity_fp32,
    execute_cancel, python_backend's square_int32 and dlpack_add_sub beside them; the
    log's counts of the models' messages (each level once at least; three finalizes)."""
    work = harness.work_directory(tmp_path, "L0_backend_python/decoupled")
    for name in ("identity_fp32", "execute_cancel", "dlpack_add_sub"):
        _python_model(work, name)
    square = work / "models" / "square_int32"
    (square / "1").mkdir(parents=True)
    examples = harness.VENDOR / "python_backend" / "examples" / "decoupled"
    shutil.copy(examples / "square_model.py", square / "1" / "model.py")
    shutil.copy(examples / "square_config.pbtxt", square / "config.pbtxt")
    log = _run(host, tmp_path, work, "decoupled_test.py",
               *(f"DecoupledTest::{test}" for test in DECOUPLED_TESTS),
               count=len(DECOUPLED_TESTS), server_log="decoupled_server.log")  # fmt: skip
    for message in ("Specific Msg!", "Info Msg!", "Warning Msg!", "Error Msg!"):
        assert message in log, message
    assert log.count("Finalize invoked") == 3 and log.count("Finalize complete...") == 3, log


# -- async_execute ---------------------------------------------------------------------


@pytest.mark.triton_qa_full  # about 45 s: its executes sleep 4 to 10 s
def test_async_execute(host: LoopbackHost, tmp_path: Path) -> None:
    """async_execute/test.sh: decoupled models whose ``async def execute`` runs beside the
    next requests' (one of them through BLS to the other, a decoupled model), and one
    that raises, which the server's log must say."""
    work = harness.work_directory(tmp_path, "L0_backend_python/async_execute")
    for name in ("async_execute_decouple", "async_execute_decouple_bls"):
        _python_model(work, name)
    log_name = "concurrency_test.server.log"
    _run(host, tmp_path, work, "concurrency_test.py", count=6, server_log=log_name,
         env={"SERVER_LOG": log_name})  # fmt: skip


# -- response_sender -------------------------------------------------------------------

RESPONSE_SENDER_MODELS = {  # test.sh's eight models of one config: name -> (file, lines)
    "response_sender": ("model.py", []),
    "response_sender_decoupled": ("model.py", ["model_transaction_policy { decoupled: True }"]),
    "response_sender_async": ("model_async.py", []),
    "response_sender_decoupled_async": (
        "model_async.py", ["model_transaction_policy { decoupled: True }"]),
    "response_sender_batching": (
        "model.py", ["dynamic_batching { max_queue_delay_microseconds: 500000 }"]),
    "response_sender_decoupled_batching": ("model.py", [
        "model_transaction_policy { decoupled: True }",
        "dynamic_batching { max_queue_delay_microseconds: 500000 }"]),
    "response_sender_async_batching": (
        "model_async.py", ["dynamic_batching { max_queue_delay_microseconds: 500000 }"]),
    "response_sender_decoupled_async_batching": ("model_async.py", [
        "model_transaction_policy { decoupled: True }",
        "dynamic_batching { max_queue_delay_microseconds: 500000 }"]),
}  # fmt: skip


@pytest.mark.triton_qa_full  # about 30 s
def test_response_sender(host: LoopbackHost, tmp_path: Path) -> None:
    """response_sender/test.sh: response_sender_test.py (21 tests, two skipped in the file
    itself) against the eight variants of one model (decoupled or not, async or not,
    batching or not) that send responses before, on and after execute's return; then
    response_sender_complete_final_test.py, a model that sends after its FINAL."""
    work = harness.work_directory(tmp_path, "L0_backend_python/response_sender")
    source = _qa(work) / "python_models" / "response_sender"
    for name, (model_file, lines) in RESPONSE_SENDER_MODELS.items():
        model = work / "models" / name
        (model / "1").mkdir(parents=True)
        shutil.copy(source / "model_common.py", model / "1")
        shutil.copy(source / model_file, model / "1" / "model.py")
        shutil.copy(source / "config.pbtxt", model)
        for line in lines:
            _append(model / "config.pbtxt", line)
    log_name = "response_sender_test.server.log"
    skipped = "skipped by the file itself (in Triton the model's unload would hang)"
    _run(host, tmp_path, work, "response_sender_test.py", count=21, server_log=log_name,
         env={"SERVER_LOG": log_name}, out_of_reach={
             "ResponseSenderTest::test_non_decoupled_zero_response_post_return": skipped,
             "ResponseSenderTest::test_non_decoupled_two_response_post_return": skipped,
         })  # fmt: skip
    shutil.rmtree(work / "models")
    _python_model(work, "response_sender_complete_final")
    log_name = "response_sender_complete_final_test.server.log"
    _run(host, tmp_path, work, "response_sender_complete_final_test.py", count=1,
         server_log=log_name, env={"SERVER_LOG": log_name})  # fmt: skip


# -- bls ---------------------------------------------------------------------------------

BLS_OUTSIDE_EXECUTE = "BLS is only supported during the 'execute' function."


@pytest.mark.parametrize(
    "model",
    ["bls_init_error", pytest.param("bls_finalize_error", marks=pytest.mark.triton_qa_full)],
)
def test_bls_outside_execute(host: LoopbackHost, tmp_path: Path, model: str) -> None:
    """bls/test.sh's two models that call another model from initialize (the server must
    not start) and from finalize (it stops): the log says BLS is only for execute."""
    work = harness.work_directory(tmp_path, "L0_backend_python/bls")
    _python_model(work, model)
    args = _server_args(work)
    with host.own_shm(tmp_path / "shm") as shm, _shm_pages_unchanged(shm):
        if model == "bls_init_error":
            log = harness.start_fails(host, args, work / "server.log")
        else:
            with harness.tritonserver(host, args, work / "server.log") as server:
                pass
            log = server.log()
    assert BLS_OUTSIDE_EXECUTE in log, log[-3000:]


@pytest.mark.triton_qa_full
def test_bls_parameters(host: LoopbackHost, tmp_path: Path) -> None:
    """bls/test.sh's bls_parameters_test.py (run as ``python3 FILE``): a model that calls
    itself through BLS three times over, each call adding parameters of each type."""
    work = harness.work_directory(tmp_path, "L0_backend_python/bls")
    model = work / "params_models" / "bls_parameters"
    (model / "1").mkdir(parents=True)
    source = _qa(work) / "python_models" / "bls_parameters"
    shutil.copy(source / "model.py", model / "1")
    shutil.copy(source / "config.pbtxt", model)
    args = [f"--model-repository={work / 'params_models'}", f"--backend-directory={BACKEND_DIR}",
            "--log-verbose=1"]  # fmt: skip
    with (
        host.own_shm(tmp_path / "shm") as shm,
        _shm_pages_unchanged(shm),
        harness.tritonserver(host, args, work / "bls_parameters.server.log", cwd=work),
    ):
        run = harness.run_qa_file(host, work, "bls_parameters_test.py", env=CLIENT_ENV)
        run.check(count=1)


# -- io --------------------------------------------------------------------------------


@pytest.mark.triton_qa_full
def test_io(host: LoopbackHost, tmp_path: Path) -> None:
    """io/test.sh's last server (add_sub and dlpack_io_identity_decoupled): the outputs a
    response carries are those the request asked for. Its decoupled twin and the other
    four servers' tests put tensors on a GPU (docs/triton-qa.md)."""
    work = harness.work_directory(tmp_path, "L0_backend_python/io")
    for name in ("add_sub", "dlpack_io_identity_decoupled"):
        _python_model(work, name)
    _run(host, tmp_path, work, "io_test.py", "IOTest::test_requested_output_default", count=1,
         server_log="io_server.log")  # fmt: skip


# -- lifecycle -------------------------------------------------------------------------

LIFECYCLE_TESTS = [
    "test_error_code",
    "test_execute_cancel",
    "test_batch_error",
    "test_infer_pymodel_error",
    "test_triton_grpc_error_error_on",
    "test_triton_grpc_error_multithreaded",
    "test_triton_grpc_error_cancel",
    "test_triton_grpc_error_error_off",
]
# the default run: a response's error codes, an exception in execute, a stream's first
# error ending it (about 1.5 s); TRITON_QA=full runs all eight five times, as test.sh
# does (test_batch_error waits out its model's 12 s queue delay, test_execute_cancel 4 s)
LIFECYCLE_DEFAULT = [
    "test_error_code",
    "test_infer_pymodel_error",
    "test_triton_grpc_error_error_on",
]
# compared whole: modelyard's line leads with the model's message and goes on with its rule
# and where to change it (docs/triton-qa.md, "Differences kept")
LIFECYCLE_BY_DESIGN = {
    "LifecycleTest::test_error_code": (
        "it compares the whole message with the model's own (`error code: UNKNOWN`); "
        "modelyard's line leads with it, with its code, and goes on with its rule"
    )
}


def _lifecycle_models(work: Path) -> None:
    for name in ("error_code", "execute_cancel", "execute_return_error"):
        _python_model(work, name)
    for name, delay in (("execute_error", 12000000), ("execute_grpc_error", 1200000)):
        config = _python_model(work, name) / "config.pbtxt"
        _sed(config, r"^name:.*", f'name: "{name}"')
        _sed(config, r"^max_batch_size:.*", "max_batch_size: 8")
        _append(
            config,
            "dynamic_batching { preferred_batch_size: [8], max_queue_delay_microseconds: "
            f"{delay} }}",
        )
    config = _python_model(work, "wrong_model") / "config.pbtxt"
    _sed(config, r"^name:.*", 'name: "wrong_model"')
    _sed(config, "TYPE_FP32", "TYPE_UINT32")


def _error_code_differs_only_by_the_rule(run: harness.QaRun) -> None:
    """test_error_code's one failure: its first code's answer, with modelyard's rule after
    the model's message and the status Triton gives it."""
    message = run.outcomes["LifecycleTest::test_error_code"].message
    got = "- [StatusCode.UNKNOWN] error code: UNKNOWN; rule=engine/python; change: model.py of "
    assert got + "model 'error_code'\n" in message, message
    assert "+ [StatusCode.UNKNOWN] error code: UNKNOWN\n" in message, message


def test_lifecycle(host: LoopbackHost, tmp_path: Path) -> None:
    """lifecycle/test.sh: lifecycle_test.py against its repository (five times over in
    test.sh, for an intermittent crash); /dev/shm as it was after the server."""
    work = harness.work_directory(tmp_path, "L0_backend_python/lifecycle")
    _lifecycle_models(work)
    tests = LIFECYCLE_TESTS if FULL else LIFECYCLE_DEFAULT
    args = _server_args(work)
    log_path = work / "lifecycle_server.log"  # test_execute_cancel reads it
    with (
        host.own_shm(tmp_path / "shm") as shm,
        _shm_pages_unchanged(shm),
        harness.tritonserver(host, args, log_path, cwd=work),
    ):
        for _ in range(5 if FULL else 1):
            run = harness.run_qa_file(
                host, work, "lifecycle_test.py", *(f"LifecycleTest::{test}" for test in tests),
                env=CLIENT_ENV, pytest_style=True,
            )  # fmt: skip
            run.check(count=len(tests), out_of_reach=LIFECYCLE_BY_DESIGN)
            _error_code_differs_only_by_the_rule(run)


# lifecycle/test.sh's models whose initialize, finalize and auto_complete_config raise:
# each error in the server's log; the default run takes the first
ERROR_MODELS = [
    ("init_error", "name 'lorem_ipsum' is not defined"),
    pytest.param("fini_error", "name 'undefined_variable' is not defined",
                 marks=pytest.mark.triton_qa_full),
    pytest.param("auto_complete_error", "name 'undefined_variable' is not defined",
                 marks=pytest.mark.triton_qa_full),
]  # fmt: skip


@pytest.mark.parametrize(("model", "logged"), ERROR_MODELS)
def test_lifecycle_error_models(
    host: LoopbackHost, tmp_path: Path, model: str, logged: str
) -> None:
    """The server must not start with init_error or auto_complete_error (the latter
    without a config, ``--strict-model-config=false``), and stops with fini_error; its
    log carries the model's error; /dev/shm as it was."""
    work = harness.work_directory(tmp_path, "L0_backend_python/lifecycle")
    _python_model(work, model)
    args = _server_args(work)
    with host.own_shm(tmp_path / "shm") as shm, _shm_pages_unchanged(shm):
        if model == "fini_error":
            with harness.tritonserver(host, args, work / "server.log") as server:
                pass
            log = server.log()
        else:
            if model == "auto_complete_error":
                args.append("--strict-model-config=false")
            log = harness.start_fails(host, args, work / "server.log")
    assert logged in log, log[-3000:]
