"""The scheduler contract: a model that answers once refuses a stream with its error line; an
engine's answer that breaks the engine contract fails its batch with one."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.dataplane import CALLER_GONE
from modelyard.engines.base import BatchOutcomes, current_batch_requests
from modelyard.errors import Code, EngineError, ModelServerError, ModelyardError
from modelyard.server.batcher import BatchingPolicy
from modelyard.server.scheduler import Scheduler
from modelyard.server.scheduling import Submission, check_outputs
from tests.unit.server.test_scheduler_concurrency import AffineEngine


def test_a_stream_asked_of_a_model_that_answers_once_is_refused_with_its_rule() -> None:
    config = text_format.Parse("max_batch_size: 8", mc.ModelConfig())
    scheduler = Scheduler("affine", 1, [AffineEngine()], BatchingPolicy.from_config(config))
    try:
        assert scheduler.decoupled is False
        with pytest.raises(ModelServerError) as refused:
            scheduler.submit_stream(Submission({"x": np.ones((1, 2), np.float32)}, ["y"], 1))
        line = refused.value.line()
        assert refused.value.code is Code.INVALID_ARGUMENT
        assert "rule=model-server/decoupled" in line and "change: call it with ModelInfer" in line
    finally:
        scheduler.close()
        scheduler.join(5)


def test_an_answer_that_breaks_the_engine_contract_is_refused_with_its_rule() -> None:
    with pytest.raises(EngineError) as refused:
        check_outputs("m", 4, {"y": np.ones((2, 1))}, ["y"], 3, batched=True)
    assert refused.value.detail == "engine returned 2 rows of 'y' for 3 rows in"
    assert refused.value.code is Code.INTERNAL
    assert refused.value.line().endswith("rule=engine/contract; change: the model files of m/4")


def test_an_unbatched_model_may_answer_any_number_of_rows() -> None:
    check_outputs("m", 1, {"y": np.ones((2, 1))}, ["y"], 3, batched=False)


def test_an_output_the_engine_left_out_is_no_breach() -> None:
    """Triton answers with the outputs its backend gave, asked for by name or not."""
    check_outputs("m", 1, {"y": np.ones((3, 1))}, ["y", "z"], 3, batched=True)
    check_outputs("m", 1, {}, ["y"], 3, batched=True)


class _HalfEngine(AffineEngine):
    """Answers y and never z, whatever it is asked for."""

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        assert outputs == ["y", "z"] or outputs == ["z"], outputs
        return super().execute(inputs, outputs)


@pytest.mark.parametrize("asked", [["y", "z"], ["z"]])
def test_each_request_of_a_batch_gets_the_outputs_its_engine_returned(asked: list[str]) -> None:
    """The batch's answer lacks z: each request's rows of y, and no z (nor an error)."""
    config = "max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 50000 }"
    engine = _HalfEngine()
    policy = BatchingPolicy.from_config(text_format.Parse(config, mc.ModelConfig()))
    scheduler = Scheduler("affine", 1, [engine], policy)

    async def infer() -> list[dict[str, np.ndarray]]:
        xs = [np.full((rows, 2), rows, np.float32) for rows in (1, 2, 3)]
        futures = [scheduler.submit(Submission({"x": x}, list(asked), len(x))) for x in xs]
        return list(await asyncio.gather(*futures))

    try:
        answers = asyncio.run(infer())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert engine.batch_rows == [6]  # one batch of the three
    for rows, answer in zip((1, 2, 3), answers, strict=True):
        if asked == ["z"]:
            assert answer == {}
            continue
        assert list(answer) == ["y"]
        np.testing.assert_array_equal(answer["y"], np.full((rows, 2), 4 * rows, np.float32))


class _ShortEngine(AffineEngine):
    """Answers one row fewer than it was given."""

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        return {"y": super().execute(inputs, outputs)["y"][1:]}


def test_a_scheduler_fails_a_batch_whose_engine_answers_too_few_rows() -> None:
    config = text_format.Parse("max_batch_size: 8", mc.ModelConfig())
    scheduler = Scheduler("affine", 1, [_ShortEngine()], BatchingPolicy.from_config(config))

    async def infer() -> None:
        await scheduler.submit(Submission({"x": np.ones((2, 2), np.float32)}, ["y"], 2))

    try:
        with pytest.raises(EngineError, match="engine returned 1 rows of 'y' for 2 rows in"):
            asyncio.run(infer())
    finally:
        scheduler.close()
        scheduler.join(5)


class _EachOnItsOwn(AffineEngine):
    """A model that reads requests (Triton's python backend): a request whose x is negative
    gets an error response, the others their rows; it notes whom each request's caller is."""

    takes_requests = True
    runs_on_loop = False

    def __init__(self) -> None:
        super().__init__()
        self.gone: list[bool | None] = []

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        requests = current_batch_requests() or []
        self.gone = [None if r.is_cancelled is None else r.is_cancelled() for r in requests]
        outcomes: list[dict[str, np.ndarray] | ModelyardError] = []
        start = 0
        for request in requests:
            x = inputs["x"][start : start + request.rows]
            start += request.rows
            if (x < 0).any():
                outcomes.append(EngineError("negative", code=Code.UNKNOWN, triton=True))
            else:
                outcomes.append({"y": x * 2})
        raise BatchOutcomes(outcomes)


def test_each_request_of_a_batch_gets_its_own_outcome_and_knows_whether_its_caller_went() -> None:
    config = "max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 50000 }"
    engine = _EachOnItsOwn()
    policy = BatchingPolicy.from_config(text_format.Parse(config, mc.ModelConfig()))
    scheduler = Scheduler("each", 1, [engine], policy)

    async def infer() -> list[Any]:
        shapes = ((1, 1), (2, -1), (3, 1))
        xs = [np.full((rows, 2), sign * rows, np.float32) for rows, sign in shapes]
        futures = []
        for index, x in enumerate(xs):
            CALLER_GONE.set(lambda index=index: index == 2)  # as the gRPC front door sets it
            futures.append(scheduler.submit(Submission({"x": x}, ["y"], len(x), parameters={})))
        return list(await asyncio.gather(*futures, return_exceptions=True))

    try:
        first, second, third = asyncio.run(infer())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert engine.gone == [False, False, True]
    np.testing.assert_array_equal(first["y"], np.full((1, 2), 2, np.float32))
    np.testing.assert_array_equal(third["y"], np.full((3, 2), 6, np.float32))
    assert isinstance(second, EngineError) and second.code is Code.UNKNOWN
    assert second.line().startswith("negative")
    assert (scheduler.stats.success_count, scheduler.stats.fail_count) == (2, 1)
    assert scheduler.stats.execution_count == 1
