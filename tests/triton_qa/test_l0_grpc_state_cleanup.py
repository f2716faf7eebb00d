"""Triton's qa/L0_grpc_state_cleanup: gRPC calls, streams and decoupled streams that
complete, are cancelled by their caller, time out, are refused (a restricted protocol),
or are cut by the server's shutdown, each leaving the server serving (and, in Triton,
each call's state released: test.sh counts its verbose ``StateNew`` and ``StateRelease``
lines, which name Triton's C++ handler states; modelyard writes neither, so that count
holds here and checks nothing).

As its test.sh: ``custom_zero_1_float32`` (the identity backend, 1 s an execution), the
server's ``src/test/models/repeat_int32`` (Triton's C++ ``repeat`` backend: its stand-in
``repeat_backend.py`` given by ``--backend-directory``, the one flag added) and test.sh's
copy of it that is not decoupled; each of ``cleanup_test.py``'s eighteen tests on a
server of its own with test.sh's flags (``--log-verbose=2``; the three error-status tests
with ``--grpc-restricted-protocol=inference:infer-key=infer-value``; the four shutdown
tests given ``SERVER_PID`` and the server stopping by their signal;
``test_decoupled_infer_complete`` with ``TRITONSERVER_DELAY_GRPC_COMPLETE=2000`` and
``SERVER_LOG``), four at a time. ``TRITON_QA=full`` only (about a minute).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, test_l0_decoupled

pytestmark = pytest.mark.slow

FOLDER = "L0_grpc_state_cleanup"
PLAIN = [
    "test_simple_infer", "test_simple_infer_cancellation", "test_simple_infer_timeout",
    "test_streaming_infer", "test_streaming_timeout", "test_streaming_cancellation",
    "test_decoupled_infer", "test_decoupled_cancellation", "test_decoupled_timeout",
    "test_non_decoupled_streaming_multi_response",
]  # fmt: skip
ERROR_STATUS = ["test_simple_infer_error_status", "test_streaming_error_status",
                "test_decoupled_error_status"]  # fmt: skip
SHUTDOWN = ["test_simple_infer_shutdownserver", "test_streaming_infer_shutdownserver",
            "test_decoupled_infer_shutdownserver",
            "test_decoupled_infer_with_params_shutdownserver"]  # fmt: skip
COMPLETE = "test_decoupled_infer_complete"


def repository(work: Path) -> Path:
    """test.sh's ``models``: Dockerfile.QA's ``repeat_int32`` and test.sh's two edits."""
    models = work / "models"
    repeat = shutil.copytree(test_l0_decoupled.TEST_MODELS / "repeat_int32",
                             models / "repeat_int32")  # fmt: skip
    (repeat / "1").mkdir()
    identity = shutil.copytree(work.parent / "custom_models" / "custom_zero_1_float32",
                               models / "custom_zero_1_float32")  # fmt: skip
    (identity / "1").mkdir(exist_ok=True)
    config = identity / "config.pbtxt"
    config.write_text(config.read_text() + 'parameters [\n{ key: "execute_delay_ms"; '
                      'value: { string_value: "1000" }}\n]\n')  # fmt: skip
    copy = shutil.copytree(repeat, models / "repeat_int32_non_decoupled")
    config = copy / "config.pbtxt"  # sed "/model_transaction_policy/,+2d"; s/repeat_int32/...
    lines = config.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if "model_transaction_policy" in line)
    del lines[at : at + 3]
    lines = [line.replace("repeat_int32", "repeat_int32_non_decoupled", 1) for line in lines]
    config.write_text("\n".join(lines))
    return models


@pytest.mark.triton_qa_full
@pytest.mark.timeout(900)
def test_grpc_state_cleanup(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    if not (work.parent / "custom_models").exists():
        shutil.copytree(harness.QA / "custom_models", work.parent / "custom_models")
    models = repository(work)
    backends = test_l0_decoupled.backend_directory(work)
    runs = PLAIN + ERROR_STATUS + SHUTDOWN + [COMPLETE]

    def one(lane: int, test: str) -> harness.QaRun:
        here = harness.work_directory(tmp_path / test, FOLDER)
        log = tmp_path / f"{test}.server.log"
        args = [f"--model-repository={models}", "--log-verbose=2",
                f"--backend-directory={backends}"]  # fmt: skip
        if test in ERROR_STATUS:
            args.append("--grpc-restricted-protocol=inference:infer-key=infer-value")
        server_env = {"TRITONSERVER_DELAY_GRPC_COMPLETE": "2000"} if test == COMPLETE else None
        with harness.tritonserver(hosts[lane], args, log, env=server_env) as server:
            env = {"SERVER_LOG": str(log)} if test == COMPLETE else {}
            if test in SHUTDOWN:
                env["SERVER_PID"] = str(server.process.process.pid)
            run = harness.run_qa_file(hosts[lane], here, "cleanup_test.py",
                                      f"CleanUpTest.{test}", env=env,
                                      runner="tests.triton_qa.unittest_as_main")  # fmt: skip
            if test in SHUTDOWN:  # test.sh: wait $SERVER_PID (the test's signal stops it)
                server.process.process.wait(60)
        return run

    failures = []
    for test, run in harness.in_lanes(hosts, runs, one):
        try:
            run.check(count=1)
        except AssertionError as error:
            failures.append(f"{test}: {error}")
    assert not failures, "\n".join(failures)
