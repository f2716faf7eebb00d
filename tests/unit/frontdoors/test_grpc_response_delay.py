"""Triton's TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC (each RPC but inference answered
that late, after it ran), and repository calls that outlast a caller who gave up."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc as grpc_lib
import pytest

from modelyard import error_rules
from modelyard.errors import ConfigError
from modelyard.frontdoors import grpc


@pytest.mark.parametrize(
    ("value", "secs"),
    [(None, 0), ("2", 2), (" 3 ", 3), ("-4", 0), ("two", 0), ("", 0), ("99999999999", 600)],
)
def test_the_delay_reads_whole_seconds_within_its_bound(
    monkeypatch: pytest.MonkeyPatch, value: str | None, secs: int
) -> None:
    if value is None:
        monkeypatch.delenv(grpc.RESPONSE_DELAY_ENV, raising=False)
    else:
        monkeypatch.setenv(grpc.RESPONSE_DELAY_ENV, value)
    assert grpc.response_delay_secs() == secs


class _Context:
    def __init__(self) -> None:
        self.aborted: tuple[Any, str] | None = None

    def invocation_metadata(self) -> tuple[()]:
        return ()

    async def abort(self, code: Any, details: str, metadata: Any = ()) -> None:
        self.aborted = (code, details)
        raise grpc_lib.aio.AbortError()


class _Service:
    """What the RPC wrapper reads of InferenceService."""

    governance = None
    restrictions = None

    def __init__(self, delay: int) -> None:
        self.response_delay_secs = delay
        self.ran: list[str] = []

    @grpc._rpc
    async def ServerLive(self, request: Any, context: Any) -> str:
        self.ran.append("ServerLive")
        return "live"

    @grpc._rpc
    async def RepositoryIndex(self, request: Any, context: Any) -> str:
        self.ran.append("RepositoryIndex")
        raise ConfigError.of(error_rules.GRPC_PORT, "refused")

    @grpc._rpc
    async def ModelInfer(self, request: Any, context: Any) -> str:
        self.ran.append("ModelInfer")
        return "inferred"


def test_a_call_runs_at_once_and_is_answered_after_the_delay() -> None:
    async def main() -> None:
        service = _Service(delay=30)
        answer = asyncio.ensure_future(service.ServerLive(None, _Context()))
        await asyncio.sleep(0.05)
        assert service.ran == ["ServerLive"] and not answer.done()
        answer.cancel()  # the caller's deadline passed: what the call did stays done
        with pytest.raises(asyncio.CancelledError):
            await answer

    asyncio.run(main())


def test_an_error_is_answered_after_the_delay_too() -> None:
    async def main() -> None:
        service = _Service(delay=1)
        context = _Context()
        answer = asyncio.ensure_future(service.RepositoryIndex(None, context))
        await asyncio.sleep(0.05)
        assert service.ran == ["RepositoryIndex"] and context.aborted is None
        with pytest.raises(grpc_lib.aio.AbortError):
            await asyncio.wait_for(answer, 5)
        assert context.aborted is not None and "refused" in context.aborted[1]

    asyncio.run(main())


def test_inference_and_an_unset_delay_answer_at_once() -> None:
    async def main() -> None:
        delayed = _Service(delay=30)
        assert await asyncio.wait_for(delayed.ModelInfer(None, _Context()), 1) == "inferred"
        plain = _Service(delay=0)
        assert await asyncio.wait_for(plain.ServerLive(None, _Context()), 1) == "live"

    asyncio.run(main())


def test_a_load_outlasts_the_caller_who_gave_up() -> None:
    async def main() -> None:
        finished = asyncio.Event()

        async def load() -> str:
            await asyncio.sleep(0.1)
            finished.set()
            return "loaded"

        caller = asyncio.ensure_future(grpc._outlasting_caller(load()))
        await asyncio.sleep(0.01)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        await asyncio.wait_for(finished.wait(), 2)  # the load went on to its end

        async def fails() -> None:
            raise ValueError("bad")

        with pytest.raises(ValueError, match="bad"):  # a caller still there gets its error
            await grpc._outlasting_caller(fails())

    asyncio.run(main())
