"""Triton's qa/L0_request_cancellation: requests their callers cancel.

test.sh's three runs, each on the repository it writes:

- ``grpc_cancellation_test.py``, each of its five tests on a server of its own
  (``custom_identity_int32``: Triton's identity backend, modelyard's identity engine,
  with ``execute_delay_ms: 10000``): gRPC async, stream, asyncio async and asyncio
  stream calls cancelled 2 s in, each test within 5 s, the server's log saying
  ``Cancellation notification received for`` (test.sh's grep); the fifth with
  ``TRITONSERVER_DELAY_GRPC_PROCESS=5000`` (Triton's test hook: the request is read
  5 s after it came, so the cancellation comes first);
- ``scheduler_test.py`` on ``dynamic_batch``, ``sequence_direct``, ``sequence_oldest``
  (identity backend, ``execute_delay_ms: 6000``) and ``ensemble_model`` (two steps of
  ``dynamic_batch``): requests cancelled while queued, backlogged or executing in a step,
  CANCELLED each, ``nv_inference_request_failure{reason="CANCELED"}`` counted;
- ``implicit_state_test.py`` on ``sequence_state``: the folder's TorchScript model (its
  ``gen_model.py`` writes ``model.pt`` here, as it wrote Triton's), whose implicit state
  holds its sequence's id; a sequence cancelled mid-way must leave its slot's state to no
  other (the server's log must not say ``[MODEL ERROR] Invalid sequence state``).

test.sh's first run, ``request_cancellation_test`` (a C++ program against Triton's
in-process C API), is not here (docs/triton-qa.md). Every run waits out its model's
delays (about 5 to 20 s each): ``TRITON_QA=full`` runs them; the unit tests of
cancellation guard the default run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full, pytest.mark.timeout(600)]

GRPC_TESTS = [
    "test_grpc_async_infer",
    "test_grpc_stream_infer",
    "test_aio_grpc_async_infer",
    "test_aio_grpc_stream_infer",
    "test_grpc_async_infer_cancellation_at_step_start",
]


def _model(models: Path, name: str, lines: list[str]) -> None:
    """A model as test.sh writes it: ``mkdir -p models/NAME/1`` and its config, a line
    an ``echo``."""
    (models / name / "1").mkdir(parents=True)
    (models / name / "config.pbtxt").write_text("".join(line + "\n" for line in lines))


def _identity(name: str, batch: int, dtype: str, extra: list[str], delay_ms: int) -> list[str]:
    return [
        f'name: "{name}"',
        'backend: "identity"',
        f"max_batch_size: {batch}",
        f'input [{{ name: "INPUT0" \n data_type: {dtype} \n dims: [ -1 ] }}]',
        f'output [{{ name: "OUTPUT0" \n data_type: {dtype} \n dims: [ -1 ] }}]',
        *extra,
        f'parameters [{{ key: "execute_delay_ms" \n value: {{ string_value: "{delay_ms}" }} }}]',
    ]


def grpc_models(work: Path) -> Path:
    models = work / "models"
    cpu = "instance_group [{ kind: KIND_CPU }]"
    _model(models, "custom_identity_int32", _identity(
        "custom_identity_int32", 1024, "TYPE_INT32", [cpu], 10000
    ))  # fmt: skip
    return models


def scheduler_models(work: Path) -> Path:
    models = work / "models"
    one = "instance_group [{ count: 1 \n kind: KIND_CPU }]"
    _model(models, "dynamic_batch", _identity("dynamic_batch", 2, "TYPE_FP32", [
        one, "dynamic_batching { max_queue_delay_microseconds: 600000 }"
    ], 6000))  # fmt: skip
    _model(models, "sequence_direct", _identity("sequence_direct", 1, "TYPE_FP32", [
        one, "sequence_batching { direct { } \n max_sequence_idle_microseconds: 6000000 }"
    ], 6000))  # fmt: skip
    _model(models, "sequence_oldest", _identity("sequence_oldest", 1, "TYPE_FP32", [
        one,
        "sequence_batching { oldest { max_candidate_sequences: 1 } \n "
        "max_sequence_idle_microseconds: 6000000 }",
    ], 6000))  # fmt: skip
    step = (
        '{{ model_name: "dynamic_batch" \n model_version: -1 \n input_map {{ key: "INPUT0" \n '
        'value: "{}" }} \n output_map {{ key: "OUTPUT0" \n value: "{}" }} }}'
    )
    _model(models, "ensemble_model", [
        'name: "ensemble_model"',
        'platform: "ensemble"',
        "max_batch_size: 1",
        'input [{ name: "INPUT0" \n data_type: TYPE_FP32 \n dims: [ -1 ] }]',
        'output [{ name: "OUTPUT0" \n data_type: TYPE_FP32 \n dims: [ -1 ] }]',
        "ensemble_scheduling { step [",
        step.format("INPUT0", "out") + ",",
        step.format("out", "OUTPUT0"),
        "] }",
    ])  # fmt: skip
    return models


def implicit_state_models(work: Path) -> Path:
    """``sequence_state``: the folder's config, and the ``model.pt`` its ``gen_model.py``
    writes (TorchScript)."""
    source = work / "implicit_state_model"
    subprocess.run(
        [sys.executable, "gen_model.py"], cwd=source, check=True, capture_output=True, timeout=120
    )
    models = work / "models"
    (models / "sequence_state" / "1").mkdir(parents=True)
    (models / "sequence_state" / "config.pbtxt").write_bytes((source / "config.pbtxt").read_bytes())
    (models / "sequence_state" / "1" / "model.pt").write_bytes((source / "model.pt").read_bytes())
    return models


@pytest.mark.parametrize("test", GRPC_TESTS)
def test_grpc_cancellation(host: LoopbackHost, tmp_path: Path, test: str) -> None:
    work = harness.work_directory(tmp_path, "L0_request_cancellation")
    env = {}
    if test == "test_grpc_async_infer_cancellation_at_step_start":
        env["TRITONSERVER_DELAY_GRPC_PROCESS"] = "5000"
    args = [f"--model-repository={grpc_models(work)}", "--log-verbose=1"]
    log = work / f"grpc_cancellation_test.{test}.server.log"
    with harness.tritonserver(host, args, log, env=env) as server:
        run = harness.run_qa_file(
            host, work, "grpc_cancellation_test.py", f"GrpcCancellationTest.{test}", env=env
        )
        run.check(count=1)
        assert "Cancellation notification received for" in server.log()  # test.sh's grep


def test_scheduler(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_request_cancellation")
    args = [f"--model-repository={scheduler_models(work)}", "--log-verbose=2"]
    with harness.tritonserver(host, args, work / "scheduler_test.server.log"):
        run = harness.run_qa_file(host, work, "scheduler_test.py")
    run.check(count=6)


def test_implicit_state(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_request_cancellation")
    args = [f"--model-repository={implicit_state_models(work)}", "--log-verbose=1"]
    log = work / "implicit_state_test.server.log"
    with harness.tritonserver(host, args, log):
        run = harness.run_qa_file(
            host, work, "implicit_state_test.py", env={"SERVER_LOG": str(log)}
        )
    run.check(count=1)
