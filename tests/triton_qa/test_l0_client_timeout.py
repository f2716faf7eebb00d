"""Triton's qa/L0_client_timeout: client-side timeouts, and the server serving on after
its clients gave up.

Its model is ``custom_identity_int32``: Triton's identity backend (modelyard's identity
engine) with ``execute_delay_ms: 3000``, one instance. test.sh starts two servers for the
Python files:

- ``--model-repository=models --log-verbose 2``: client_infer_timeout_test.py, each of
  its five tests alone (gRPC sync, async and streaming with a deadline; HTTP sync and
  async with a socket timeout): the first request gives up before the model answers, the
  second, sent while the instance still executes the first, is answered;
- the same with ``--model-control-mode=explicit --load-model=custom_identity_int32`` and
  ``TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC=2`` (Triton's test hook: each gRPC call
  but inference is answered two seconds after it ran): client_non_infer_timeout_test.py,
  each non-inference RPC once with a 0.1 s deadline (Deadline Exceeded) and once with 5 s.

test.sh's C++ client runs (``client_timeout_test``) are not here: the C++ client library
is not built (docs/triton-qa.md). The default run takes one test of each file (about
9 s); ``TRITON_QA=full`` runs all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

MODEL = "custom_identity_int32"

INFER_TESTS = [
    "test_grpc_infer",
    "test_grpc_async_infer",
    "test_grpc_stream_infer",
    "test_http_infer",
    "test_http_async_infer",
]

CUDA = (
    "an NVIDIA GPU and cuda-python: it makes a CUDA shared memory region "
    "(tritonclient.utils.cuda_shared_memory) before its first call"
)
NON_INFER_OUT_OF_REACH = {
    "ClientNonInferTimeoutTest::test_grpc_register_cuda_shared_memory": CUDA,
}


def _models(work: Path) -> Path:
    models = work / "models"
    (models / MODEL / "1").mkdir(parents=True, exist_ok=True)  # test.sh's mkdir
    return models


@pytest.mark.parametrize(
    "test",
    [
        pytest.param(t, marks=pytest.mark.triton_qa_full)  # about 9 s each: the model's 3 s twice
        for t in INFER_TESTS
    ],
)
def test_client_infer_timeout(host: LoopbackHost, tmp_path: Path, test: str) -> None:
    work = harness.work_directory(tmp_path, "L0_client_timeout")
    args = [f"--model-repository={_models(work)}", "--log-verbose=2"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(
            host, work, "client_infer_timeout_test.py", f"ClientInferTimeoutTest.{test}"
        )
    run.check(count=1)


def _non_infer(host: LoopbackHost, tmp_path: Path, *selection: str) -> harness.QaRun:
    work = harness.work_directory(tmp_path, "L0_client_timeout")
    args = [
        f"--model-repository={_models(work)}", "--log-verbose=2",
        "--model-control-mode=explicit", f"--load-model={MODEL}", "--allow-client-shm=true",
    ]  # fmt: skip
    env = {"TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC": "2"}
    with harness.tritonserver(host, args, tmp_path / "server.log", env=env):
        return harness.run_qa_file(host, work, "client_non_infer_timeout_test.py", *selection)


def test_client_non_infer_timeout_one(host: LoopbackHost, tmp_path: Path) -> None:
    """The default run's (about 5 s): ServerLive answered 2 s late, past the client's
    0.1 s deadline, and within its 5 s."""
    run = _non_infer(host, tmp_path, "ClientNonInferTimeoutTest.test_grpc_server_live")
    run.check(count=1)


@pytest.mark.triton_qa_full  # about 90 s: each of its 20 tests waits out 2 s answers
def test_client_non_infer_timeout(host: LoopbackHost, tmp_path: Path) -> None:
    run = _non_infer(host, tmp_path)
    run.check(count=20, out_of_reach=NON_INFER_OUT_OF_REACH)
