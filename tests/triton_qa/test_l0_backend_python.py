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


def _python_model(work: Path, source: str, name: str | None = None) -> Path:
    """test.sh's ``mkdir -p models/NAME/1/; cp ../../python_models/SOURCE/model.py
    ./models/NAME/1/; cp ../../python_models/SOURCE/config.pbtxt ./models/NAME/``."""
    name = name or source
    origin = work.parents[1] / "python_models" / source
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


# -- model_control, ensemble, argument_validation ---------------------------------------


def test_model_control(host: LoopbackHost, tmp_path: Path) -> None:
    """model_control/test.sh: a python model and an ensemble over it loaded and unloaded
    five times over, in explicit mode."""
    work = harness.work_directory(tmp_path, "L0_backend_python/model_control")
    _python_model(work, "identity_fp32")
    ensemble = work / "models" / "simple_identity_fp32"
    (ensemble / "1").mkdir(parents=True)
    shutil.copy(work.parents[1] / "python_models" / "simple_identity_fp32" / "config.pbtxt",
                ensemble)  # fmt: skip
    args = _server_args(work, "--model-control-mode=explicit")
    _run(host, tmp_path, work, "model_control_test.py", args=args, count=1)


def test_ensemble(host: LoopbackHost, tmp_path: Path) -> None:
    """ensemble/test.sh: an ensemble of two add_sub python models. Its ensemble_gpu (a
    TorchScript model on a KIND_GPU instance after add_sub) is left out of the repository:
    with no GPU it fails to load, and the server with it."""
    work = harness.work_directory(tmp_path, "L0_backend_python/ensemble")
    ensemble = work / "models" / "ensemble"
    (ensemble / "1").mkdir(parents=True)
    shutil.copy(work.parents[1] / "python_models" / "ensemble" / "config.pbtxt", ensemble)
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
# the default run: a response's error codes, a request cancelled while it executes, an
# exception in execute, a stream's first error ending it (about 5 s); TRITON_QA=full runs
# all eight (test_batch_error waits out its model's 12 s queue delay) five times, as test.sh
LIFECYCLE_DEFAULT = [
    "test_error_code",
    "test_execute_cancel",
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
    test.sh, for an intermittent crash), then the three models whose initialize, finalize
    and auto_complete_config raise, each of whose errors the server's log must carry;
    /dev/shm as it was after each server."""
    work = harness.work_directory(tmp_path, "L0_backend_python/lifecycle")
    models = work / "models"
    args = [f"--model-repository={models}", f"--backend-directory={BACKEND_DIR}",
            "--log-verbose=1"]  # fmt: skip
    log_path = work / "lifecycle_server.log"  # test_execute_cancel reads it
    _lifecycle_models(work)
    tests = LIFECYCLE_TESTS if FULL else LIFECYCLE_DEFAULT
    with host.own_shm(tmp_path / "shm") as shm:
        with _shm_pages_unchanged(shm), harness.tritonserver(host, args, log_path, cwd=work):
            for _ in range(5 if FULL else 1):
                run = harness.run_qa_file(
                    host, work, "lifecycle_test.py",
                    *(f"LifecycleTest::{test}" for test in tests),
                    env=CLIENT_ENV, pytest_style=True,
                )  # fmt: skip
                run.check(count=len(tests), out_of_reach=LIFECYCLE_BY_DESIGN)
                _error_code_differs_only_by_the_rule(run)

        shutil.rmtree(models)
        _python_model(work, "init_error")
        with _shm_pages_unchanged(shm):
            log = harness.start_fails(host, args, work / "init_error.log")
        assert "name 'lorem_ipsum' is not defined" in log, log[-3000:]

        shutil.rmtree(models)
        _python_model(work, "fini_error")
        with _shm_pages_unchanged(shm):
            with harness.tritonserver(host, args, work / "fini_error.log") as server:
                pass
            log = server.log()
        assert "name 'undefined_variable' is not defined" in log, log[-3000:]

        shutil.rmtree(models)
        _python_model(work, "auto_complete_error")
        with _shm_pages_unchanged(shm):
            log = harness.start_fails(
                host, [*args, "--strict-model-config=false"], work / "auto_complete_error.log"
            )
        assert "name 'undefined_variable' is not defined" in log, log[-3000:]
