"""What governance learns of an HTTP call from its path and headers."""

from __future__ import annotations

import asyncio
from typing import Any

from modelyard.frontdoors import http, http_routes
from modelyard.governance.runtime import Governance
from modelyard.governance.service_config import empty_service_config

GOVERNANCE = Governance(empty_service_config("com.example.svc"))


def scope(path: str, *headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"method": "POST", "path": path, "headers": list(headers)}


def test_a_call_carries_interface_model_and_credentials() -> None:
    call = http._call_from_headers(
        GOVERNANCE,
        scope(
            "/v2/models/ranker/versions/2/infer",
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer tok-1 "),
            (b"x-request-id", b"req-7"),
        ),
    )
    assert (call.interface, call.model, call.version) == ("infer", "ranker", "2")
    assert (call.bearer_token, call.api_key, call.request_id) == ("tok-1", None, "req-7")
    key_call = http._call_from_headers(
        GOVERNANCE,
        scope("/v2/repository/models/ranker/load", (b"x-api-key", b"k")),
    )
    assert (key_call.interface, key_call.api_key) == ("admin", "k")


def test_remembered_paths_stay_bounded() -> None:
    routes = http_routes.RouteCache()
    for i in range(http_routes.RouteCache.MAX + 10):
        assert http_routes.governed_as(f"/v2/models/m{i}")[1] == f"m{i}"
        assert routes(f"/v2/models/m{i}/versions/2/infer") == (f"m{i}", "2", "/infer")
    assert len(routes._known) <= http_routes.RouteCache.MAX
    assert http_routes.governed_as("/v2/health/ready") == ("health", None, None)
    assert http_routes.governed_as("/v2/logging") == ("admin", None, None)  # an operator's call
    assert http_routes.model_route("/v2/models/stats") is None


def _answer(
    app: http.HttpFrontend,
    chunks: list[bytes],
    path: str = "/v2/repository/index",
    *headers: tuple[bytes, bytes],
    method: str = "POST",
) -> tuple[int, list[tuple[bytes, bytes]], str]:
    """Drive the ASGI app with a body that arrives in ``chunks``: status, headers, body."""
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    request = {"type": "http", **scope(path, *headers), "method": method}
    asyncio.run(app(request, receive, send))
    return sent[0]["status"], sent[0]["headers"], sent[1]["body"].decode()


def test_a_streamed_body_over_the_limit_is_refused_whatever_its_chunks() -> None:
    app = http.HttpFrontend(None, max_body_bytes=10)  # type: ignore[arg-type]
    for chunks in ([b"x" * 11], [b"x" * 6, b"x" * 5], [b"{}", b"", b" " * 9]):
        status, _, body = _answer(app, chunks)
        assert status == 413, chunks
        assert "over the limit of 10 bytes" in body
        assert "rule=protocol/max-body-size" in body


def _refuse_declared(path: str) -> tuple[list[dict[str, Any]], int]:
    """A body of three 4-byte messages declaring 1000 bytes, to an app that takes 10:
    what the app sent, and how many messages it left unread."""
    app = http.HttpFrontend(None, max_body_bytes=10)  # type: ignore[arg-type]
    messages = [{"type": "http.request", "body": b"x" * 4, "more_body": True}] * 3
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    request = {"type": "http", **scope(path, (b"content-length", b"1000"))}
    asyncio.run(app(request, receive, send))
    return sent, len(messages)


def test_a_body_that_declares_a_length_over_the_limit_is_refused_before_the_rest_is_read() -> None:
    for path in ("/v2/repository/index", "/v2/models/m/infer"):
        sent, unread = _refuse_declared(path)
        assert sent[0]["status"] == 413, path
        line = sent[1]["body"].decode()
        assert "request body of 1000 bytes is over the limit of 10 bytes" in line
        assert unread == 2  # only the first message was read


def test_a_header_length_that_is_no_integer_is_refused_with_its_rule() -> None:
    app = http.HttpFrontend(None)  # type: ignore[arg-type]  # refused before any model is asked
    for value in (b"12x", b"-5", b""):
        header = (b"inference-header-content-length", value)
        status, _, body = _answer(app, [b"{}"], "/v2/models/m/infer", header)
        assert status == 400, value
        assert "inference-header-content-length must be an integer" in body
        assert "rule=protocol/binary-header" in body


def test_an_infer_route_called_with_another_method_is_refused_with_its_rule() -> None:
    app = http.HttpFrontend(None)  # type: ignore[arg-type]  # refused before any model is asked
    for method in ("GET", "PUT", "DELETE"):
        path = "/v2/models/m/versions/1/infer"
        status, headers, body = _answer(app, [b""], path, method=method)
        assert status == 405, method
        assert (b"allow", b"POST") in headers
        assert f"/v2/models/m/versions/1/infer takes POST, not {method}" in body
        assert "rule=protocol/route" in body


def test_a_route_called_with_a_method_it_does_not_take_gets_405_and_what_it_takes() -> None:
    app = http.HttpFrontend(None)  # type: ignore[arg-type]  # refused before any model is asked
    cases = [
        ("POST", "/v2/health/live", b"GET, HEAD"),
        ("PUT", "/v2/health/ready", b"GET, HEAD"),
        ("POST", "/v2", b"GET, HEAD"),
        ("DELETE", "/v2/models/stats", b"GET, HEAD"),
        ("POST", "/v2/models/m", b"GET, HEAD"),
        ("POST", "/v2/models/m/versions/1/ready", b"GET, HEAD"),
        ("PUT", "/v2/modelyard/rejections", b"GET, HEAD"),
        ("GET", "/v2/repository/index", b"POST"),
        ("GET", "/v2/repository/models/m/load", b"POST"),
    ]
    for method, path, allow in cases:
        status, headers, line = _answer(app, [b""], path, method=method)
        assert status == 405, (method, path)
        assert (b"allow", allow) in headers, (method, path)
        takes = allow.decode().replace(", ", " or ")
        assert f"{path} takes {takes}, not {method}" in line
        assert f"change: the client's call: send {takes} {path}" in line
        assert "rule=protocol/route" in line
    status, _, _ = _answer(app, [b""], "/v2/nothing")
    assert status == 404  # no route at all is still not found
