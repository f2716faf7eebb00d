"""A gRPC stream reads no further while its requests in flight reach the bound."""

from __future__ import annotations

import asyncio

import pytest

from modelyard.frontdoors import grpc


@pytest.mark.parametrize(("sizes", "waits_at"), [((1, 1, 1), 2), ((600, 500, 200), 1)])
def test_the_stream_waits_for_room_past_the_count_or_the_bytes(
    monkeypatch: pytest.MonkeyPatch, sizes: tuple[int, ...], waits_at: int
) -> None:
    monkeypatch.setattr(grpc, "MAX_STREAM_IN_FLIGHT", 2)
    monkeypatch.setattr(grpc, "MAX_STREAM_IN_FLIGHT_BYTES", 1000)

    async def main() -> None:
        in_flight = grpc._InFlight()
        for size in sizes[:waits_at]:
            await in_flight.enter(size)
        blocked = asyncio.ensure_future(in_flight.enter(sizes[waits_at]))
        await asyncio.sleep(0.01)
        assert not blocked.done()  # the next message is not read
        in_flight.leave(sizes[0])  # an answer is written
        await asyncio.wait_for(blocked, 1)
        assert in_flight.count == waits_at
        assert in_flight.bytes == sum(sizes[1 : waits_at + 1])

    asyncio.run(main())


def test_one_message_over_the_byte_bound_alone_still_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grpc, "MAX_STREAM_IN_FLIGHT_BYTES", 1000)

    async def main() -> None:
        in_flight = grpc._InFlight()
        await asyncio.wait_for(in_flight.enter(5000), 1)
        assert (in_flight.count, in_flight.bytes) == (1, 5000)

    asyncio.run(main())
