"""Triton's qa/L0_backend_python/request_rescheduling: python models that give a request
back to the scheduler to run again (``request.set_release_flags(
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)``), served by a sequence batcher with
``iterative_sequence``.

test.sh's repository holds ``request_rescheduling_addsub`` (answers a request on its
second execution), ``iterative_sequence`` (a decoupled model that sends one response per
execution and gives its request back until the last), ``wrong_return_type`` (returns a
response for a request it gave back) and ``bls_request_rescheduling``, which runs
unittest cases against the others through BLS; the server runs in explicit mode with
every model loaded. Its ``grpc_endpoint_test.py`` reloads a model and infers over gRPC
(a stream for the decoupled one), with no sequence id: the iterative sequencer starts a
sequence of its own for each request.

test.sh's first run (``../test_infer_shm_leak.py`` asking ``bls_request_rescheduling``)
is not run: its cases reload the models from the model (``pb_utils.unload_model``,
``load_model``), which modelyard does not serve (docs/triton-qa.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import _python_model, _run, _server_args

pytestmark = pytest.mark.slow

MODELS = (
    "bls_request_rescheduling",
    "request_rescheduling_addsub",
    "iterative_sequence",
    "wrong_return_type",
)


@pytest.mark.triton_qa_full  # about 8 s
def test_grpc_endpoint(host: LoopbackHost, tmp_path: Path) -> None:
    """test.sh's server and its grpc_endpoint_test.py: an iterative sequence's request
    answered on its second execution, and a decoupled one's three responses over three."""
    work = harness.work_directory(tmp_path, "L0_backend_python/request_rescheduling")
    for name in MODELS:
        _python_model(work, name)
    args = _server_args(work, "--model-control-mode=explicit", "--load-model=*")
    _run(host, tmp_path, work, "grpc_endpoint_test.py", args=args, count=2,
         server_log="request_rescheduling_server.log")  # fmt: skip
