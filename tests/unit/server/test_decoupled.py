"""Decoupled python-backend models, in-process: responses as the model sends them, errors
as the stream's last answer, and what is refused at load and on a plain call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard import dataplane
from modelyard.dataplane import StreamResponse
from modelyard.errors import Code, ModelyardError
from modelyard.server import decoupled
from modelyard.server.manager import ControlMode
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import repeat_int32, simple_add_sub, write_python_model

MISBEHAVING = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        request = requests[0]
        mode = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
        sender = request.get_response_sender()
        out = pb_utils.Tensor("OUT", np.array([mode], dtype=np.int32))
        if mode == 1:  # one response, then raises
            sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            raise ValueError("the model broke after one response")
        if mode == 2:  # returns responses, as a model that is not decoupled does
            return [pb_utils.InferenceResponse(output_tensors=[out])]
        if mode == 3:  # an error response, final
            error = pb_utils.TritonError("bad value", pb_utils.TritonError.INVALID_ARG)
            sender.send(pb_utils.InferenceResponse(error=error),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
        if mode == 5:  # one buffer reused for three responses: each is sent as it was
            buffer = np.zeros(1, dtype=np.int32)
            for value in (50, 51, 52):
                buffer[0] = value
                sender.send(pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("OUT", buffer)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
        if mode == 4:  # the sender's own checks
            problems = []
            for call in (lambda: sender.send(), lambda: sender.send(flags=7)):
                try:
                    call()
                except pb_utils.TritonModelException as exc:
                    problems.append(str(exc))
            assert len(problems) == 2, problems
            sender.send(pb_utils.InferenceResponse(output_tensors=[out]),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            try:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            except pb_utils.TritonModelException:
                return None
            raise AssertionError("a closed sender sent")
        return None
"""


def _request(model: str, values: list[int], delay: int = 0) -> InferRequest:
    inputs = {
        "IN": np.array(values, dtype=np.int32),
        "DELAY": np.full(len(values), delay, dtype=np.uint32),
        "WAIT": np.zeros(1, dtype=np.uint32),
    }
    return InferRequest(model, None, inputs, {"IN": "INT32", "DELAY": "UINT32", "WAIT": "UINT32"})


async def _collect(dp: Any, request: InferRequest) -> list[StreamResponse]:
    return [item async for item in dp.infer_stream(request)]


def test_a_repeat_model_streams_each_response_and_ends_with_a_lone_final(tmp_path: Path) -> None:
    repeat_int32(tmp_path)

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            items = await _collect(dp, _request("repeat_int32", [5, 6, 7], delay=2))
            assert [int(i.response.outputs[0].data[0]) for i in items[:3]] == [5, 6, 7]
            assert [i.final for i in items] == [False, False, False, True]
            assert items[-1].response is None and items[-1].error is None
            # two streams at once on two instances, each its own responses
            both = await asyncio.gather(
                _collect(dp, _request("repeat_int32", list(range(4)), delay=1)),
                _collect(dp, _request("repeat_int32", list(range(10, 16)), delay=1)),
            )
            assert [len(items) for items in both] == [5, 7]
            with pytest.raises(ModelyardError) as refused:
                await dp.infer(_request("repeat_int32", [1]))
            assert refused.value.code is Code.UNIMPLEMENTED
            assert "ModelStreamInfer" in refused.value.line()
            scheduler = dp.manager.resolve("repeat_int32", None).scheduler
            assert scheduler.pending == 0  # every request reached its FINAL
            assert dp.statistics("repeat_int32", None)["model_stats"][0]["inference_count"] == 3

    asyncio.run(main())


def test_a_decoupled_model_s_errors_end_its_stream_and_the_model_serves_on(
    tmp_path: Path,
) -> None:
    write_python_model(
        tmp_path,
        "misbehaving",
        MISBEHAVING,
        """
        backend: "python"
        model_transaction_policy { decoupled: true }
        input [{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        """,
    )

    def request(mode: int) -> InferRequest:
        return InferRequest(
            "misbehaving", None, {"IN": np.array([mode], np.int32)}, {"IN": "INT32"}
        )

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            first, last = await _collect(dp, request(1))
            assert int(first.response.outputs[0].data[0]) == 1 and not first.final
            assert last.final and "the model broke after one response" in last.error.line()
            (returned,) = await _collect(dp, request(2))
            assert returned.final and "execute function must return None" in returned.error.line()
            (invalid,) = await _collect(dp, request(3))
            assert invalid.final and invalid.error.code is Code.INVALID_ARGUMENT
            assert "bad value" in invalid.error.line()
            reused = await _collect(dp, request(5))
            assert [int(i.response.outputs[0].data[0]) for i in reused[:3]] == [50, 51, 52]
            (checked,) = await _collect(dp, request(4))
            assert checked.final and checked.error is None
            assert int(checked.response.outputs[0].data[0]) == 4

    asyncio.run(main())


