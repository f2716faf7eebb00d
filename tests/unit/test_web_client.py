"""The package's HTTP calls off the request path: answers of any status, streamed lines,
and one WebError for whatever keeps a call from being answered."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web

from modelyard.processes import free_port
from modelyard.web_client import WebError, WebSession, fetch


async def _json(request: web.Request) -> web.Response:
    body = await request.json() if request.can_read_body else None
    return web.json_response(
        {"method": request.method, "body": body, "key": request.headers.get("x-api-key")},
        status=int(request.query.get("status", "200")),
    )


async def _stall(request: web.Request) -> web.Response:
    await asyncio.sleep(1)
    return web.Response(text="late")


async def _text(request: web.Request) -> web.Response:
    return web.Response(text="plain")


async def _stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    size = int(request.query.get("size", "10"))
    for number in range(3):
        await response.write(b"%d:" % number + b"x" * size + b"\n")
    return response


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """An aiohttp server on a thread of its own: its base URL."""
    app = web.Application()
    app.router.add_route("*", "/json", _json)
    app.router.add_get("/stall", _stall)
    app.router.add_get("/text", _text)
    app.router.add_post("/stream", _stream)
    port = free_port()
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_a_synchronous_call_sends_json_and_headers_and_reads_any_status(server: str) -> None:
    reply = fetch(
        "POST", f"{server}/json?status=409", json={"a": 1}, headers={"x-api-key": "k"}, timeout=5
    )
    assert reply.status == 409
    assert reply.content_type == "application/json"
    assert reply.json() == {"method": "POST", "body": {"a": 1}, "key": "k"}


def test_a_closed_port_and_a_stalled_answer_are_each_a_web_error(server: str) -> None:
    with pytest.raises(WebError, match="Connect"):
        fetch("GET", f"http://127.0.0.1:{free_port()}/", timeout=2)
    with pytest.raises(WebError, match="timed out"):
        fetch("GET", f"{server}/stall", timeout=0.2)


def test_a_header_value_that_cannot_be_sent_is_a_web_error(server: str) -> None:
    with pytest.raises(WebError):
        fetch("GET", f"{server}/json", headers={"x-api-key": "a\r\nx-evil: 1"}, timeout=5)


def test_a_body_that_is_not_json_is_a_value_error_when_read_as_json(server: str) -> None:
    reply = fetch("GET", f"{server}/text", timeout=5)
    assert (reply.status, reply.text) == (200, "plain")
    with pytest.raises(ValueError):
        reply.json()


async def _collected(session: WebSession, url: str) -> tuple[int, list[bytes]]:
    async with session.lines("POST", url, content=b"{}") as (status, lines):
        return status, [line async for line in lines]


def test_a_streamed_answer_comes_line_by_line_and_a_line_past_the_limit_is_a_web_error(
    server: str,
) -> None:
    async def run() -> None:
        async with WebSession(2, max_line_bytes=1024) as session:
            status, lines = await _collected(session, f"{server}/stream?size=10")
            assert status == 200
            assert lines == [b"%d:" % n + b"x" * 10 + b"\n" for n in range(3)]
            with pytest.raises(WebError, match="too long"):
                await _collected(session, f"{server}/stream?size=100000")
            # the session still answers after the refused stream
            assert (await session.get(f"{server}/json")).status == 200

    asyncio.run(run())
