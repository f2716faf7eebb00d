"""A python model gives a request back to run again
(``set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)``): a sequence model with
``iterative_sequence`` queues it again as its sequence's next request (a request with no
sequence id starts a sequence of its own, which ends with it); any other answers it with
Triton's error; a model that gives it back forever holds its caller no longer than its
timeout, its cancellation or the model's unload."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.dataplane import StreamResponse
from modelyard.errors import Code, ModelyardError
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import write_python_model

# X: how many executions the request takes (-1: given back forever; -2: given back with a
# response, which Triton refuses); Y: the execution that answered. A decoupled one sends
# a response each execution, FINAL with the last.
MODEL = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.runs = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            x = int(pb_utils.get_input_tensor_by_name(request, "X").as_numpy()[0])
            key = request.correlation_id()
            runs = self.runs[key] = self.runs.get(key, 0) + 1
            again = x < 0 or runs < x
            y = pb_utils.Tensor("Y", np.array([runs], np.int32))
            response = pb_utils.InferenceResponse([y])
            if again:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            if self.decoupled:
                final = 0 if again else pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                request.get_response_sender().send(response, flags=final)
            else:
                responses.append(response if x == -2 or not again else None)
        return None if self.decoupled else responses
"""

CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_INT32 dims: [ 1 ] }]
output [{ name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }]
"""
ITERATIVE = "sequence_batching { iterative_sequence: true }\n"
DECOUPLED = "model_transaction_policy { decoupled: true }\n"


def _repository(tmp_path: Path) -> Path:
    repository = tmp_path / "models"
    write_python_model(repository, "again", MODEL, CONFIG + ITERATIVE)
    write_python_model(repository, "again_stream", MODEL, CONFIG + ITERATIVE + DECOUPLED)
    write_python_model(repository, "plain", MODEL, CONFIG)
    write_python_model(repository, "plain_stream", MODEL, CONFIG + DECOUPLED)
    return repository


def _request(model: str, x: int, **fields: Any) -> InferRequest:
    return InferRequest(model, None, {"X": np.array([x], np.int32)}, {"X": "INT32"}, **fields)


async def _y(dp: LocalDataPlane, model: str, x: int, **fields: Any) -> int:
    response = await dp.infer(_request(model, x, **fields))
    return int(response.outputs[0].data[0])


def test_a_request_given_back_runs_again_as_its_sequence_s_next(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_dataplane(_repository(tmp_path), ControlMode.NONE) as dp:
            # no sequence id: each request a sequence of its own, answered at its third run
            assert await asyncio.gather(_y(dp, "again", 3), _y(dp, "again", 2)) == [3, 2]
            assert await _y(dp, "again", 1) == 1
            # a caller's own sequence ends with its START request, as Triton's sequencer
            # ends it once that request is released
            start = {"sequence_id": 77, "sequence_start": True}
            assert await _y(dp, "again", 2, parameters=start) == 2
            with pytest.raises(ModelyardError) as ended:
                await _y(dp, "again", 1, parameters={"sequence_id": 77})
            assert "must specify the START flag" in ended.value.detail
            # a response returned for a request given back: Triton's refusal
            with pytest.raises(ModelyardError) as wrong:
                await _y(dp, "again", -2)
            assert wrong.value.detail.startswith(
                "Expected a None object in the execute function return list for reschduled "
                "request, found type"
            )
            # a model that is no iterative sequence's cannot take it back
            with pytest.raises(ModelyardError) as plain:
                await _y(dp, "plain", 3)
            assert plain.value.code is Code.INVALID_ARGUMENT
            assert plain.value.line().startswith(
                "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the "
                "model is not configured to handle such a flag.; rule=engine/reschedule"
            )
            # given back forever: its timeout ends it, and the model serves the next
            started = time.monotonic()
            with pytest.raises(ModelyardError) as timed_out:
                await _y(dp, "again", -1, timeout_us=300_000)
            assert "Request timeout expired" in timed_out.value.detail
            assert time.monotonic() - started < 5
            with pytest.raises(ModelyardError):  # its caller's deadline too
                await _y(dp, "again", -1, deadline=time.monotonic() + 0.3)
            assert time.monotonic() - started < 10
            assert await _y(dp, "again", 2) == 2

    asyncio.run(scenario())


def test_a_decoupled_request_given_back_sends_on_its_stream(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_dataplane(_repository(tmp_path), ControlMode.EXPLICIT) as dp:
            await asyncio.gather(dp.manager.load("again_stream"), dp.manager.load("plain_stream"))
            items: list[StreamResponse] = [
                item async for item in dp.infer_stream(_request("again_stream", 3))
            ]
            got = [(int(i.response.outputs[0].data[0]) if i.response else None, i.final)
                   for i in items]  # fmt: skip
            assert got == [(1, False), (2, False), (3, True)], got
            # a decoupled model that is no iterative sequence's: its request ends with why
            plain = [item async for item in dp.infer_stream(_request("plain_stream", 3))]
            assert [(i.error is None, i.final) for i in plain] == [(True, False), (False, True)]
            assert plain[1].error is not None and plain[1].error.line().startswith(
                "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE"
            )
            # given back forever, then unloaded: its stream ends with why
            stream = dp.infer_stream(_request("again_stream", -1))
            first = await anext(stream)
            assert first.error is None and not first.final
            unloading = asyncio.create_task(dp.manager.unload("again_stream"))
            async with asyncio.timeout(30):
                rest = [item async for item in stream]
            last = rest[-1] if rest else first
            assert last.final and last.error is not None
            assert "unloading" in last.error.detail, last.error.line()
            await unloading

    asyncio.run(scenario())