def test_a_caller_that_goes_is_cancelled_for_the_model_and_its_request_closes(
    tmp_path: Path,
) -> None:
    """The stream's reader leaves after one response: the model reads is_cancelled(), stops
    and sends FINAL; nothing more is queued for the caller, and pending goes back to 0."""
    repeat_int32(tmp_path)

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            scheduler = dp.manager.resolve("repeat_int32", None).scheduler
            stream = dp.infer_stream(_request("repeat_int32", list(range(200)), delay=20))
            first = await stream.__anext__()
            assert int(first.response.outputs[0].data[0]) == 0
            await stream.aclose()
            for _ in range(100):  # 200 responses 20 ms apart would take 4 s
                if scheduler.pending == 0:
                    break
                await asyncio.sleep(0.02)
            assert scheduler.pending == 0

    asyncio.run(main())


def test_a_caller_that_stops_reading_is_cancelled_past_its_unread_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that stops holds at most MAX_UNREAD responses: then the model reads
    is_cancelled(), and the reader finds, after what it had not read, why."""
    monkeypatch.setattr(decoupled, "MAX_UNREAD", 20)
    monkeypatch.setattr(dataplane, "MAX_UNREAD", 20)  # the line's figure
    repeat_int32(tmp_path)

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            scheduler = dp.manager.resolve("repeat_int32", None).scheduler
            stream = dp.infer_stream(_request("repeat_int32", list(range(300))))
            await stream.__anext__()  # sent; the reader stops here
            for _ in range(200):
                if scheduler.pending == 0:
                    break
                await asyncio.sleep(0.02)
            assert scheduler.pending == 0  # the model stopped and sent FINAL
            rest = [item async for item in stream]
            assert len(rest) <= 21 and rest[-1].final
            assert rest[-1].error.code is Code.RESOURCE_EXHAUSTED
            assert "has not read 20 responses" in rest[-1].error.line()
            # the model serves the next caller whole
            items = await _collect(dp, _request("repeat_int32", [1, 2, 3]))
            assert [i.final for i in items] == [False, False, False, True]

    asyncio.run(main())


def test_decoupled_is_refused_at_load_where_it_cannot_be_served(tmp_path: Path) -> None:
    simple_add_sub(tmp_path, extra_config="model_transaction_policy { decoupled: true }\n")
    write_python_model(
        tmp_path,
        "plain",
        "class Model:\n    def execute(self, inputs):\n        return inputs\n",
        """
        backend: "python"
        model_transaction_policy { decoupled: true }
        input [{ name: "x" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "x" data_type: TYPE_INT32 dims: [ 1 ] }]
        """,
    )

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            index = {entry["name"]: entry for entry in dp.manager.index()}
            for name in ("simple", "plain"):
                assert index[name]["state"] == "UNAVAILABLE"
                assert (
                    "decoupled models are served for python-backend models"
                    in (index[name]["reason"])
                )

    asyncio.run(main())


# each request answered once, with how many requests its execute() was given; slow, so
# that requests sent meanwhile wait, and dynamic batching gathers them
COUNTING = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.2)
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out = np.array([len(requests), int(value[0])], dtype=np.int32)
            request.get_response_sender().send(
                pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        return None
"""


def test_dynamic_batching_gives_a_decoupled_model_the_waiting_requests_together(
    tmp_path: Path,
) -> None:
    """As Triton's python backend: with dynamic_batching, execute(requests) gets the
    requests that wait, up to max_batch_size, each with its own response sender."""
    write_python_model(tmp_path, "counting", COUNTING, """
        backend: "python"
        max_batch_size: 4
        input [{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 2 ] }]
        model_transaction_policy { decoupled: true }
        instance_group [{ count: 1 kind: KIND_CPU }]
        dynamic_batching { }
        """)  # fmt: skip

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:

            def request(value: int) -> InferRequest:
                return InferRequest(
                    "counting", None, {"IN": np.array([[value]], dtype=np.int32)}, {"IN": "INT32"}
                )

            answers = await asyncio.gather(*(_collect(dp, request(v)) for v in range(9)))
            outs = [items[0].response.outputs[0].data.ravel().tolist() for items in answers]
            assert sorted(value for _, value in outs) == list(range(9))  # each its own answer
            sizes = [size for size, _ in outs]
            assert max(sizes) == 4 and all(size <= 4 for size in sizes)  # batched, bounded
            assert all(items[-1].final for items in answers)

    asyncio.run(main())


def test_a_decoupled_model_s_batch_waits_for_its_preferred_size_up_to_the_queue_delay(
    tmp_path: Path,
) -> None:
    """As Triton's dynamic batcher: two requests that come 50 ms apart are executed together
    where the queue delay (400 ms) holds the first for a preferred size of 2, and again
    where there is no preferred size to reach and the delay ends first."""
    for preferred in ("preferred_batch_size: [2]", ""):
        model = tmp_path / preferred.replace(" ", "").replace(":", "_")[:20]
        write_python_model(model, "counting", COUNTING, f"""
            backend: "python"
            max_batch_size: 4
            input [{{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }}]
            output [{{ name: "OUT" data_type: TYPE_INT32 dims: [ 2 ] }}]
            model_transaction_policy {{ decoupled: true }}
            instance_group [{{ count: 1 kind: KIND_CPU }}]
            dynamic_batching {{ {preferred} max_queue_delay_microseconds: 400000 }}
            """)  # fmt: skip

        async def main(repository: Path = model) -> list[int]:
            async with running_dataplane(repository, ControlMode.NONE) as dp:

                async def later(value: int) -> list[StreamResponse]:
                    await asyncio.sleep(0.05 * value)
                    request = InferRequest("counting", None,
                                           {"IN": np.array([[value]], dtype=np.int32)},
                                           {"IN": "INT32"})  # fmt: skip
                    return await _collect(dp, request)

                answers = await asyncio.gather(later(0), later(1))
                return [items[0].response.outputs[0].data.ravel().tolist()[0] for items in answers]

        assert asyncio.run(main()) == [2, 2], preferred  # one execute of both


