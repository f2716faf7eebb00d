"""The KServe V2 HTTP API as a plain ASGI application.

A raw ASGI app, not a web framework: the routes are a fixed protocol and the
per-request cost of a framework's request objects and validation is most of
the overhead measured on small models (see bench/RESULTS.md).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import orjson
import structlog

from modelyard.dataplane import DataPlane, InferLane, unknown_model_refusal
from modelyard.errors import (
    LOAD_TIME_RULE,
    MEMORY_BUDGET_RULE,
    Code,
    DecoupledRefusal,
    GovernanceError,
    ModelyardError,
    ProtocolError,
    internal_error,
    retry_after_header,
)
from modelyard.frontdoors.bounds import DEFAULT_MAX_BODY_BYTES
from modelyard.frontdoors.embeddings import EmbeddingRoutes
from modelyard.frontdoors.generate import GENERATE_ACTIONS, GenerateRoutes
from modelyard.frontdoors.header_forwarding import HeaderForwarding
from modelyard.frontdoors.http_compression import (
    MIN_COMPRESSED_BYTES,
    compress,
    inflate,
    preferred_encoding,
)
from modelyard.frontdoors.http_connections import RECEIVED_NS, DirectReply
from modelyard.frontdoors.http_lane import HttpLane, HttpLanes, LaneKey, lane_key
from modelyard.frontdoors.http_routes import (
    Route,
    RouteCache,
    governed_as,
    restricted_category,
    route_error,
    route_of,
)
from modelyard.frontdoors.infer_pipeline import InferPipeline
from modelyard.frontdoors.restricted import Restrictions
from modelyard.governance.chain import Ticket
from modelyard.governance.guard import CALL_HEADERS, Call, bearer_token
from modelyard.governance.runtime import Governance, rejections
from modelyard.logging import SETTINGS
from modelyard.modelfiles.load_request import load_files, load_override
from modelyard.protocol.embeddings import EMBEDDING_PATHS
from modelyard.protocol.infer_json import read as read_infer_json
from modelyard.protocol.json_body import json_object
from modelyard.protocol.shared_memory import SystemSharedMemory, place_outputs
from modelyard.protocol.status import http_status
from modelyard.protocol.v2_http import (
    HEADER_LENGTH,
    BinaryLayout,
    BinaryLayouts,
    JsonLayout,
    decode_with_layout,
    encode_infer_response,
)
from modelyard.refusal_log import REFUSALS
from modelyard.tracing import RequestTrace, Tracing, unknown_model
from modelyard.types import InferRequest, InferResponse

log = structlog.get_logger("modelyard.http")

# libevhtp's method numbers, as Triton's verbose "HTTP request:" record writes them
_METHOD_NUMBERS = {"GET": 0, "HEAD": 1, "POST": 2, "PUT": 3, "DELETE": 4, "OPTIONS": 8,
                   "TRACE": 13, "CONNECT": 14, "PATCH": 15}  # fmt: skip
_UNKNOWN_METHOD = 16


def _request_record(method: str, path: str) -> None:
    """Each request at verbose level 1 and above, in Triton's words."""
    number = _METHOD_NUMBERS.get(method, _UNKNOWN_METHOD)
    log.debug("http_request", triton=f"HTTP request: {number} {path}")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]


class _Response:
    """A status, a body and its headers; ``sized``: the headers hold the content length."""

    __slots__ = ("body", "headers", "sized", "status")

    def __init__(
        self,
        status: int,
        body: bytes = b"",
        headers: list[tuple[bytes, bytes]] | None = None,
        sized: bool = False,
    ) -> None:
        self.status = status
        self.body = body
        self.headers = headers if headers is not None else (_JSON if body else [])
        self.sized = sized


def _json(doc: Any, status: int = 200) -> _Response:
    return _Response(status, orjson.dumps(doc))


