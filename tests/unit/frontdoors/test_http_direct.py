"""The direct path of the bounded HTTP protocol: which requests it reads whole and hands to
the front door, which it leaves to the ASGI app, and how it answers, on a real socket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from modelyard.cli.runtime import http_config
from modelyard.frontdoors.http_connections import DIRECT_MAX_BODY_BYTES, DirectReply
from modelyard.processes import free_port

INFER = "/v2/models/m/infer"


class Recorder:
    """A front door's direct path, and an ASGI app (itself), that note what reached each."""

    def __init__(self, decline: bool = False, delay_s: float = 0.0) -> None:
        self.decline = decline
        self.delay_s = delay_s
        self.direct_calls: list[tuple[str, bytes]] = []
        self.app_calls: list[tuple[str, bytes]] = []
        self.replies: list[Callable[[], None]] = []

    def direct(
        self,
        path: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        received_ns: int,
        reply: DirectReply,
    ) -> bool:
        assert received_ns > 0
        if self.decline:
            return False
        self.direct_calls.append((path, body))
        answer = json.dumps({"direct": len(self.direct_calls), "body": len(body)}).encode()

        def send() -> None:
            reply(200, [(b"content-length", str(len(answer)).encode())], answer)

        if self.delay_s:
            asyncio.get_running_loop().call_later(self.delay_s, send)
        else:
            send()
        return True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:  # the app
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.app_calls.append((scope["path"], body))
        answer = json.dumps({"app": len(self.app_calls), "body": len(body)}).encode()
        headers = [(b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


@asynccontextmanager
async def serving(recorder: Recorder) -> AsyncIterator[int]:
    port = free_port()
    server = uvicorn.Server(http_config(recorder, "127.0.0.1", port, direct=recorder.direct))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def post(path: str, body: bytes, *headers: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "host: test", f"content-length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], dict[str, int]]:
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode()
    if head.startswith("HTTP/1.1 100 "):  # an interim answer to Expect: 100-continue
        head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode()
    lines = head.strip().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    body = await reader.readexactly(int(headers["content-length"]))
    return lines[0], headers, json.loads(body)


async def exchange(port: int, data: bytes, answers: int = 1) -> list[Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        return [await read_answer(reader) for _ in range(answers)]
    finally:
        writer.close()


def run(recorder: Recorder, check: Callable[[int], Any]) -> None:
    async def main() -> None:
        async with serving(recorder) as port:
            await check(port)

    asyncio.run(main())


def test_a_sized_infer_post_is_answered_directly_in_one_write() -> None:
    recorder = Recorder()

    async def check(port: int) -> None:
        [(status, headers, body)] = await exchange(port, post(INFER, b'{"inputs": []}'))
        assert status == "HTTP/1.1 200 OK" and body == {"direct": 1, "body": 14}
        assert "connection" not in headers  # kept alive

    run(recorder, check)
    assert recorder.direct_calls == [(INFER, b'{"inputs": []}')] and recorder.app_calls == []


def test_what_the_direct_path_declines_reaches_the_app_with_its_whole_body() -> None:
    recorder = Recorder(decline=True)

    async def check(port: int) -> None:
        [(_, _, body)] = await exchange(port, post(INFER, b"x" * 5000))
        assert body == {"app": 1, "body": 5000}

    run(recorder, check)
    assert recorder.app_calls == [(INFER, b"x" * 5000)]


def test_other_requests_take_the_app() -> None:
    recorder = Recorder()
    chunked = (
        f"POST {INFER} HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n"
    ).encode()
    large = b" " * (DIRECT_MAX_BODY_BYTES + 1)

    async def check(port: int) -> None:
        for request in (
            chunked,  # no length to bound it by
            post(INFER, large),  # streamed, bounded as it arrives
            post(INFER + "?x=1", b"{}"),  # a query string
            post("/v2/models/m%2Fx/infer", b"{}"),  # an escaped path
            post("/v2/repository/index", b"{}"),  # not an infer call
            post(INFER, b"{}", "expect: 100-continue"),
            f"GET {INFER} HTTP/1.1\r\nhost: t\r\n\r\n".encode(),
            post(INFER, b"{}").replace(b"HTTP/1.1", b"HTTP/1.0"),
        ):
            [(status, _, body)] = await exchange(port, request)
            assert status.startswith("HTTP/1.1 200") and "app" in body, request[:60]

    run(recorder, check)
    assert recorder.direct_calls == []
    assert len(recorder.app_calls) == 8
    assert recorder.app_calls[0] == (INFER, b"abc")
    assert recorder.app_calls[1] == (INFER, b" " * (DIRECT_MAX_BODY_BYTES + 1))


def test_connection_close_is_answered_then_closed() -> None:
    recorder = Recorder()

    async def check(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post(INFER, b"{}", "connection: close"))
        _, headers, body = await read_answer(reader)
        assert headers["connection"] == "close" and body == {"direct": 1, "body": 2}
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        writer.close()

    run(recorder, check)


def test_pipelined_requests_behind_a_direct_one_are_answered_in_order() -> None:
    recorder = Recorder(delay_s=0.1)  # the first is still in flight when the rest arrive
    health = b"GET /v2/health/live HTTP/1.1\r\nhost: t\r\n\r\n"

    async def check(port: int) -> None:
        data = post(INFER, b"{}") + health + post(INFER, b"{1}") + post(INFER, b"{22}")
        answers = await exchange(port, data, answers=4)
        assert [body for _, _, body in answers] == [
            {"direct": 1, "body": 2},
            {"app": 1, "body": 0},
            # queued behind the first: the app's, as any pipelined request
            {"app": 2, "body": 3},
            {"app": 3, "body": 4},
        ]

    run(recorder, check)


def test_a_caller_that_leaves_before_its_answer_costs_nothing_else() -> None:
    recorder = Recorder(delay_s=0.2)

    async def check(port: int) -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post(INFER, b"{}"))
        await writer.drain()
        await asyncio.sleep(0.05)  # read by the server, not yet answered
        writer.close()
        await asyncio.sleep(0.3)  # its answer comes to a closed connection
        [(status, _, body)] = await exchange(port, post(INFER, b"{}"))
        assert status == "HTTP/1.1 200 OK" and body == {"direct": 2, "body": 2}

    run(recorder, check)


def test_a_shutdown_waits_for_a_direct_answer_and_closes_after_it() -> None:
    recorder = Recorder(delay_s=0.3)

    async def main() -> None:
        port = free_port()
        config = http_config(recorder, "127.0.0.1", port, direct=recorder.direct)
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post(INFER, b"{}"))
        await writer.drain()
        await asyncio.sleep(0.1)
        server.should_exit = True  # while the request is in flight
        status, headers, body = await read_answer(reader)
        assert status == "HTTP/1.1 200 OK" and headers["connection"] == "close"
        assert body == {"direct": 1, "body": 2}
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        await asyncio.wait_for(task, 10)

    asyncio.run(main())
