"""The scheduler contract: a model that answers once refuses a stream with its error line; an
engine's answer that breaks the engine contract fails its batch with one."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import Code, EngineError, ModelServerError
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


@pytest.mark.parametrize(
    ("results", "batched", "detail"),
    [
        ({}, True, "engine returned no output 'y' for model 'm'"),
        ({"y": np.ones((2, 1))}, True, "engine returned 2 rows of 'y' for 3 rows in"),
    ],
)
def test_an_answer_that_breaks_the_engine_contract_is_refused_with_its_rule(
    results: dict[str, np.ndarray], batched: bool, detail: str
) -> None:
    with pytest.raises(EngineError) as refused:
        check_outputs("m", 4, results, ["y"], 3, batched)
    assert refused.value.detail == detail
    assert refused.value.code is Code.INTERNAL
    assert refused.value.line().endswith("rule=engine/contract; change: the model files of m/4")


def test_an_unbatched_model_may_answer_any_number_of_rows() -> None:
    check_outputs("m", 1, {"y": np.ones((2, 1))}, ["y"], 3, batched=False)


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
