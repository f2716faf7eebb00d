"""A model whose load woke requests that are not yet queued is not unloaded to make room;
a decoupled model's streamed requests count as its use."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import MEMORY_BUDGET_RULE, ModelServerError
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ModelManager
from modelyard.server.residency import COST, Residency
from modelyard.types import InferRequest
from tests.integration.test_residency import MB, embedding_table
from tests.support.models import write_python_model


@pytest.mark.parametrize("policy", ["lru", COST])
def test_requests_woken_by_a_load_keep_their_model_until_they_are_queued(
    tmp_path: Path, policy: str
) -> None:
    for name in ("a", "b"):
        embedding_table(tmp_path, name, mb=20)

    async def scenario() -> None:
        residency = Residency(1 << 30, policy=policy)
        manager = ModelManager(ModelRepository(tmp_path), residency=residency)
        await manager.start()
        try:
            await manager.make_resident("a", None)
            # room for one table, not two: what "a" counts for and half a table more (set
            # from its measure: a first load in a test process once measured 40 MB here)
            residency.budget = manager.resident_bytes()["a"] + 10 * MB
            residency.of("a").waiting = 1  # woken by its load, not yet in its queue
            with pytest.raises(ModelServerError) as refused:
                await manager.make_resident("b", None)
            assert refused.value.rule == MEMORY_BUDGET_RULE
            assert set(manager.resident_bytes()) == {"a"}
            residency.of("a").waiting = 0  # queued and answered: idle again
            await manager.make_resident("b", None)
            assert set(manager.resident_bytes()) == {"b"}
        finally:
            await manager.stop()

    asyncio.run(scenario())


REPEAT = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            sender = request.get_response_sender()
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

DECOUPLED = """
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_INT32 dims: [ 1 ] }]
output [{ name: "Y" data_type: TYPE_INT32 dims: [ 1 ] }]
model_transaction_policy { decoupled: true }
"""


def test_a_decoupled_models_streamed_requests_count_as_its_use_and_rate(tmp_path: Path) -> None:
    write_python_model(tmp_path, "repeat", REPEAT, DECOUPLED)

    async def scenario() -> None:
        residency = Residency(512 * MB, policy=COST)
        dp = LocalDataPlane(ModelManager(ModelRepository(tmp_path), residency=residency))
        await dp.manager.start()
        try:
            request = InferRequest("repeat", None, {"X": np.array([3], np.int32)}, {"X": "INT32"})
            for _ in range(3):
                items = [item async for item in dp.infer_stream(request)]
                assert items[0].response is not None and items[-1].final
            state = residency.of("repeat")
            assert state.asked == 3
            assert residency.rate(state, residency.now()) > 0
        finally:
            await dp.manager.stop()

    asyncio.run(scenario())
