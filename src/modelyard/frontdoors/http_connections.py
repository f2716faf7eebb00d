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

An infer call can be answered with no ASGI task at all (``direct``, the front
door's direct path): a POST whose body is sized and small is read into a
``_DirectCycle``, handed to the front door when it is whole, and answered in
one write from the callback that settles it. What the front door declines
takes uvicorn's request cycle and task after all, with the body read so far.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import httptools
import orjson
import structlog
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from modelyard import error_rules
from modelyard.errors import (
    Code,
    ConfigError,
    ModelyardError,
    ProtocolError,
    retry_after_header,
)
from modelyard.frontdoors.bounds import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_BYTES,
)
from modelyard.protocol.status import http_status

log = structlog.get_logger("modelyard.http")

# how long a refused connection's further bytes are read and dropped before it closes
_LINGER_S = 2.0
_MAX_PARSER_TEXT = 200
# the largest body the direct path reads whole before it is handed on; larger ones stream
# through the request cycle, which bounds them as they arrive
DIRECT_MAX_BODY_BYTES = 1 << 20

Headers = list[tuple[bytes, bytes]]
# answers a direct request: the status, every header but the connection's, and the body
DirectReply = Callable[[int, Headers, bytes], None]


class DirectAnswer(Protocol):
    """The front door's direct path: takes a whole POST and answers it through ``reply``
    (now or from a callback); False: declined, the ASGI app answers it instead."""

    def __call__(
        self, path: str, headers: Headers, body: bytes, received_ns: int, reply: DirectReply
    ) -> bool: ...


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
                raise ConfigError.of(
                    error_rules.HTTP_LIMITS,
                    f"{flag} must be positive, got {value}",
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


class _NoEvent:
    """What uvicorn sets when a direct request's body grows or its caller leaves: no task
    waits for it."""

    __slots__ = ()

    def set(self) -> None:
        pass


_NO_EVENT = _NoEvent()


@dataclass(slots=True, eq=False)
class _DirectCycle:
    """A request on the direct path: the state uvicorn's protocol and the sweep read of a
    request cycle, and the one write that answers it."""

    protocol: BoundedHttpProtocol
    keep_alive: bool
    body: bytearray = field(default_factory=bytearray)
    more_body: bool = True
    response_started: bool = False
    response_complete: bool = False
    disconnected: bool = False
    message_event: _NoEvent = _NO_EVENT

    def reply(self, status: int, headers: Headers, body: bytes) -> None:
        protocol = self.protocol
        transport = protocol.transport
        if self.response_complete or self.disconnected or transport.is_closing():
            self.response_complete = True  # the caller left: nothing to answer
            return
        head = [STATUS_LINE[status]]
        for name, value in (*protocol.server_state.default_headers, *headers):
            head += (name, b": ", value, b"\r\n")
        if not self.keep_alive:
            head.append(b"connection: close\r\n")
        head += (b"\r\n", body)
        transport.write(b"".join(head))
        self.response_started = self.response_complete = True
        protocol.on_response_complete()
        if not self.keep_alive:
            transport.close()


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
    direct: ClassVar[DirectAnswer | None] = None
    # widened: a request on the direct path holds a _DirectCycle, which has every attribute
    # uvicorn's protocol reads of its own cycle
    cycle: RequestResponseCycle | _DirectCycle  # type: ignore[assignment]
    _sweepers: ClassVar[weakref.WeakKeyDictionary[Any, _Sweeper]]

    @classmethod
    def with_limits(
        cls, limits: ConnectionLimits, direct: DirectAnswer | None = None
    ) -> type[BoundedHttpProtocol]:
        """The protocol class one server uses: its limits, its own sweeper, and the front
        door's direct path (None: every request takes the ASGI app)."""
        return type(
            "BoundedHttpProtocol",
            (cls,),
            {"limits": limits, "direct": direct, "_sweepers": weakref.WeakKeyDictionary()},
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
        # a request with both Transfer-Encoding and Content-Length is read by its chunks,
        # as Triton reads it (RFC 9112 6.1: TE wins), and its connection closes after the
        # answer (on_headers_complete), so no second reading of its bytes can follow
        self.parser.set_dangerous_leniencies(lenient_chunked_length=True)

    # uvicorn's own override narrows asyncio.Protocol's BaseTransport the same way
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._sweeper.wake(self.loop)
        self._idle_since = self._sweeper.now
        if len(self.connections) > self.limits.max_connections:
            self._refuse(
                ProtocolError.of(
                    error_rules.MAX_CONNECTIONS,
                    f"connection refused: {self.limits.max_connections} connections are "
                    "open, the limit",
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
        # upload is the caller's time, not the server's)
        received = time.monotonic_ns()
        cycle = self.cycle
        if type(cycle) is _DirectCycle:
            cycle.more_body = False
            assert self.direct is not None
            path = self.url.decode("ascii")  # _takes_direct: ASCII, no query, no escapes
            if not self.direct(path, self.headers, bytes(cycle.body), received, cycle.reply):
                self._start_cycle(cycle.body, received)
            return
        # the ignore: ASGI's scope is a TypedDict without this key of modelyard's own
        self.scope[RECEIVED_NS] = received  # type: ignore[literal-required]
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
        if self.direct is not None and self._takes_direct():
            self.cycle = _DirectCycle(self, self.parser.should_keep_alive())
            return
        HttpToolsProtocol.on_headers_complete(self)
        names = {name for name, _ in self.headers}
        if b"transfer-encoding" in names and b"content-length" in names:
            self.cycle.keep_alive = False  # both lengths: RFC 9112 6.1, close after answering

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if type(cycle) is _DirectCycle:
            cycle.body += body  # its Content-Length bounds it: _takes_direct
            return
        HttpToolsProtocol.on_body(self, body)

    def _takes_direct(self) -> bool:
        """Whether this request is read whole for the direct path: a POST to an infer route
        in plain ASCII, sized and small, with nothing in flight before it on the connection
        (a pipelined one waits its turn in uvicorn's queue)."""
        cycle = self.cycle
        url = self.url
        if (
            (cycle is not None and not cycle.response_complete)
            or not url.startswith(b"/")
            or not url.endswith(b"/infer")
            or self.expect_100_continue
            or self.parser.get_method() != b"POST"
            or self.parser.get_http_version() != "1.1"
            or not url.isascii()
            or b"%" in url
            or b"?" in url
        ):
            return False
        length = None
        for name, value in self.headers:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding" or name == b"upgrade":
                return False
        return (
            length is not None
            and length.isdigit()
            and len(length) <= 8
            and int(length) <= DIRECT_MAX_BODY_BYTES
        )

    def _start_cycle(self, body: bytearray, received: int) -> None:
        """A direct request the front door declined: uvicorn's cycle and task, as it would
        have made them at its headers, with the whole body already read."""
        self.cycle = None  # type: ignore[assignment]  # nothing in flight: its task starts now
        HttpToolsProtocol.on_headers_complete(self)
        self.scope[RECEIVED_NS] = received  # type: ignore[literal-required]  # as above
        cycle = self.cycle
        cycle.body = body
        cycle.more_body = False
        cycle.message_event.set()

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
        return ProtocolError.of(
            error_rules.MAX_HEADER_SIZE,
            f"request line and headers of {size} bytes or more are over the limit of {limit} bytes",
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
        return ProtocolError.of(error_rules.MALFORMED_HTTP, f"malformed HTTP request: {text}")
