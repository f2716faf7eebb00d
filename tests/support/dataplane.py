"""A dataplane over a model repository, in-process: its manager started, and stopped after."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager


@contextlib.asynccontextmanager
async def running_dataplane(repository: Path, mode: ControlMode) -> AsyncIterator[LocalDataPlane]:
    dp = LocalDataPlane(ModelManager(ModelRepository(repository), mode))
    await dp.manager.start()
    try:
        yield dp
    finally:
        await dp.manager.stop()


def run_on_dataplane(
    scenario: Callable[[LocalDataPlane], Awaitable[Any]], roots: Path | list[Path], **kw: Any
) -> Any:
    """``scenario`` on a started dataplane over ``roots`` (``kw``: the manager's settings)."""

    async def main() -> Any:
        dp = LocalDataPlane(ModelManager(ModelRepository(roots), **kw))
        await dp.manager.start()
        try:
            return await scenario(dp)
        finally:
            await dp.manager.stop()

    return asyncio.run(main())
