"""A dataplane over a model repository, in-process: its manager started, and stopped after."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager


@contextlib.asynccontextmanager
async def running_dataplane(repository: Path, mode: ControlMode) -> AsyncIterator[LocalDataPlane]:
    dp = LocalDataPlane(ModelManager(ModelRepository(repository), mode))
    await dp.manager.start()
    try:
        yield dp
    finally:
        await dp.manager.stop()
