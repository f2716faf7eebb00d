"""How busy the event loop is, measured by how late a 1 ms timer fires.

An idle loop fires its timer (nearly) on time; a loop that always has requests
ready fires it late (every ready callback runs before timers). Schedulers of
batching models read ``busy`` to choose between running a fast request inline
(low latency when idle) and queueing it so requests can share a batch (higher
throughput under load).
"""

from __future__ import annotations

import asyncio

INTERVAL_S = 0.001
# Busy once the smoothed lag passes BUSY_LAG_S; idle again only once it falls under
# IDLE_LAG_S. Batching shortens the loop's turns, and with it the lag: with one threshold
# both ways (0.5 ms until 2026-12), a loop at concurrency 16 read idle again as soon as
# its requests batched, ran them inline one by one, read busy, and so on. Measured with
# tiny_onnx on 2 vCPUs (bench/RESULTS.md, "Dynamic batching"): 0.2 ms / 0.05 ms served
# 1.3 times the requests of 0.5 ms at concurrency 16, the same at 1 and 64.
# Under uvloop, loop.time() counts whole milliseconds (libuv's clock), so each reading is
# 0, 1 or 2 ms and the smoothed lag is in effect the share of late readings. An idle
# uvloop reads 1 ms late on about one tick in ten, which sits between the thresholds: it
# reads busy 60-70 % of the time, and a lone request then waits one loop pass for the
# drain. Sporadic traffic (a request every 3 ms) measured no slower for it.
BUSY_LAG_S = 0.0002
IDLE_LAG_S = 0.00005
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
        self.observe(max(0.0, self._loop.time() - self._expected))
        self._schedule()

    def observe(self, lag_s: float) -> None:
        """Take one reading of how late the timer fired."""
        self.lag_s += _SMOOTHING * (lag_s - self.lag_s)
        self.busy = self.lag_s > (IDLE_LAG_S if self.busy else BUSY_LAG_S)
