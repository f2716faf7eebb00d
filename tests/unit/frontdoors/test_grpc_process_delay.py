"""Triton's TRITONSERVER_DELAY_GRPC_PROCESS (a ModelInfer call read that many milliseconds
after it came) and the verbose lines Triton writes of a call cancelled meanwhile, which its
qa/L0_request_cancellation counts."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from modelyard.frontdoors import grpc


@pytest.mark.parametrize(
    ("value", "secs"), [(None, 0.0), ("5000", 5.0), ("-1", 0.0), ("soon", 0.0), ("9" * 12, 600)]
)
def test_the_delay_reads_milliseconds_within_its_bound(
    monkeypatch: pytest.MonkeyPatch, value: str | None, secs: float
) -> None:
    if value is None:
        monkeypatch.delenv(grpc.PROCESS_DELAY_ENV, raising=False)
    else:
        monkeypatch.setenv(grpc.PROCESS_DELAY_ENV, value)
    assert grpc.process_delay_secs() == secs


def test_a_call_is_read_after_the_delay() -> None:
    service = SimpleNamespace(process_delay_secs=0.1)
    started = time.monotonic()
    asyncio.run(grpc.InferenceService._read_later(service, 1))  # type: ignore[arg-type]
    assert time.monotonic() - started >= 0.1


def test_a_call_cancelled_before_it_is_read_is_logged_at_step_start() -> None:
    """As Triton's: once when the cancellation comes, once when the delayed read finds it."""

    async def main() -> list[str]:
        service = SimpleNamespace(process_delay_secs=0.2)
        with capture_logs() as logs:
            read = asyncio.ensure_future(grpc.InferenceService._read_later(service, 7))  # type: ignore[arg-type]
            await asyncio.sleep(0.05)
            read.cancel()
            with pytest.raises(asyncio.CancelledError):
                await read
        return [entry["triton"] for entry in logs]

    line = (
        "Cancellation notification received for ModelInferHandler, rpc_ok=1, context 7, 7 "
        "step START"
    )
    assert asyncio.run(main()) == [line, line]
