"""Start-up objects frozen out of the collector, and what an unload gives back."""

from __future__ import annotations

import gc
import weakref

from modelyard.hardware.memory import collect_frozen_garbage, freeze_startup_objects


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
