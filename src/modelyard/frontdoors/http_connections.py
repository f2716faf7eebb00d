"""What one HTTP connection may hold: uvicorn's httptools protocol, with bounds.

uvicorn bounds none of this itself: a socket that never sends a byte stays
open for good, a request's headers or body may arrive as slowly as the caller
likes, httptools gathers a header block of any size, and its connection limit
answers a plain-text 503 (and counts idle sockets against every caller).
``BoundedHttpProtocol`` adds, per connection:

* an idle timeout, from the connection's start and after each response;
* a header timeout, from a request's first byte to the end of its headers,
  and a body timeout, from there to the end of its body (slowloris);
* a header-block limit, counted as the bytes arrive, before httptools holds
  them (431);
* a connection limit, refused at once with the error line (503);
* the error line on the parser's own 400 for a malformed request.

A header's value is kept as sent, trailing blanks too, as Triton keeps it.

Timeouts are read by one sweep per server (``_Sweeper``) on a coarse clock,
not a timer per request: a request costs two attribute writes. A refusal is
written, the sending side shut, and whatever else the caller sends discarded
for a moment before the socket closes, so the caller reads the answer instead
of a reset.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
import orjson
import structlog
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from modelyard.errors import (
    Code,
    ConfigError,
    ModelyardError,
    ProtocolError,
    retry_after_header,
)
from modelyard.protocol.status import http_status

log = structlog.get_logger("modelyard.http")

DEFAULT_MAX_CONNECTIONS = 10_000
DEFAULT_IDLE_TIMEOUT_S = 30.0
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
# how long a refused connection's further bytes are read and dropped before it closes
_LINGER_S = 2.0
_MAX_PARSER_TEXT = 200


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES

    def __post_init__(self) -> None:
        for flag, value in (
            ("--http-max-connections", self.max_connections),
            ("--http-idle-timeout", self.idle_timeout_s),
            ("--http-header-timeout", self.header_timeout_s),
            ("--http-body-timeout", self.body_timeout_s),
            ("--http-max-header-bytes", self.max_header_bytes),
        ):
            if not value > 0:
                raise ConfigError(
                    f"{flag} must be positive, got {value}",
                    code=Code.INVALID_ARGUMENT,
                    rule="serve/http-limits",
                    where=f"modelyard serve {flag}",
                )

    @property
    def sweep_interval_s(self) -> float:
        """How often timeouts are read: a quarter of the shortest, between 50 ms and 1 s."""
        shortest = min(self.idle_timeout_s, self.header_timeout_s, self.body_timeout_s)
        return min(1.0, max(0.05, shortest / 4))


class _Sweeper:
    """One server's coarse clock, and the sweep that cuts connections past their time."""

    def __init__(self, limits: ConnectionLimits, connections: set[Any]) -> None:
        self.limits = limits
        self.connections = connections
        self.loop: asyncio.AbstractEventLoop | None = None
        self.now = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def wake(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._handle is None:
            self.loop = loop
            self.now = loop.time()
            self._handle = loop.call_later(self.limits.sweep_interval_s, self._tick)

    def _tick(self) -> None:
        assert self.loop is not None
        self.now = now = self.loop.time()
        for protocol in list(self.connections):
            if isinstance(protocol, BoundedHttpProtocol):
                protocol.sweep(now)
        if self.connections:
            self._handle = self.loop.call_later(self.limits.sweep_interval_s, self._tick)
        else:  # nothing to watch: the next connection starts the clock again
            self._handle = None


class _Refused(Exception):
    """Raised from a parser callback to stop parsing; the refusal is already chosen."""


RECEIVED_NS = "modelyard.received_ns"  # the scope key of when a request was read in whole


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, bounded by ``limits`` (see the module docstring).

    A request costs this class only what it must: the bytes of a header block
    are counted as they arrive, and two times are noted (a head's first byte,
    its end). Which phase a connection is in is read by the sweep from
    uvicorn's own request cycle, so no callback of the body or the response
    is wrapped.
    """

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    _sweepers: ClassVar[weakref.WeakKeyDictionary[Any, _Sweeper]]

    @classmethod
    def with_limits(cls, limits: ConnectionLimits) -> type[BoundedHttpProtocol]:
        """The protocol class one server uses: its limits, and its own sweeper."""
        return type(
            "BoundedHttpProtocol",
            (cls,),
            {"limits": limits, "_sweepers": weakref.WeakKeyDictionary()},
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sweeper = self._sweepers.get(self.server_state)
        if sweeper is None:
            sweeper = self._sweepers[self.server_state] = _Sweeper(self.limits, self.connections)
        self._sweeper = sweeper
        self._in_head = True  # the bytes arriving are a request line and headers
        self._head_bytes = 0  # of the head being read; 0: none begun
        self._head_since = 0.0
        self._body_since = 0.0
        self._idle_since = 0.0  # since connecting, then since the cycle below answered
        self._idle_cycle: Any = None
        self._refusal: ModelyardError | None = None
        self._refused = False

    # uvicorn's own override narrows asyncio.Protocol's BaseTransport the same way
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._sweeper.wake(self.loop)
        self._idle_since = self._sweeper.now
        if len(self.connections) > self.limits.max_connections:
            self._refuse(
                ProtocolError(
                    f"connection refused: {self.limits.max_connections} connections are "
                    "open, the limit",
                    code=Code.UNAVAILABLE,
                    rule="protocol/max-connections",
                    where="modelyard serve --http-max-connections, or fewer idle "
                    "connections in the callers' pools",
                    retry_after=1.0,
                )
            )

    def data_received(self, data: bytes) -> None:
        if self._refused:  # lingering: read and drop
            return
        self._unset_keepalive_if_required()
        if not self._in_head and not self.cycle.more_body:
            self._in_head = True  # the last request is in whole: these bytes begin the next
        if self._in_head:
            if not self._head_bytes:
                self._head_since = self._sweeper.now
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # no upgrades are served: the request goes on as plain HTTP
        except httptools.HttpParserError as exc:
            self._refuse(self._refusal or self._malformed(exc))
            return
        if self._in_head and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(self._header_too_large(self._head_bytes))

    def on_header(self, name: bytes, value: bytes) -> None:
        # uvicorn's own, less its strip (from 0.55): a value as the caller sent it, trailing
        # blanks too, as Triton forwards it (--http-header-forward-pattern; RFC 9110 allows both)
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def on_message_complete(self) -> None:
        # when the server had read the whole request: its counted time starts here (a slow
        # upload is the caller's time, not the server's). The ignore: ASGI's scope is a
        # TypedDict without this key of modelyard's own.
        self.scope[RECEIVED_NS] = time.monotonic_ns()  # type: ignore[literal-required]
        HttpToolsProtocol.on_message_complete(self)

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head_bytes > self.limits.max_header_bytes:  # the chunk may hold body too
            size = len(self.url) + sum(len(k) + len(v) + 4 for k, v in self.headers)
            if size > self.limits.max_header_bytes:
                self._refusal = self._header_too_large(size)
                raise _Refused
        self._head_bytes = 0
        self._body_since = self._sweeper.now
        HttpToolsProtocol.on_headers_complete(self)

    def sweep(self, now: float) -> None:
        """Cut this connection if it has waited, or been read, past its limit."""
        if self._refused or self.transport is None:
            return
        limits = self.limits
        cycle = self.cycle
        answered = cycle is None or cycle.response_complete
        if self._head_bytes and answered:  # a request's head is arriving
            if now - self._head_since > limits.header_timeout_s:
                self._refuse(self._timed_out("headers", limits.header_timeout_s, "header"))
        elif answered:  # waiting for a request; uvicorn's keep-alive timer may close it first
            if cycle is not self._idle_cycle:
                self._idle_cycle = cycle
                self._idle_since = now
            elif now - self._idle_since > limits.idle_timeout_s:
                self.transport.close()
        elif cycle.more_body and now - self._body_since > limits.body_timeout_s:
            if cycle.response_started:
                self.transport.close()
            else:
                self._refuse(self._timed_out("body", limits.body_timeout_s, "body"))

    def _refuse(self, error: ModelyardError) -> None:
        """Answer ``error`` and close: the sending side at once, the socket after a linger."""
        self._refused = True
        transport = self.transport
        if transport.is_closing():
            return
        status = http_status(error.code)
        body = orjson.dumps({"error": error.line()})
        head = [
            STATUS_LINE[status],
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n",
        ]
        if error.retry_after is not None:
            head.append(b"retry-after: " + retry_after_header(error.retry_after).encode() + b"\r\n")
        transport.write(b"".join(head) + b"\r\n" + body)
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(_LINGER_S, transport.close)
        client = f"{self.client[0]}:{self.client[1]}" if self.client else None
        log.warning("connection_refused", client=client, **error.fields())

    def _header_too_large(self, size: int) -> ProtocolError:
        limit = self.limits.max_header_bytes
        return ProtocolError(
            f"request line and headers of {size} bytes or more are over the limit of {limit} bytes",
            code=Code.HEADERS_TOO_LARGE,
            rule="protocol/max-header-size",
            where="modelyard serve --http-max-header-bytes",
        )

    def _timed_out(self, part: str, seconds: float, flag: str) -> ProtocolError:
        start = "its first byte" if part == "headers" else "its headers"
        return ProtocolError(
            f"request {part} not complete {seconds:g} s after {start}",
            code=Code.REQUEST_TIMEOUT,
            rule=f"protocol/{flag}-timeout",
            where=f"modelyard serve --http-{flag}-timeout, or a client that sends its "
            "request whole",
        )

    @staticmethod
    def _malformed(exc: Exception) -> ProtocolError:
        cause = exc.__cause__ or exc.__context__ or exc  # a callback's own error says more
        text = f"{type(cause).__name__}: {cause}"[:_MAX_PARSER_TEXT]
        return ProtocolError(
            f"malformed HTTP request: {text}",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/http",
            where="the client's HTTP/1.1 request line and headers",
        )