class _MethodNotAllowed(ProtocolError):
    """A route that exists, called with a method it does not take (answered with ``Allow``)."""

    def __init__(self, method: str, path: str, allowed: tuple[str, ...]) -> None:
        takes = " or ".join(allowed)
        super().__init__(
            f"{path} takes {takes}, not {method}",
            code=Code.METHOD_NOT_ALLOWED,
            rule="protocol/route",
            where=f"the client's call: send {takes} {path}",
        )
        self.allow = ", ".join(allowed)


def _error_response(error: ModelyardError) -> _Response:
    headers = list(_JSON)
    # an instance's rejection that the gateway forwarded keeps every header it came with
    relayed = [
        (k.encode("latin-1", "replace"), v.encode("latin-1", "replace"))
        for k, v in error.reply_headers
    ]
    if error.retry_after is not None and not any(k == b"retry-after" for k, _ in relayed):
        headers.append((b"retry-after", retry_after_header(error.retry_after).encode()))
    headers += relayed
    if isinstance(error, _MethodNotAllowed):
        headers.append((b"allow", error.allow.encode()))
    return _Response(http_status(error.code), orjson.dumps({"error": error.line()}), headers)


def error_reply(error: ModelyardError) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """A refusal as this front door answers it: its status, headers and error line."""
    response = _error_response(error)
    return response.status, response.headers, response.body


def _bad_json(detail: str) -> ProtocolError:
    return ProtocolError(
        detail, code=Code.INVALID_ARGUMENT, rule="protocol/json", where="the request body"
    )


def _check_restricted(restrictions: Restrictions, scope: Scope) -> None:
    category = restricted_category(scope["path"])
    if category is None or category not in restrictions.by_category:
        return
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    refusal = restrictions.refusal(category, headers)
    if refusal is not None:
        raise refusal


_CALL_HEADERS = frozenset(name.encode() for name in CALL_HEADERS)
# the model server's refusals ``modelyard explain`` finds beside the guards' (residency's)
EXPLAINED_REFUSALS = frozenset((LOAD_TIME_RULE, MEMORY_BUDGET_RULE))
_CREDENTIALS = frozenset((b"x-api-key", b"authorization"))


_INFER_HEADERS = frozenset(
    (
        b"inference-header-content-length",
        b"x-api-key",
        b"authorization",
        b"content-encoding",
        b"accept-encoding",
    )
)


def _infer_headers(
    headers: list[tuple[bytes, bytes]],
) -> tuple[int | None, bytes | None, bytes | None, bytes | None, bytes | None]:
    """What an infer call's headers say, in one pass: the Inference-Header-Content-Length,
    X-API-Key, Authorization, Content-Encoding and Accept-Encoding, as they arrived."""
    length = api_key = authorization = encoding = accept = None
    for key, value in headers:
        if key in _INFER_HEADERS:
            if key == b"inference-header-content-length":
                length = value
            elif key == b"x-api-key":
                api_key = value
            elif key == b"authorization":
                authorization = value
            elif key == b"content-encoding":
                encoding = value
            else:
                accept = value
    if length is None:
        return None, api_key, authorization, encoding, accept
    if len(length) > 18 or not length.isdigit():  # int() of 4,301 digits raises
        raise ProtocolError(
            f"{HEADER_LENGTH} must be an integer of at most 18 digits",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/binary-header",
            where="the Inference-Header-Content-Length header",
        )
    return int(length), api_key, authorization, encoding, accept


_TRACE_CONTEXT = (b"traceparent", b"tracestate")


