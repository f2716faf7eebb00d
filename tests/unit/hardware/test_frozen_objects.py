"""Start-up objects frozen out of the collector, and what an unload gives back."""

from __future__ import annotations

import asyncio
import gc
import weakref

from modelyard.hardware.memory import (
    FrozenGarbage,
    collect_frozen_garbage,
    freeze_startup_objects,
)


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_an_unload_collects_cycles_that_start_up_froze() -> None:
    node = _Node()
    alive = weakref.ref(node)
    try:
        freeze_startup_objects()
        assert gc.get_freeze_count() > 0
        del node  # the model is unloaded: its objects are garbage now
        gc.collect()
        assert alive() is not None  # frozen: ordinary collections do not see it
        collect_frozen_garbage()
        assert alive() is None
        assert gc.get_freeze_count() > 0  # what is still alive is frozen again
    finally:
        gc.unfreeze()


def test_nothing_is_frozen_or_collected_where_start_up_froze_nothing() -> None:
    gc.unfreeze()
    collect_frozen_garbage()
    assert gc.get_freeze_count() == 0


def test_unloads_close_together_share_one_collection_at_the_interval_end() -> None:
    collected: list[float] = []

    async def unloads() -> FrozenGarbage:
        loop = asyncio.get_running_loop()
        garbage = FrozenGarbage(interval=0.2, collect=lambda: collected.append(loop.time()))
        garbage.after_unload(loop)  # the first after a quiet spell: at once
        assert len(collected) == 1
        for _ in range(5):
            garbage.after_unload(loop)  # within the interval: one collection, at its end
        assert len(collected) == 1
        await asyncio.sleep(0.35)
        assert len(collected) == 2
        assert collected[1] - collected[0] >= 0.2 - 0.01
        garbage.after_unload(loop)  # another within the interval, then the server stops
        garbage.close()
        return garbage

    garbage = asyncio.run(unloads())
    assert garbage.collections == 3
