"""Every wait the server imposes counts in request and queue time: from when the front
door read the request's first bytes, and until the event loop took the answer from an
instance thread."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np

from modelyard.frontdoors.http import HttpFrontend
from modelyard.frontdoors.http_connections import RECEIVED_NS
from modelyard.server.manager import ControlMode
from tests.support.dataplane import running_dataplane
from tests.support.models import slow_double
from tests.unit.frontdoors.test_http_lane import binary_request, post

WAITED_NS = 40_000_000  # how long ago the request's first bytes were read


def _inference_stats(app: HttpFrontend) -> dict[str, Any]:
    stats = app.dataplane.statistics("slow_double", None)["model_stats"][0]
    return stats["inference_stats"]  # type: ignore[no-any-return]


async def _post(app: HttpFrontend, received_ns: int | None) -> int:
    body, header_length = binary_request(np.ones((1, 2), np.float32))
    stamp = {} if received_ns is None else {RECEIVED_NS: received_ns}
    status, _ = await post(app, body, header_length, scope_too=stamp)
    return status


def test_the_wait_before_a_request_was_queued_counts_in_its_queue_time(tmp_path: Path) -> None:
    slow_double(tmp_path)

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            app = HttpFrontend(dp)
            for received in (None, time.monotonic_ns() - WAITED_NS):  # general path, then lane
                before = _inference_stats(app)
                assert await _post(app, received) == 200
                after = _inference_stats(app)
                queue = int(after["queue"]["ns"]) - int(before["queue"]["ns"])
                request = int(after["success"]["ns"]) - int(before["success"]["ns"])
                if received is None:  # no stamp: counted from the queue, as before
                    assert queue < WAITED_NS
                else:
                    assert queue >= WAITED_NS and request >= WAITED_NS

    asyncio.run(scenario())


def test_the_wait_for_the_event_loop_to_take_an_answer_counts_too(tmp_path: Path) -> None:
    """An instance thread finishes while the loop is busy: the request waited for it."""
    slow_double(tmp_path, delay=0.02)

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            app = HttpFrontend(dp)
            before = _inference_stats(app)
            asyncio.get_running_loop().call_later(0.005, time.sleep, 0.06)  # a busy loop
            assert await _post(app, None) == 200
            after = _inference_stats(app)
            request = int(after["success"]["ns"]) - int(before["success"]["ns"])
            compute = int(after["compute_infer"]["ns"]) - int(before["compute_infer"]["ns"])
            queue = int(after["queue"]["ns"]) - int(before["queue"]["ns"])
            # the execution ended ~20 ms in; the loop took the answer ~65 ms in
            assert request >= 55_000_000 and queue >= 30_000_000
            assert compute < 50_000_000

    asyncio.run(scenario())
