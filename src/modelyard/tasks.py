"""Background asyncio tasks: stopping one that runs until it is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has ended; its cancellation is expected, not raised."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
