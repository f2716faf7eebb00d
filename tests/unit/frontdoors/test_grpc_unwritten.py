"""A gRPC stream's answers waiting to be written are bounded as a decoupled stream's are."""

from __future__ import annotations

import asyncio

import pytest
from tritonclient.grpc import service_pb2 as pb

from modelyard.frontdoors import grpc


def _reply(size: int) -> pb.ModelStreamInferResponse:
    response = pb.ModelInferResponse(model_name="m", raw_output_contents=[b"\0" * size])
    return pb.ModelStreamInferResponse(infer_response=response)


@pytest.mark.parametrize(("count", "size", "bound"), [(5, 1, "MAX_UNREAD"), (2, 800, "bytes")])
def test_a_caller_that_stops_reading_ends_its_stream_past_the_bound(
    monkeypatch: pytest.MonkeyPatch, count: int, size: int, bound: str
) -> None:
    monkeypatch.setattr(grpc, "MAX_UNREAD", 3)
    monkeypatch.setattr(grpc, "MAX_UNREAD_BYTES", 1000)

    async def main() -> None:
        answers = grpc._Unwritten()
        reader = asyncio.ensure_future(asyncio.sleep(60))
        answers.reader = reader
        for _ in range(count):
            answers.put(_reply(size))
        await asyncio.sleep(0)
        assert reader.cancelled() and answers.over  # the stream's requests go with it
        replies = [await answers.get() for _ in range(answers.qsize())]
        assert replies[-1] is None  # the stream ends
        error = replies[-2]
        assert error is not None and "rule=model-server/unread-responses" in error.error_message
        kept = replies[:-2]
        assert len(kept) == (3 if bound == "MAX_UNREAD" else 1)
        assert answers.unwritten_bytes == 0

    asyncio.run(main())