def _trace_context(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The W3C trace context a request came with (traceparent, tracestate)."""
    return {
        key.decode(): value.decode("latin-1")
        for key, value in headers
        if key in _TRACE_CONTEXT and len(value) <= 512 and value.isascii()
    }


def _compressed(response: _Response, accept_encoding: bytes) -> _Response:
    """A successful infer response, compressed as the caller prefers (Triton does so)."""
    if response.status != 200 or len(response.body) < MIN_COMPRESSED_BYTES:
        return response
    encoding = preferred_encoding(accept_encoding)
    if encoding == "identity":
        return response
    headers = [(k, v) for k, v in response.headers if k != b"content-length"]
    headers.append((b"content-encoding", encoding.encode()))
    return _Response(200, compress(response.body, encoding), headers)


def _call_from_headers(governance: Governance, scope: Scope) -> Call:
    interface, model, version = governed_as(scope["path"])
    call = governance.call(interface, model, version)
    for key, value in scope["headers"]:
        if key in _CALL_HEADERS:
            call.take_header(key.decode("latin-1"), value.decode("latin-1"))
    return call


def _rejection(governance: Governance, call: Call, error: GovernanceError) -> _Response:
    """The chain's refusal, with RateLimit-* headers and the request id it was logged under."""
    response = _error_response(error)
    for name, value in governance.rate_limit_headers(call, error).items():
        response.headers.append((name.lower().encode(), value.encode()))
    if call.request_id:
        response.headers.append((b"x-request-id", call.request_id.encode()))
    return response


Results = dict[str, np.ndarray]


def _wire_headers(response: _Response) -> list[tuple[bytes, bytes]]:
    if response.sized:
        return response.headers
    return [*response.headers, (b"content-length", str(len(response.body)).encode())]


def _explained(
    response: _Response, governance: Governance, call: Call, error: ModelyardError
) -> None:
    """A refusal ``modelyard explain`` finds (a model's load time, the memory budget): kept
    with the guards' rejections under the request's id, which the response says."""
    governance.record_refusal(call, error)
    response.headers.append((b"x-request-id", str(call.request_id).encode()))


class _Asked(NamedTuple):
    """A call of a route other than infer, as its answer reads it."""

    method: str
    match: re.Match[str]  # the path's match of its route's pattern
    scope: Scope
    receive: Receive
    call: Call | None  # what governance admitted it as (None: ungoverned)

    @property
    def model_version(self) -> tuple[str, str | None]:
        return self.match["model"], self.match["version"]


def _send(reply: DirectReply, response: _Response) -> None:
    reply(response.status, _wire_headers(response), response.body)


_Answered = tuple[int, list[tuple[bytes, bytes]], bytes]  # a DirectReply's arguments


def _settling(answered: asyncio.Future[_Answered]) -> DirectReply:
    """A reply that settles ``answered`` (unless its awaiting task is gone)."""

    def reply(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        if not answered.done():
            answered.set_result((status, headers, body))

    return reply


@dataclass(slots=True, eq=False)
class _Sent:
    """An infer call as it arrived, parsed but not decoded (``HttpInferWire.parse``)."""

    path: str
    route: Route
    headers: list[tuple[bytes, bytes]]
    body: bytes
    header_length: int | None
    api_key: bytes | None
    authorization: bytes | None
    received_ns: int  # monotonic ns when its first byte came; 0: unknown
    reply: DirectReply  # its entry's way back: the status, the HTTP headers and the body
    accept: bytes | None  # its Accept-Encoding: a successful reply is compressed so
    trace: RequestTrace | None  # a sampled request's, timed step by step
    forwarded: dict[str, str] | None  # parameters its headers give (--http-header-forward-*)
    # a JSON body, read (infer_json.read); let go of once decoded: 32 requests holding
    # theirs while they wait kept the garbage collector's youngest generation over its
    # threshold, which promoted each batch's objects and made full collections (40 ms
    # each) frequent
    doc: dict[str, Any] | None
    key: LaneKey | None  # lane_key's: where a lane for it is kept (None: nowhere)
    request_id: str | None  # lane_key's: the id the key leaves out


class HttpInferWire:
    """The V2 HTTP protocol's part of an infer call's pipeline (``infer_pipeline.Wire``):
    its request parsed from the headers and body, decoded, answered, and the lanes kept for
    request shapes seen before (found by their bytes, undecoded)."""

    def __init__(
        self,
        dataplane: DataPlane,
        governance: Governance | None,
        shared_memory: SystemSharedMemory,
        tracing: Tracing,
        header_forwarding: HeaderForwarding | None,
        max_body_bytes: int,
    ) -> None:
        self.dataplane = dataplane
        self.governance = governance
        self.shared_memory = shared_memory
        self.tracing = tracing
        self.header_forwarding = header_forwarding
        self.max_body_bytes = max_body_bytes
        self.lanes = HttpLanes()
        self.layouts = BinaryLayouts()  # binary headers seen before: decoded once each

    def parse(
        self,
        path: str,
        route: Route,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        received_ns: int,
        reply: DirectReply,
    ) -> _Sent | None:
        """An infer call as both entries give it, parsed for the pipeline; None: it was
        refused (a bad header, a body that does not inflate), and ``reply`` has the answer."""
        try:
            header_length, api_key, authorization, encoding, accept = _infer_headers(headers)
            if encoding is not None:
                body = inflate(body, encoding, self.max_body_bytes)
            trace = None
            if self.tracing.on:
                trace = self.tracing.begin(
                    route[0], route[1], None, "http", _trace_context(headers),
                    received_ns or time.monotonic_ns(),
                )  # fmt: skip
            forwarded = None
            if self.header_forwarding is not None:
                forwarded = self.header_forwarding.parameters(
                    (name.decode("latin-1"), value.decode("latin-1")) for name, value in headers
                ) or None
            # a sampled request decodes in its own steps, timed
            doc = read_infer_json(body) if header_length is None and trace is None else None
            key, request_id = lane_key(path, body, header_length, api_key, authorization, doc)
        except ModelyardError as error:
            REFUSALS.warning(log, "request_failed", path=path, **error.fields())
            _send(reply, _error_response(error))
            return None
        except Exception as exc:
            log.exception("request_crashed", path=path)
            _send(reply, _error_response(internal_error(exc)))
            return None
        return _Sent(
            path, route, headers, body, header_length, api_key, authorization, received_ns,
            reply, accept, trace, forwarded, doc, key, request_id,
        )  # fmt: skip

    # ---- infer_pipeline.Wire -------------------------------------------------------------

    @staticmethod
    def path(sent: _Sent) -> str:
        return sent.path

    def reply(self, sent: _Sent, response: _Response) -> None:
        """The answer, compressed as the caller prefers where it succeeded, to the caller;
        a sampled request's trace finished."""
        accept, trace = sent.accept, sent.trace
        if accept is not None:
            response = _compressed(response, accept)
        sent.reply(response.status, _wire_headers(response), response.body)
        if trace is not None:
            if response.status != 200 and trace.error is None:
                trace.error = response.body.decode("utf-8", "replace")
            self.tracing.finish(trace, trace.version or "", time.monotonic_ns())

    def lane(self, sent: _Sent, stamp: int) -> HttpLane | None:
        key = sent.key
        if key is None or sent.forwarded:  # a lane is kept for requests alike: headers are not
            return None
        return self.lanes.find(key, sent.body, sent.header_length, stamp)

    def ticket(self, sent: _Sent) -> Ticket | None:
        """The chain's ticket for the caller's credentials on this route, made on first use."""
        assert self.governance is not None
        chain = self.governance.chain
        key = (sent.path, sent.api_key, sent.authorization)  # as they arrived
        ticket = chain.known_ticket(key)
        if ticket is None:
            model, version, _ = sent.route
            api_key, authorization = sent.api_key, sent.authorization
            ticket = chain.ticket(
                "infer",
                model,
                version,
                api_key.decode("latin-1") if api_key is not None else None,
                bearer_token(authorization.decode("latin-1"))
                if authorization is not None
                else None,
                key=key,
            )
        return ticket

    def call(self, sent: _Sent) -> Call:
        assert self.governance is not None
        return _call_from_headers(
            self.governance, {"method": "POST", "path": sent.path, "headers": sent.headers}
        )

    @staticmethod
    def submit_on_lane(lane: HttpLane, sent: _Sent) -> asyncio.Future[Results]:
        """Its arrays sliced from the body (or read from the JSON body: let go of now) by the
        lane's layout, and queued on the lane's version."""
        layout = lane.layout
        inputs = layout.arrays(sent.body, sent.header_length, sent.doc)
        sent.doc = None
        return lane.target.submit(
            inputs, layout.priority, layout.timeout_us, None, None, sent.received_ns
        )

    def lane_answer(self, lane: HttpLane, results: Results, sent: _Sent) -> _Response:
        """The response from the reply encoded once for the lane, with the request's id: the
        one its lane key left out, or the lane's own where the key holds it."""
        request_id = lane.layout.options["id"] if lane.id_in_key else sent.request_id
        reply = lane.reply
        if reply is not None:
            answer = reply.answer(results, request_id)
            if answer is not None:
                return _Response(200, answer[0], answer[1], sized=reply.sized)
        request = lane.request(request_id)
        return self.response_answer(lane.target.response(request, results), request, sent)

    def decode(self, sent: _Sent) -> tuple[InferRequest, BinaryLayout | JsonLayout | None]:
        model, version, _ = sent.route
        trace = sent.trace
        if trace is not None:
            trace.admitted()
        try:
            request, layout = decode_with_layout(
                sent.body, sent.header_length, model, version, self.shared_memory, sent.doc,
                self.layouts,
            )  # fmt: skip
        except ModelyardError as error:
            if isinstance(error, ProtocolError):  # Triton finds the model before the body
                raise unknown_model_refusal(self.dataplane, model, version) or error from None
            raise
        sent.doc = None
        request.arrived_ns = sent.received_ns
        if sent.forwarded:  # this request's own: no lane is kept for others
            request.parameters = {**request.parameters, **sent.forwarded}
            layout = None
        if trace is not None:
            request.trace = trace
            request.arrived_ns = trace.arrived_ns
            trace.decoded(request)
        if self.dataplane.forwards_requests:
            request.forward_headers = (
                self.tracing.propagation_headers(trace)
                if trace is not None
                else _trace_context(sent.headers) or None
            )
        return request, layout

    def answer(
        self,
        target: InferLane,
        request: InferRequest,
        layout: BinaryLayout | JsonLayout | None,
        sent: _Sent,
        results: Results,
        stamp: int,
    ) -> _Response:
        """A routed request's response; one whose inputs all travel as binary data, or all as
        JSON values, leaves its lane behind at its key's second request, stamped with the
        generation it was routed at (``stamp``)."""
        key = sent.key
        if layout is None or key is None or not target.reusable or not self.lanes.seen_before(key):
            return self.response_answer(target.response(request, results), request, sent)
        chain = None if self.governance is None else self.governance.chain
        ticket_key = None if chain is None else (sent.path, sent.api_key, sent.authorization)
        id_in_key = sent.header_length is not None and sent.request_id is None
        lane = HttpLane.make(
            target, layout, sent.header_length, id_in_key, chain, ticket_key, stamp
        )
        self.lanes.keep(key, lane, sent.body)
        sent.request_id = request.id  # as decoded
        return self.lane_answer(lane, results, sent)

    @staticmethod
    def response_answer(
        response: InferResponse, request: InferRequest | None, sent: _Sent
    ) -> _Response:
        """The encoded response; outputs the request asked for in shared memory go there."""
        if sent.trace is not None:
            sent.trace.answered(response)
        if request is not None:
            place_outputs(request, response)
        payload, json_length = encode_infer_response(response)
        if json_length is None:
            return _Response(200, payload)
        return _Response(
            200,
            payload,
            [
                (b"content-type", b"application/octet-stream"),
                (b"inference-header-content-length", str(json_length).encode()),
            ],
        )

    def error_answer(self, error: ModelyardError, sent: _Sent, call: Call | None) -> _Response:
        if isinstance(error, DecoupledRefusal):
            error = error.at("HTTP end point")
        if sent.trace is not None:
            sent.trace.error = error.line()
        governance = self.governance
        if governance is not None and call is not None and isinstance(error, GovernanceError):
            return _rejection(governance, call, error)
        response = _error_response(error)
        if error.rule in EXPLAINED_REFUSALS and governance is not None:
            _explained(response, governance, call or self.call(sent), error)
        return response


class HttpFrontend:
    """The V2 HTTP API of a data plane. An infer call goes through the one pipeline
    (``infer_pipeline``) from either entry: the ASGI app's, or the connection's own
    callbacks (``direct``), where nothing on its way awaits."""

    def __init__(
        self,
        dataplane: DataPlane,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        governance: Governance | None = None,
        shared_memory: SystemSharedMemory | None = None,
        tracing: Tracing | None = None,
        header_forwarding: HeaderForwarding | None = None,
        embedding_model: str | None = None,
        restrictions: Restrictions | None = None,
    ):
        self.dataplane = dataplane
        self.restrictions = restrictions  # tritonserver's --http-restricted-api
        self.max_body_bytes = max_body_bytes
        self.governance = governance
        self.shared_memory = shared_memory or SystemSharedMemory(allowed=False)
        self.tracing = tracing or Tracing()
        self.route = RouteCache()  # the model, version and action of each path seen
        self.infer_wire = HttpInferWire(
            dataplane, governance, self.shared_memory, self.tracing, header_forwarding,
            max_body_bytes,
        )  # fmt: skip
        self.lanes = self.infer_wire.lanes
        self.pipeline = InferPipeline(self.infer_wire, dataplane, governance)
        self.embeddings = EmbeddingRoutes(dataplane, governance, embedding_model)
        self.generate = GenerateRoutes(dataplane, governance, self._generate_refusal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if SETTINGS.verbose:
            _request_record(scope["method"], scope["path"])
        try:
            if self.restrictions is not None:
                _check_restricted(self.restrictions, scope)
            route = self.route(scope["path"])
            if route is not None and route[2] == "/infer" and scope["method"] == "POST":
                body = await self.read_body(scope, receive)
                answered: asyncio.Future[_Answered] = asyncio.get_running_loop().create_future()
                sent = self.infer_wire.parse(
                    scope["path"], route, scope["headers"], body, scope.get(RECEIVED_NS, 0),
                    _settling(answered),
                )  # fmt: skip
                if sent is not None:
                    self.pipeline.start(sent)
                status, headers, payload = await answered  # its headers hold its length
                response = _Response(status, payload, headers, sized=True)
            elif route is not None and route[2] in GENERATE_ACTIONS and scope["method"] == "POST":
                body = await self.read_body(scope, receive)
                call = None
                if self.governance is not None:
                    call = _call_from_headers(self.governance, scope)
                await self.generate.answer(scope, route, body, call, receive, send)
                return
            elif scope["path"] in EMBEDDING_PATHS and scope["method"] == "POST":
                body = await self.read_body(scope, receive)
                response = _Response(
                    *await self.embeddings.answer(scope["path"], scope["headers"], body)
                )
            elif self.governance is not None:
                response = await self._guarded(scope, receive, self.governance)
            else:
                response = await self._dispatch(scope, receive)
        except ModelyardError as error:
            response = _error_response(error)
            REFUSALS.warning(log, "request_failed", path=scope["path"], **error.fields())
            if error.rule in EXPLAINED_REFUSALS and self.governance is not None:
                call = _call_from_headers(self.governance, scope)
                _explained(response, self.governance, call, error)
        except Exception as exc:
            log.exception("request_crashed", path=scope["path"])
            response = _error_response(internal_error(exc))
        headers = _wire_headers(response)
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})

    def direct(
        self,
        path: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        received_ns: int,
        reply: DirectReply,
    ) -> bool:
        """Answer a whole infer POST from the connection's own callbacks
        (``http_connections.DirectAnswer``): the pipeline queues it here and replies from the
        callback that settles its future. Declined (False) for any other route, and for a
        body over the limit, which the ASGI path refuses as it reads."""
        route = self.route(path)
        if route is None or route[2] != "/infer" or len(body) > self.max_body_bytes:
            return False
        if SETTINGS.verbose:
            _request_record("POST", path)
        if self.restrictions is not None:
            try:
                _check_restricted(self.restrictions, {"path": path, "headers": headers})
            except ModelyardError as error:
                REFUSALS.warning(log, "request_failed", path=path, **error.fields())
                _send(reply, _error_response(error))
                return True
        sent = self.infer_wire.parse(path, route, headers, body, received_ns, reply)
        if sent is not None:
            self.pipeline.start(sent)
        return True

    def _generate_refusal(
        self, error: ModelyardError, call: Call | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """A generate call's refusal, as an infer call's reads (``HttpInferWire.error_answer``)."""
        governance = self.governance
        if governance is not None and call is not None and isinstance(error, GovernanceError):
            response = _rejection(governance, call, error)
        else:
            response = _error_response(error)
            if error.rule in EXPLAINED_REFUSALS and governance is not None and call is not None:
                _explained(response, governance, call, error)
        return response.status, response.headers, response.body

    @staticmethod
    async def _lifespan(receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def read_body(self, scope: Scope, receive: Receive) -> bytes:
        """The whole request body; one over the limit raises (the infer path inlines this)."""
        message = await receive()
        body: bytes = message.get("body", b"")
        if message.get("more_body") or len(body) > self.max_body_bytes:
            body = await self._rest_of_body(scope, receive, body)
        return body

    async def _rest_of_body(self, scope: Scope, receive: Receive, first: bytes) -> bytes:
        """The body whose first message was ``first``: refused at once when it declares a
        length over the limit, else read on, and refused once it runs over."""
        limit = self.max_body_bytes
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > limit:
                raise self._too_large(int(value))
        if len(first) > limit:
            raise self._too_large(len(first))
        chunks = [first]
        size = len(first)
        more = True
        while more:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise self._too_large(size)
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)

    def _too_large(self, size: int) -> ProtocolError:
        return ProtocolError(
            f"request body of {size} bytes is over the limit of {self.max_body_bytes} bytes",
            code=Code.PAYLOAD_TOO_LARGE,
            rule="protocol/max-body-size",
            where="modelyard serve --http-max-body-bytes",
        )

    async def _dispatch(
        self, scope: Scope, receive: Receive, call: Call | None = None
    ) -> _Response:
        """Answer a route of the table (``http_routes.ROUTES``) other than an infer call;
        ``call``: what governance admitted it as (None: ungoverned)."""
        method: str = scope["method"]
        path: str = scope["path"]
        found = route_of(path)
        if found is None:
            raise route_error(method, path)
        route, match = found
        if method not in route.methods:  # an infer call gets here only so: __call__ takes POST
            raise _MethodNotAllowed(method, path, route.methods)
        answer: Callable[[_Asked], Awaitable[_Response]] = getattr(self, route.answer)
        return await answer(_Asked(method, match, scope, receive, call))

    # ---- the routes' answers (http_routes.ROUTES names them) ------------------------------

    async def _model_metadata(self, asked: _Asked) -> _Response:
        return _json(self.dataplane.model_metadata(*asked.model_version))

    async def _model_ready(self, asked: _Asked) -> _Response:
        return _Response(200 if self.dataplane.model_ready(*asked.model_version) else 400)

    async def _model_config(self, asked: _Asked) -> _Response:
        return _json(self.dataplane.model_config(*asked.model_version))

    async def _model_stats(self, asked: _Asked) -> _Response:
        return _json(self.dataplane.statistics(*asked.model_version))

    async def _server_live(self, asked: _Asked) -> _Response:
        return _Response(200 if self.dataplane.server_live() else 400)

    async def _server_ready(self, asked: _Asked) -> _Response:
        return _Response(200 if self.dataplane.server_ready() else 400)

    async def _server_metadata(self, asked: _Asked) -> _Response:
        return _json(self.dataplane.server_metadata())

    async def _all_stats(self, asked: _Asked) -> _Response:
        stats = self.dataplane.statistics(None, None)
        visible = self._visible(asked.call)
        if visible is not None:
            stats["model_stats"] = [s for s in stats["model_stats"] if visible(s["name"])]
        return _json(stats)

    async def _repository_index(self, asked: _Asked) -> _Response:
        doc = self._json_body(await self.read_body(asked.scope, asked.receive))
        rows = self.dataplane.manager.index(ready_only=bool(doc.get("ready", False)))
        visible = self._visible(asked.call)
        return _json(rows if visible is None else [r for r in rows if visible(r["name"])])

    async def _trace_setting(self, asked: _Asked) -> _Response:
        model = asked.match["model"]
        if model and not self.dataplane.model_ready(model, None):
            raise unknown_model(model)
        if asked.method == "POST":
            body = await self.read_body(asked.scope, asked.receive)
            return _json(self.tracing.update(self._json_body(body), model))
        return _json(self.tracing.settings(model))

    async def _logging(self, asked: _Asked) -> _Response:
        if asked.method == "POST":
            body = await self.read_body(asked.scope, asked.receive)
            return _json(SETTINGS.update(self._json_body(body)))
        return _json(SETTINGS.as_triton())

    async def _rules(self, asked: _Asked) -> _Response:
        if self.governance is None:
            return _json({"service": None, "source": None, "rules": [], "decisions": {}})
        return _json(self.governance.rules())

    async def _live_stats(self, asked: _Asked) -> _Response:
        governance = self.governance.live_stats() if self.governance is not None else None
        return _json(self.dataplane.live_stats(governance))

    async def _rejections(self, asked: _Asked) -> _Response:
        return _json(rejections(self.governance, asked.scope["path"]))

    async def _shared_memory(self, asked: _Asked) -> _Response:
        """Triton's shared-memory extension: system and CUDA regions."""
        match = asked.match
        kind, region = match["kind"], match["region"]
        regions = self.shared_memory
        action = match.groupdict().get("action") or "status"
        if action == "status":
            return _json(regions.status(region, kind))
        body = await self.read_body(asked.scope, asked.receive)
        if action == "unregister":
            regions.unregister(region, kind)
            return _Response(200)
        if region is None:  # the route matched register without a region: refused
            raise ProtocolError(
                f"'region name' is necessary to register {kind} shared memory region",
                code=Code.INVALID_ARGUMENT,
                rule="protocol/shared-memory",
                where=f"POST /v2/{kind}sharedmemory/region/NAME/register",
            )
        doc = self._json_body(body)
        if kind == "cuda":
            regions.register_cuda(
                region, doc.get("raw_handle"), doc.get("device_id", 0), doc.get("byte_size")
            )
        else:
            regions.register(region, doc.get("key"), doc.get("offset", 0), doc.get("byte_size"))
        return _Response(200)

    async def _repository_action(self, asked: _Asked) -> _Response:
        model, action = asked.match["model"], asked.match["action"]
        doc = self._json_body(await self.read_body(asked.scope, asked.receive))
        params = doc.get("parameters") or {}
        manager = self.dataplane.manager
        if action == "unload":
            await manager.unload(model, params.get("unload_dependents") is True)
            return _Response(200)
        override = load_override(model, params)
        files = load_files(model, params)
        authorize = None
        if self.governance is not None and asked.call is not None:
            authorize = self.governance.authorize_load(asked.call)
        await manager.load(model, override, authorize, files)
        return _Response(200)

    def _visible(self, call: Call | None) -> Callable[[str], bool] | None:
        """The models a listing shows the caller; None: all (no governance)."""
        return None if self.governance is None or call is None else self.governance.visible(call)

    @staticmethod
    def _json_body(body: bytes) -> dict[str, Any]:
        if not body.strip():
            return {}
        return json_object(body, "the request body", _bad_json)

    async def _guarded(self, scope: Scope, receive: Receive, governance: Governance) -> _Response:
        call = _call_from_headers(governance, scope)
        try:
            return await governance.guard(call, lambda: self._dispatch(scope, receive, call))
        except GovernanceError as error:
            return _rejection(governance, call, error)
