"""How busy the event loop is, measured by how late a 1 ms timer fires.

An idle loop fires its timer on time; a loop that always has requests ready
fires it late (every ready callback runs before timers). Schedulers of
batching models read ``busy`` to choose between running a fast request inline
(low latency when idle) and queueing it so requests can share a batch (higher
throughput under load).
"""

from __future__ import annotations

import asyncio

INTERVAL_S = 0.001
# measured on 2 vCPUs with tiny_onnx: 0.5 ms beat 0.2 ms and 2 ms at concurrency 16
# and 64 (2 ms kept requests inline too long and lost 25 % to missed batching)
BUSY_LAG_S = 0.0005
_SMOOTHING = 0.2


class LoopLoad:
    def __init__(self) -> None:
        self.lag_s = 0.0
        self.busy = False
        self._expected = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self) -> None:
        assert self._loop is not None
        self._expected = self._loop.time() + INTERVAL_S
        self._handle = self._loop.call_at(self._expected, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        lag = max(0.0, self._loop.time() - self._expected)
        self.lag_s += _SMOOTHING * (lag - self.lag_s)
        self.busy = self.lag_s > BUSY_LAG_S
        self._schedule()
