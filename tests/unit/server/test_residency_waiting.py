"""A model whose load woke requests that are not yet queued is not unloaded to make room."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from modelyard.errors import MEMORY_BUDGET_RULE, ModelServerError
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.manager import ModelManager
from modelyard.server.residency import COST, Residency
from tests.integration.test_residency import MB, embedding_table


@pytest.mark.parametrize("policy", ["lru", COST])
def test_requests_woken_by_a_load_keep_their_model_until_they_are_queued(
    tmp_path: Path, policy: str
) -> None:
    for name in ("a", "b"):
        embedding_table(tmp_path, name, mb=20)

    async def scenario() -> None:
        residency = Residency(36 * MB, policy=policy)  # one table, not two
        manager = ModelManager(ModelRepository(tmp_path), residency=residency)
        await manager.start()
        try:
            await manager.make_resident("a", None)
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
