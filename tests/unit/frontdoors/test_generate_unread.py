"""A generate call's responses waiting for its writer are bounded as a stream's are."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from modelyard.dataplane import StreamResponse
from modelyard.errors import Code, ModelyardError
from modelyard.frontdoors import generate
from modelyard.types import InferResponse, OutputTensor


def _response(rows: int) -> StreamResponse:
    data = np.zeros(rows, np.float32)
    return StreamResponse(InferResponse("m", "1", [OutputTensor("y", "FP32", data)]), None, False)


def test_a_writer_that_stops_writing_cancels_the_call_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(generate, "MAX_UNREAD", 3)

    async def main() -> None:
        unread = generate._Unread("m")
        unread.producer = asyncio.get_running_loop().create_future()
        for _ in range(5):
            unread.put(_response(1))
        assert unread.producer.cancelled()  # the model's stream goes with the call
        items = [await unread.get() for _ in range(unread.qsize())]
        assert [type(item) for item in items] == [StreamResponse] * 3 + [generate._Ended]
        ended = items[-1]
        assert isinstance(ended, generate._Ended) and isinstance(ended.error, ModelyardError)
        assert ended.error.code is Code.RESOURCE_EXHAUSTED
        assert "rule=model-server/unread-responses" in ended.error.line()
        assert unread.unread_bytes == 0

    asyncio.run(main())


def test_unread_bytes_count_as_well(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "MAX_UNREAD_BYTES", 1000)

    async def main() -> None:
        unread = generate._Unread("m")
        unread.put(_response(200))  # 800 bytes: kept
        unread.put(_response(200))  # past 1,000: the call ends
        first, last = await unread.get(), await unread.get()
        assert isinstance(first, StreamResponse) and isinstance(last, generate._Ended)
        assert last.error is not None and unread.over

    asyncio.run(main())
