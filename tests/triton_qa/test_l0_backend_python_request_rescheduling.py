"""Triton's qa/L0_backend_python/request_rescheduling: python models that give a request
back to the scheduler to run again (``request.set_release_flags(
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)``), served by a sequence batcher with
``iterative_sequence``.

test.sh's repository holds ``request_rescheduling_addsub`` (answers a request on its
second execution), ``iterative_sequence`` (a decoupled model that sends one response per
execution and gives its request back until the last), ``wrong_return_type`` (returns a
response for a request it gave back) and ``bls_request_rescheduling``, which runs
unittest cases against the others through BLS; the server runs in explicit mode with
every model loaded. On that server test.sh runs ``../test_infer_shm_leak.py`` (which asks
``bls_request_rescheduling`` whether its cases passed: each reloads a model from the model,
``pb_utils.unload_model`` and ``load_model``, and infers through BLS), then
``grpc_endpoint_test.py``, which reloads a model and infers over gRPC (a stream for the
decoupled one), with no sequence id: the iterative sequencer starts a sequence of its own
for each request.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import (
    CLIENT_ENV,
    _python_model,
    _server_args,
    _shm_pages_unchanged,
)

pytestmark = pytest.mark.slow

MODELS = (
    "bls_request_rescheduling",
    "request_rescheduling_addsub",
    "iterative_sequence",
    "wrong_return_type",
)


@pytest.mark.triton_qa_full  # about 15 s
def test_request_rescheduling(host: LoopbackHost, tmp_path: Path) -> None:
    """test.sh's server, its bls_request_rescheduling run and its grpc_endpoint_test.py: an
    iterative sequence's request answered on its second execution, a decoupled one's
    three responses over three, and a response for a request given back refused."""
    work = harness.work_directory(tmp_path, "L0_backend_python/request_rescheduling")
    shutil.copy(harness.QA / "L0_backend_python" / "test_infer_shm_leak.py", work.parent)
    for name in MODELS:
        _python_model(work, name)
    args = _server_args(work, "--model-control-mode=explicit", "--load-model=*")
    log = work / "request_rescheduling_server.log"
    with (
        host.own_shm(tmp_path / "shm") as shm,
        _shm_pages_unchanged(shm),
        harness.tritonserver(host, args, log, cwd=work),
    ):
        bls = harness.run_qa_file(
            host, work, "../test_infer_shm_leak.py",
            env={**CLIENT_ENV, "MODEL_NAME": "bls_request_rescheduling"}, pytest_style=True,
        )  # fmt: skip
        bls.check(count=1)
        grpc = harness.run_qa_file(host, work, "grpc_endpoint_test.py", env=CLIENT_ENV,
                                   pytest_style=True)  # fmt: skip
        grpc.check(count=2)