ASYNC_SLEEPER = """
import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils

RUNNING = [0, 0]  # executes running now, the most at once


class TritonPythonModel:
    async def execute(self, requests):
        RUNNING[0] += 1
        RUNNING[1] = max(RUNNING)
        await asyncio.sleep(0.6)
        RUNNING[0] -= 1
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            out = np.array([int(value[0]), RUNNING[1]], dtype=np.int32)
            request.get_response_sender().send(
                pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        return None
"""


def test_a_decoupled_model_s_async_execute_runs_beside_the_next_ones(tmp_path: Path) -> None:
    """As Triton's stub: a decoupled model's ``async def execute`` runs in the background on
    the model's event loop, so its one instance takes the next request meanwhile (the
    model counts the executes that run at once: three)."""
    write_python_model(tmp_path, "sleeper", ASYNC_SLEEPER, """
        backend: "python"
        max_batch_size: 0
        input [{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 2 ] }]
        model_transaction_policy { decoupled: true }
        instance_group [{ count: 1 kind: KIND_CPU }]
        """)  # fmt: skip

    async def main() -> list[list[int]]:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:

            def request(value: int) -> InferRequest:
                return InferRequest(
                    "sleeper", None, {"IN": np.array([value], dtype=np.int32)}, {"IN": "INT32"}
                )

            answers = await asyncio.gather(*(_collect(dp, request(v)) for v in range(3)))
            return [items[0].response.outputs[0].data.tolist() for items in answers]

    answers = asyncio.run(main())
    assert [value for value, _ in answers] == [0, 1, 2]
    assert max(most for _, most in answers) == 3


def test_an_ensemble_over_a_decoupled_model_answers_each_of_its_responses(
    tmp_path: Path,
) -> None:
    """As Triton's: each response of the decoupled step goes on through the steps after it
    and is one response of the ensemble (outputs of both steps), then FINAL alone; the
    ensemble is decoupled, so a plain call is refused in Triton's words."""
    repeat_int32(tmp_path)
    write_python_model(
        tmp_path,
        "identity",
        "class Model:\n    def execute(self, inputs):\n        return {'y': inputs['x'] * 2}\n",
        """
        backend: "python"
        input [{ name: "x" data_type: TYPE_INT32 dims: [ -1 ] }]
        output [{ name: "y" data_type: TYPE_INT32 dims: [ -1 ] }]
        """,
    )
    ensemble = tmp_path / "repeat_twice"
    (ensemble / "1").mkdir(parents=True)
    (ensemble / "config.pbtxt").write_text(
        """
        platform: "ensemble"
        input [{ name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
               { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
               { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
                { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }]
        ensemble_scheduling { step [
          { model_name: "repeat_int32" model_version: -1
            input_map { key: "IN" value: "IN" } input_map { key: "DELAY" value: "DELAY" }
            input_map { key: "WAIT" value: "WAIT" }
            output_map { key: "OUT" value: "repeated" } output_map { key: "IDX" value: "IDX" } },
          { model_name: "identity" model_version: -1
            input_map { key: "x" value: "repeated" } output_map { key: "y" value: "OUT" } }
        ] }
        """
    )

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            items = await _collect(dp, _request("repeat_twice", [5, 6, 7]))
            answers = [{o.name: int(o.data[0]) for o in i.response.outputs} for i in items[:3]]
            assert answers == [{"OUT": 10, "IDX": 0}, {"OUT": 12, "IDX": 1}, {"OUT": 14, "IDX": 2}]
            assert [i.final for i in items] == [False, False, False, True]
            assert items[-1].response is None and items[-1].error is None
            nothing = await _collect(dp, _request("repeat_twice", []))
            assert [(i.response, i.error, i.final) for i in nothing] == [(None, None, True)]
            with pytest.raises(decoupled.DecoupledRefusal) as refused:
                await dp.infer(_request("repeat_twice", [1]))
            assert (
                refused.value.at("HTTP end point")
                .line()
                .startswith(
                    "HTTP end point doesn't support models with decoupled transaction policy"
                )
            )
            config = dp.model_config("repeat_twice", None)
            assert config["model_transaction_policy"] == {"decoupled": True}  # as Triton's
            scheduler = dp.manager.resolve("repeat_twice", None).scheduler
            for _ in range(100):  # its task ends just after it puts the FINAL
                if scheduler.pending == 0:
                    break
                await asyncio.sleep(0.01)
            assert scheduler.pending == 0

    asyncio.run(main())
