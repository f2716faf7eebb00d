"""An iterative sequence idle longer than ``max_sequence_idle_microseconds`` since its
request was last queued is released, executing or not, as Triton's reaper releases it: the
request the model then gives back has no START, and is refused in Triton's words."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import Code, ModelyardError
from modelyard.server.manager import ControlMode
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import write_python_model

# each execution sleeps SLEEP_S, then gives the request back until its X-th
MODEL = """
import json
import time

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
            time.sleep(float(pb_utils.get_input_tensor_by_name(request, "S").as_numpy()[0]))
            key = request.correlation_id()
            runs = self.runs[key] = self.runs.get(key, 0) + 1
            again = runs < x
            y = pb_utils.Tensor("Y", np.array([runs], np.int32))
            response = pb_utils.InferenceResponse([y])
            if again:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            if self.decoupled:
                final = 0 if again else pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                request.get_response_sender().send(response, flags=final)
            else:
                responses.append(None if again else response)
        return None if self.decoupled else responses
"""

CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_INT32 dims: [ 1 ] },
       { name: "S" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }]
sequence_batching { iterative_sequence: true max_sequence_idle_microseconds: 150000 }
"""


def _request(model: str, x: int, sleep_s: float) -> InferRequest:
    inputs = {"X": np.array([x], np.int32), "S": np.array([sleep_s], np.float32)}
    return InferRequest(model, None, inputs, {"X": "INT32", "S": "FP32"})


def test_a_sequence_idle_past_its_limit_while_executing_is_released(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    write_python_model(repository, "slow", MODEL, CONFIG)
    write_python_model(repository, "slow_stream", MODEL,
                       CONFIG + "model_transaction_policy { decoupled: true }\n")  # fmt: skip

    async def scenario() -> None:
        async with running_dataplane(repository, ControlMode.NONE) as dp:
            # within the limit, each execution: given back, run again, answered
            response = await dp.infer(_request("slow", 2, 0.0))
            assert int(response.outputs[0].data[0]) == 2
            # past it: refused as a sequence that never started
            with pytest.raises(ModelyardError) as refused:
                await dp.infer(_request("slow", 2, 0.3))
            assert refused.value.code is Code.INVALID_ARGUMENT
            assert "must specify the START flag on the first request of the sequence" in (
                refused.value.detail
            )
            assert "max_sequence_idle_microseconds" in refused.value.line()
            items = [item async for item in dp.infer_stream(_request("slow_stream", 2, 0.3))]
            assert [(item.error is None, item.final) for item in items] == [
                (True, False), (False, True)
            ]  # fmt: skip
            last = items[-1].error
            assert last is not None and "must specify the START flag" in last.detail
            # and the model serves the next
            response = await dp.infer(_request("slow", 3, 0.0))
            assert int(response.outputs[0].data[0]) == 3

    asyncio.run(scenario())


def test_requests_queued_behind_a_released_sequence_are_answered(tmp_path: Path) -> None:
    """A caller's own sequence: its second request waits behind the first, which runs past
    the idle limit; once released, the one queued behind is refused too, not left waiting."""
    repository = tmp_path / "models"
    write_python_model(repository, "slow", MODEL, CONFIG)

    def own(x: int, sleep_s: float, start: bool, sequence_id: int = 7) -> InferRequest:
        request = _request("slow", x, sleep_s)
        flags = {"sequence_start": True} if start else {}
        request.parameters = {"sequence_id": sequence_id, **flags}
        return request

    async def scenario() -> None:
        async with running_dataplane(repository, ControlMode.NONE) as dp:
            first = asyncio.ensure_future(dp.infer(own(2, 0.3, start=True)))
            await asyncio.sleep(0.1)  # executing
            second = asyncio.ensure_future(dp.infer(own(1, 0.0, start=False)))
            done = await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), 10)
            for outcome in done:
                assert isinstance(outcome, ModelyardError), outcome
                assert "must specify the START flag" in outcome.detail
            assert dp.manager.resolve("slow", None).scheduler.pending == 0
            response = await dp.infer(own(1, 0.0, start=True, sequence_id=8))  # and serves on
            assert int(response.outputs[0].data[0]) == 1

    asyncio.run(scenario())
