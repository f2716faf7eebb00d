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
from typing import Any, NamedTuple

import numpy as np
import orjson
import structlog

from modelyard.dataplane import DataPlane, InferLane, resident_lane
from modelyard.errors import (
    LOAD_TIME_RULE,
    MEMORY_BUDGET_RULE,
    Code,
    GovernanceError,
    ModelyardError,
    NotResident,
    ProtocolError,
    internal_error,
    retry_after_header,
    shown,
)
from modelyard.frontdoors.bounds import DEFAULT_MAX_BODY_BYTES
from modelyard.frontdoors.embeddings import EmbeddingRoutes
from modelyard.frontdoors.header_forwarding import HeaderForwarding
from modelyard.frontdoors.http_compression import (
    MIN_COMPRESSED_BYTES,
    compress,
    inflate,
    preferred_encoding,
)
from modelyard.frontdoors.http_connections import RECEIVED_NS, DirectReply
from modelyard.frontdoors.http_lane import HttpLane, HttpLanes, LaneKey, lane_key
from modelyard.frontdoors.restricted import Restrictions
from modelyard.generation import Generation
from modelyard.governance.chain import GuardChain, Ticket
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
    decode_infer_request,
    decode_with_layout,
    encode_infer_response,
)
from modelyard.tracing import RequestTrace, Tracing
from modelyard.types import InferRequest, InferResponse

log = structlog.get_logger("modelyard.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_MODEL_ROUTE = re.compile(
    r"^/v2/models/(?P<model>[^/]+)(?:/versions/(?P<version>[^/]+))?"
    r"(?P<action>/infer|/ready|/config|/stats)?/?$"
)
_REPOSITORY_ROUTE = re.compile(r"^/v2/repository/models/(?P<model>[^/]+)/(?P<action>load|unload)$")
_TRACE_ROUTE = re.compile(r"^/v2(?:/models/(?P<model>[^/]+))?/trace/setting$")
_SHARED_MEMORY_ROUTE = re.compile(
    r"^/v2/(?P<kind>system|cuda)sharedmemory(?:/region/(?P<region>[^/]+))?"
    r"/(?P<action>status|register|unregister)$"
)
_JSON = [(b"content-type", b"application/json")]
_FORWARDED = "modelyard.forwarded_parameters"  # the scope key of the headers made parameters
LIVE_STATS_PATH = "/v2/modelyard/stats"


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


def _bad_json(detail: str) -> ProtocolError:
    return ProtocolError(
        detail, code=Code.INVALID_ARGUMENT, rule="protocol/json", where="the request body"
    )


def _route_error(method: str, path: str) -> ProtocolError:
    return ProtocolError(
        f"no route for {shown(method, 20)} {shown(path)}",
        code=Code.NOT_FOUND,
        rule="protocol/route",
        where="the KServe V2 HTTP API: /v2, /v2/health/*, /v2/models/..., /v2/repository/..., "
        "/v2/systemsharedmemory/..., /v2/logging, /v2/trace/setting",
    )


_GET = ("GET", "HEAD")  # a route that is read answers HEAD too: uvicorn leaves out the body
_POST = ("POST",)
_GET_OR_POST = ("GET", "HEAD", "POST")
LOGGING_PATH = "/v2/logging"
_REJECTIONS_PATH = "/v2/modelyard/rejections"
_GET_ROUTES = frozenset(
    {
        "/v2",
        "/v2/",
        "/v2/health/live",
        "/v2/health/ready",
        "/v2/models/stats",
        "/v2/modelyard/rules",
        LIVE_STATS_PATH,
    }
)

Route = tuple[str, str | None, str | None]  # model, version, action ("/infer", ... or None)


def _allowed_methods(path: str, route: Route | None) -> tuple[str, ...] | None:
    """The methods a V2 path takes (``route``: its ``model_route``); None: no such route."""
    if route is not None:
        return _POST if route[2] == "/infer" else _GET
    if path in _GET_ROUTES or path.startswith(_REJECTIONS_PATH):
        return _GET
    if path in EMBEDDING_PATHS:
        return _POST
    if path == LOGGING_PATH or _TRACE_ROUTE.match(path):
        return _GET_OR_POST
    if path == "/v2/repository/index" or _REPOSITORY_ROUTE.match(path):
        return _POST
    match = _SHARED_MEMORY_ROUTE.match(path)
    if match is not None:
        return _GET if match["action"] == "status" else _POST
    return None


def model_route(path: str) -> Route | None:
    """The model, version and action a /v2/models/... path names; None for another path."""
    match = _MODEL_ROUTE.match(path)
    if match is None or match["model"] == "stats":
        return None
    return (match["model"], match["version"], match["action"])


class RouteCache:
    """``model_route`` of each path a front door has seen, remembered for its hot path;
    bounded, because paths come from callers. A path's route never goes stale."""

    MAX = 4096
    PATH_CHARS = 512  # longer paths are read anew each time, never kept

    def __init__(self) -> None:
        self._known: dict[str, Route | None] = {}

    def __call__(self, path: str) -> Route | None:
        try:
            return self._known[path]
        except KeyError:
            pass
        route = model_route(path)
        if len(path) <= self.PATH_CHARS:
            if len(self._known) >= self.MAX:
                self._known.clear()
            self._known[path] = route
        return route


def classify(method: str, path: str) -> tuple[str, str | None, str | None]:
    """The governance interface of an HTTP call, and the model it names."""
    route = model_route(path)
    if route is not None:
        model, version, action = route
        if action == "/infer":
            return "infer", model, version
        interface = "health" if action == "/ready" else "metadata"
        return interface, model, version
    if path == LIVE_STATS_PATH:  # the control plane's poll: monitoring, like /metrics
        return "health", None, None
    if path == LOGGING_PATH:  # the process's log settings: an operator's business
        return "admin", None, None
    if _SHARED_MEMORY_ROUTE.match(path):  # maps the host's memory: an admin of every model
        return "admin", "*", None
    traced = _TRACE_ROUTE.match(path)
    if traced is not None:  # what the server records: the model's admin, or every model's
        return "admin", traced["model"] or "*", None
    if path.startswith("/v2/repository/") or path.startswith("/v2/modelyard/"):
        match = _REPOSITORY_ROUTE.match(path)
        return "admin", match["model"] if match else None, None
    if path.startswith("/v2/health/") or path in ("/v2", "/v2/"):
        return "health", None, None
    return "metadata", None, None


_MODEL_ACTION_CATEGORY = {
    "/infer": "inference",
    "/ready": "health",
    "/config": "model-config",
    "/stats": "statistics",
    None: "metadata",
}


def restricted_category(path: str) -> str | None:
    """The category of tritonserver's --http-restricted-api a path is in (None: none)."""
    route = model_route(path)
    if route is not None:
        return _MODEL_ACTION_CATEGORY.get(route[2])
    if path in ("/v2/health/live", "/v2/health/ready"):
        return "health"
    if path in ("/v2", "/v2/"):
        return "metadata"
    if path == "/v2/models/stats":
        return "statistics"
    if path == LOGGING_PATH:
        return "logging"
    if _TRACE_ROUTE.match(path):
        return "trace"
    if _SHARED_MEMORY_ROUTE.match(path):
        return "shared-memory"
    if path.startswith("/v2/repository/"):
        return "model-repository"
    if path in EMBEDDING_PATHS:  # an infer call in another API's words
        return "inference"
    return None


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
    interface, model, version = classify(scope["method"], scope["path"])
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


class _Sent(NamedTuple):
    """What a request arrived as, which keys the lane it leaves behind."""

    path: str
    body: bytes
    header_length: int | None
    api_key: bytes | None
    authorization: bytes | None
    doc: dict[str, Any] | None = None  # a JSON body, read (infer_json.read)
    key: LaneKey | None = None  # lane_key's: where a lane for it is kept (None: nowhere)
    request_id: str | None = None  # lane_key's: the id the key leaves out


def _wire_headers(response: _Response) -> list[tuple[bytes, bytes]]:
    if response.sized:
        return response.headers
    return [*response.headers, (b"content-length", str(len(response.body)).encode())]


def _answer(reply: DirectReply, path: str, respond: Callable[[], _Response]) -> None:
    """Reply to a direct request with what ``respond`` makes of its settled future."""
    _answered(reply, path, lambda: _answer_response(reply, respond()))


def _answered(reply: DirectReply, path: str, action: Callable[[], None]) -> None:
    """Run a step of a direct request; what it raises is the caller's answer, as the ASGI
    path's handler makes it (no task is left to answer otherwise)."""
    try:
        action()
    except ModelyardError as error:
        _answer_error(reply, path, error)
    except asyncio.CancelledError:  # its future: the caller still gets an answer
        log.warning("request_cancelled", path=path)
        _answer_error(reply, path, internal_error(RuntimeError("request cancelled")), True)
    except Exception as exc:
        log.exception("request_crashed", path=path)
        _answer_error(reply, path, internal_error(exc), logged=True)


def _answer_error(
    reply: DirectReply, path: str, error: ModelyardError, logged: bool = False
) -> None:
    if not logged:
        log.warning("request_failed", path=path, **error.fields())
    _answer_response(reply, _error_response(error))


def _explained(
    response: _Response, governance: Governance, call: Call, error: ModelyardError
) -> None:
    """A refusal ``modelyard explain`` finds (a model's load time, the memory budget): kept
    with the guards' rejections under the request's id, which the response says."""
    governance.record_refusal(call, error)
    response.headers.append((b"x-request-id", str(call.request_id).encode()))


def _answer_response(reply: DirectReply, response: _Response) -> None:
    reply(response.status, _wire_headers(response), response.body)


def _compressing(reply: DirectReply, accept_encoding: bytes) -> DirectReply:
    """``reply``, with a successful answer compressed as the caller prefers."""

    def compressed(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        _answer_response(
            reply, _compressed(_Response(status, body, headers, True), accept_encoding)
        )

    return compressed


class HttpFrontend:
    """The V2 HTTP API of a data plane: an infer call takes its lane or the general path,
    from the connection's callbacks (``direct``) when nothing on its way awaits."""

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
        # tritonserver's --http-restricted-api; an infer call it restricts takes the ASGI
        # path, where the header is checked (``direct`` declines it)
        self.restrictions = restrictions
        self.restricts_inference = (
            restrictions is not None and "inference" in restrictions.by_category
        )
        self.max_body_bytes = max_body_bytes
        self.governance = governance
        self.shared_memory = shared_memory or SystemSharedMemory(allowed=False)
        self.tracing = tracing or Tracing()
        self.header_forwarding = header_forwarding
        self.lanes = HttpLanes()
        self.layouts = BinaryLayouts()  # binary headers seen before: decoded once each
        self.route = RouteCache()  # the model, version and action of each path seen
        # what its lanes depend on, counted (modelyard/generation.py): the data plane's (a
        # model loaded, unloaded or swapped) and governance's (rules changed, tickets
        # forgotten); both only grow, so their sum moves whenever either does
        data_plane = dataplane.generation if dataplane is not None else Generation()
        if governance is None or governance.generation is data_plane:
            self.stamp: Callable[[], int] = lambda: data_plane.value
        else:
            rules = governance.generation
            self.stamp = lambda: data_plane.value + rules.value
        self.embeddings = EmbeddingRoutes(dataplane, governance, embedding_model)
        self._admitting: set[asyncio.Future[None]] = set()  # direct requests a guard awaits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        trace: RequestTrace | None = None
        try:
            if self.restrictions is not None:
                _check_restricted(self.restrictions, scope)
            route = self.route(scope["path"])
            if route is not None and route[2] == "/infer" and scope["method"] == "POST":
                if self.tracing.on:
                    trace = self.tracing.begin(
                        route[0], route[1], None, "http", _trace_context(scope["headers"]),
                        scope.get(RECEIVED_NS) or time.monotonic_ns(),
                    )  # fmt: skip
                # the fast lane, written out here: each coroutine awaited costs per request
                header_length, api_key, authorization, encoding, accept = _infer_headers(
                    scope["headers"]
                )
                governance = self.governance
                message = await receive()
                body = message.get("body", b"")
                if message.get("more_body") or len(body) > self.max_body_bytes:
                    body = await self._rest_of_body(scope, receive, body)
                if encoding is not None:
                    body = inflate(body, encoding, self.max_body_bytes)
                # a sampled request decodes in its own steps, timed
                doc = read_infer_json(body) if header_length is None and trace is None else None
                key, request_id = lane_key(
                    scope["path"], body, header_length, api_key, authorization, doc
                )
                lanes = self.lanes
                lane = None if key is None else lanes.find(key, body, header_length, self.stamp())
                if self.header_forwarding is not None and self._forwarded(scope):
                    lane = None  # a lane is kept for requests alike: their headers are not
                if trace is not None:  # a sampled request takes the general path, timed
                    response = await self._infer_traced(scope, body, header_length, route, trace)
                elif lane is None:
                    sent = _Sent(
                        scope["path"], body, header_length, api_key, authorization, doc, key,
                        request_id,
                    )  # fmt: skip
                    if governance is None:  # nothing to admit: a coroutine less
                        response = await self._run_admitted(scope, sent, route, None)
                    else:
                        response = await self._infer(scope, governance, sent, route)
                else:
                    ticket = lane.ticket
                    first = None if ticket is None else ticket.admit()
                    if first is None:  # admitted: routing and queueing with no await between
                        arrived = scope.get(RECEIVED_NS, 0)
                        queued = lane.submit(body, header_length, arrived, doc)
                        doc = None  # not held while the request waits (_decoded)
                        results = await queued
                        response = self._lane_reply(lane, results, request_id)
                    else:  # a quick path could not decide: a guard will, awaited
                        assert ticket is not None
                        refused = await self._admit_rest(scope, ticket, first)
                        sent = _Sent(
                            scope["path"], body, header_length, api_key, authorization, doc,
                            key, request_id,
                        )  # fmt: skip
                        response = refused or await self._run_admitted(
                            scope, sent, route, ticket.principal
                        )
                if accept is not None:
                    response = _compressed(response, accept)
            elif scope["path"] in EMBEDDING_PATHS and scope["method"] == "POST":
                body = await self._read_body(scope, receive)
                response = _Response(
                    *await self.embeddings.answer(scope["path"], scope["headers"], body)
                )
            elif self.governance is not None:
                response = await self._guarded(scope, receive, self.governance)
            else:
                response = await self._dispatch(scope, receive)
        except ModelyardError as error:
            response = _error_response(error)
            log.warning("request_failed", path=scope["path"], **error.fields())
            if error.rule in EXPLAINED_REFUSALS and self.governance is not None:
                call = _call_from_headers(self.governance, scope)
                _explained(response, self.governance, call, error)
            if trace is not None:
                trace.error = error.line()
        except Exception as exc:
            log.exception("request_crashed", path=scope["path"])
            response = _error_response(internal_error(exc))
            if trace is not None:
                trace.error = response.body.decode("utf-8", "replace")
        headers = _wire_headers(response)
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})
        if trace is not None:
            if response.status != 200 and trace.error is None:
                trace.error = response.body.decode("utf-8", "replace")
            self.tracing.finish(trace, trace.version or "", time.monotonic_ns())

    @staticmethod
    async def _lifespan(receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _forwarded(self, scope: Scope) -> dict[str, str]:
        """The parameters ``--http-header-forward-pattern`` takes from the request's headers,
        kept in the scope for the decoding to add."""
        assert self.header_forwarding is not None
        forwarded = self.header_forwarding.parameters(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        )
        scope[_FORWARDED] = forwarded
        return forwarded

    @staticmethod
    def _with_forwarded(scope: Scope, request: InferRequest) -> InferRequest:
        forwarded = scope.get(_FORWARDED)
        if forwarded:
            request.parameters = {**request.parameters, **forwarded}
        return request

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
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
        """Answer a route; ``call``: what governance admitted it as (None: ungoverned)."""
        method: str = scope["method"]
        path: str = scope["path"]
        dp = self.dataplane
        route = model_route(path)
        allowed = _allowed_methods(path, route)
        if allowed is None:
            raise _route_error(method, path)
        if method not in allowed:  # an infer call gets here only so: __call__ takes its POST
            raise _MethodNotAllowed(method, path, allowed)
        if route is not None:
            model, version, action = route
            if action is None:
                return _json(dp.model_metadata(model, version))
            if action == "/ready":
                return _Response(200 if dp.model_ready(model, version) else 400)
            if action == "/config":
                return _json(dp.model_config(model, version))
            return _json(dp.statistics(model, version))
        if path == "/v2/health/live":
            return _Response(200 if dp.server_live() else 400)
        if path == "/v2/health/ready":
            return _Response(200 if dp.server_ready() else 400)
        if path in ("/v2", "/v2/"):
            return _json(dp.server_metadata())
        if path == "/v2/models/stats":
            stats = dp.statistics(None, None)
            visible = self._visible(call)
            if visible is not None:
                stats["model_stats"] = [s for s in stats["model_stats"] if visible(s["name"])]
            return _json(stats)
        if path == "/v2/repository/index":
            body = await self._read_body(scope, receive)
            doc = self._json_body(body)
            rows = dp.manager.index(ready_only=bool(doc.get("ready", False)))
            visible = self._visible(call)
            return _json(rows if visible is None else [r for r in rows if visible(r["name"])])
        traced = _TRACE_ROUTE.match(path)
        if traced is not None:
            if method == "POST":
                body = await self._read_body(scope, receive)
                return _json(self.tracing.update(self._json_body(body), traced["model"]))
            return _json(self.tracing.settings(traced["model"]))
        if path == LOGGING_PATH:
            if method == "POST":
                body = await self._read_body(scope, receive)
                return _json(SETTINGS.update(self._json_body(body)))
            return _json(SETTINGS.as_triton())
        if path == "/v2/modelyard/rules":
            if self.governance is None:
                return _json({"service": None, "source": None, "rules": [], "decisions": {}})
            return _json(self.governance.rules())
        if path == LIVE_STATS_PATH:
            governance = self.governance.live_stats() if self.governance is not None else None
            return _json(dp.live_stats(governance))
        if path.startswith(_REJECTIONS_PATH):
            return _json(rejections(self.governance, path))
        shared = _SHARED_MEMORY_ROUTE.match(path)
        if shared is not None:
            body = await self._read_body(scope, receive)
            return self._shared_memory_action(
                shared["kind"], shared["region"], shared["action"], body
            )
        match = _REPOSITORY_ROUTE.match(path)
        if match is None:  # _allowed_methods lets no other path through
            raise _route_error(method, path)
        body = await self._read_body(scope, receive)
        return await self._repository_action(match["model"], match["action"], body, call)

    def _visible(self, call: Call | None) -> Callable[[str], bool] | None:
        """The models a listing shows the caller; None: all (no governance)."""
        return None if self.governance is None or call is None else self.governance.visible(call)

    @staticmethod
    def _json_body(body: bytes) -> dict[str, Any]:
        if not body.strip():
            return {}
        return json_object(body, "the request body", _bad_json)

    def _shared_memory_action(
        self, kind: str, region: str | None, action: str, body: bytes
    ) -> _Response:
        """Triton's shared-memory extension: system and CUDA regions."""
        regions = self.shared_memory
        if action == "status":
            return _json(regions.status(region, kind))
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

    async def _repository_action(
        self, model: str, action: str, body: bytes, call: Call | None = None
    ) -> _Response:
        doc = self._json_body(body)
        params = doc.get("parameters") or {}
        manager = self.dataplane.manager
        if action == "unload":
            await manager.unload(model)
            return _Response(200)
        override = load_override(model, params)
        files = load_files(model, params)
        authorize = None
        if self.governance is not None and call is not None:
            authorize = self.governance.authorize_load(call)
        await manager.load(model, override, authorize, files)
        return _Response(200)

    async def _guarded(self, scope: Scope, receive: Receive, governance: Governance) -> _Response:
        call = _call_from_headers(governance, scope)
        try:
            return await governance.guard(call, lambda: self._dispatch(scope, receive, call))
        except GovernanceError as error:
            return _rejection(governance, call, error)

    async def _admit_rest(self, scope: Scope, ticket: Ticket, first: int) -> _Response | None:
        """Admit a call through the guards from ``first`` on; their refusal, or None."""
        governance = self.governance
        assert governance is not None
        call = _call_from_headers(governance, scope)
        call.principal = ticket.principal
        try:
            pending = governance.chain.admit(call, first)
            if pending is not None:
                await pending
        except GovernanceError as error:
            return _rejection(governance, call, error)
        return None

    async def _infer(
        self, scope: Scope, governance: Governance, sent: _Sent, route: Route
    ) -> _Response:
        """The general path of a governed infer call: admitted, decoded and validated in
        full. A request whose inputs all travel as binary data, or all as JSON values,
        leaves its lane behind for the next request of its shape (``_admitted_reply``).
        """
        ticket = self._ticket(governance.chain, sent, route)
        if ticket is None:  # a guard learns from outcomes: the chain runs around the call
            return await self._infer_governed(
                scope, governance, sent.body, sent.header_length, route
            )
        first = ticket.admit()
        if first is not None:
            refused = await self._admit_rest(scope, ticket, first)
            if refused is not None:
                return refused
        return await self._run_admitted(scope, sent, route, ticket.principal)

    async def _run_admitted(
        self, scope: Scope, sent: _Sent, route: Route, principal: str | None
    ) -> _Response:
        """An admitted infer call, decoded, validated and routed now; it leaves its lane.

        Routed only now: an admission that awaited may have let a new version in.
        ``principal``: whom the admitting ticket named (its model's own calls are for it).
        """
        arrived_ns = scope.get(RECEIVED_NS, 0)
        request, layout = self._decoded(sent, route, arrived_ns)
        sent = sent._replace(doc=None)  # held until the reply: not the document (_decoded)
        if principal is not None:  # whom its model's own calls (BLS) are for
            request.principals = (principal,)
        if scope.get(_FORWARDED):  # this request's own: its lane is not kept for others
            layout = None
            self._with_forwarded(scope, request)
        target = await resident_lane(self.dataplane, request)
        if target is None:  # a data plane that keeps no lanes (the gateway's)
            request.forward_headers = _trace_context(scope["headers"]) or None
            return self._infer_response(await self.dataplane.infer(request), request)
        stamp = self.stamp()  # routed now: what its lane decided holds while this does
        results = await self._queued(target, request)
        return self._admitted_reply(target, request, layout, sent, results, stamp)

    def _decoded(
        self, sent: _Sent, route: Route, arrived_ns: int
    ) -> tuple[InferRequest, BinaryLayout | JsonLayout | None]:
        """The request and its layout. Its callers let go of the read document after this:
        each is a handful of containers, and 32 requests holding theirs while they wait
        kept the garbage collector's youngest generation over its threshold, which promoted
        each batch's objects and made full collections (40 ms each) frequent."""
        model, version, _ = route
        request, layout = decode_with_layout(
            sent.body, sent.header_length, model, version, self.shared_memory, sent.doc,
            self.layouts,
        )  # fmt: skip
        request.arrived_ns = arrived_ns
        return request, layout

    @staticmethod
    def _queued(target: InferLane, request: InferRequest) -> asyncio.Future[Results]:
        return target.submit(
            request.inputs,
            request.priority,
            request.timeout_us,
            request.deadline,
            None,
            request.arrived_ns,
        )

    def _admitted_reply(
        self,
        target: InferLane,
        request: InferRequest,
        layout: BinaryLayout | JsonLayout | None,
        sent: _Sent,
        results: Results,
        stamp: int,
    ) -> _Response:
        """The reply to a routed request; one whose inputs all travel as binary data, or
        all as JSON values, leaves its lane behind at its key's second request, stamped
        with the generation it was routed at (``stamp``)."""
        key = sent.key
        if layout is None or key is None or not target.reusable or not self.lanes.seen_before(key):
            return self._infer_response(target.response(request, results), request)
        chain = None if self.governance is None else self.governance.chain
        ticket_key = None if chain is None else (sent.path, sent.api_key, sent.authorization)
        id_in_key = sent.header_length is not None and sent.request_id is None
        lane = HttpLane.make(
            target, layout, sent.header_length, id_in_key, chain, ticket_key, stamp
        )
        self.lanes.keep(key, lane, sent.body)
        return self._lane_reply(lane, results, request.id)

    # ---- the direct path: answered from the connection's callbacks, no task --------------

    def direct(
        self,
        path: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        received_ns: int,
        reply: DirectReply,
    ) -> bool:
        """Answer a whole infer POST from the connection's own callbacks: admitted and queued
        here, replied to from the callback that settles its future
        (``http_connections.DirectAnswer``); an admission a guard must await goes on in a task.

        Declined (False) where the ASGI path's steps are needed: tracing, header forwarding,
        forwarding to another server, and a chain that issues no ticket (a guard that learns
        from outcomes runs around the call).
        """
        if (
            self.tracing.on
            or self.header_forwarding is not None
            or self.dataplane.forwards_requests
            or self.restricts_inference
        ):
            return False
        route = self.route(path)
        if route is None or route[2] != "/infer" or len(body) > self.max_body_bytes:
            return False
        try:
            header_length, api_key, authorization, encoding, accept = _infer_headers(headers)
            if accept is not None:
                reply = _compressing(reply, accept)
            if encoding is not None:
                body = inflate(body, encoding, self.max_body_bytes)
            doc = read_infer_json(body) if header_length is None else None
            key, request_id = lane_key(path, body, header_length, api_key, authorization, doc)
            sent = _Sent(path, body, header_length, api_key, authorization, doc, key, request_id)
            governance = self.governance
            chain = None if governance is None else governance.chain
            lane = None if key is None else self.lanes.find(key, body, header_length, self.stamp())
            if lane is not None:
                ticket = lane.ticket
            elif chain is not None:
                ticket = self._ticket(chain, sent, route)
                if ticket is None:
                    return False
            else:
                ticket = None
            first = None if ticket is None else ticket.admit()
            if first is None and lane is not None:
                found = lane
                lane.submit(body, header_length, received_ns, doc).add_done_callback(
                    lambda done: _answer(
                        reply, path, lambda: self._lane_reply(found, done.result(), request_id)
                    )
                )
                return True
            if first is not None:  # past the ticket's quick path: the chain decides
                assert governance is not None and ticket is not None
                call = _call_from_headers(
                    governance, {"method": "POST", "path": path, "headers": headers}
                )
                call.principal = ticket.principal
                try:
                    pending = governance.chain.admit(call, first)
                except GovernanceError as error:
                    _answer_response(reply, _rejection(governance, call, error))
                    return True
                if pending is not None:
                    task = asyncio.ensure_future(
                        self._direct_after(
                            pending, governance, call, sent, route, received_ns, reply
                        )
                    )
                    self._admitting.add(task)
                    task.add_done_callback(self._admitting.discard)
                    return True
            principal = None if ticket is None else ticket.principal
            self._direct_general(sent, route, received_ns, principal, reply)
        except ModelyardError as error:
            _answer_error(reply, path, error)
        except Exception as exc:
            log.exception("request_crashed", path=path)
            _answer_error(reply, path, internal_error(exc), logged=True)
        return True

    def _direct_general(
        self,
        sent: _Sent,
        route: Route,
        received_ns: int,
        principal: str | None,
        reply: DirectReply,
    ) -> None:
        """An admitted direct request, decoded, validated, routed and queued now (as
        ``_run_admitted``); it leaves its lane."""
        request, layout = self._decoded(sent, route, received_ns)
        sent = sent._replace(doc=None)  # held by the callback until the reply (_decoded)
        if principal is not None:
            request.principals = (principal,)
        try:
            target = self.dataplane.lane(request)
        except NotResident as missing:  # its model loads first: awaited in a task
            task = asyncio.ensure_future(
                self._direct_when_resident(missing, request, sent, route, principal, reply)
            )
            self._admitting.add(task)
            task.add_done_callback(self._admitting.discard)
            return
        assert target is not None  # a data plane that keeps none forwards requests
        stamp = self.stamp()
        self._queued(target, request).add_done_callback(
            lambda done: _answer(
                reply,
                sent.path,
                lambda: self._admitted_reply(target, request, layout, sent, done.result(), stamp),
            )
        )

    async def _direct_when_resident(
        self,
        missing: NotResident,
        request: InferRequest,
        sent: _Sent,
        route: Route,
        principal: str | None,
        reply: DirectReply,
    ) -> None:
        """A direct request to a model that loads when asked for: routed once it has loaded."""
        try:
            await missing.resident(request.wait_deadline())
        except ModelyardError as error:
            log.warning("request_failed", path=sent.path, **error.fields())
            response = _error_response(error)
            governance = self.governance
            if error.rule in EXPLAINED_REFUSALS and governance is not None:
                call = governance.call("infer", request.model_name, request.model_version)
                _explained(response, governance, call, error)
            _answer_response(reply, response)
            return
        except Exception as exc:  # the caller is answered whatever the load raised
            log.exception("request_crashed", path=sent.path)
            _answer_error(reply, sent.path, internal_error(exc), logged=True)
            return
        _answered(
            reply,
            sent.path,
            lambda: self._direct_general(sent, route, request.arrived_ns, principal, reply),
        )

    async def _direct_after(
        self,
        pending: Awaitable[Any],
        governance: Governance,
        call: Call,
        sent: _Sent,
        route: Route,
        received_ns: int,
        reply: DirectReply,
    ) -> None:
        """A direct request whose admission a guard awaits: routed only once admitted (a
        new version may have come in meanwhile)."""
        try:
            await pending
        except GovernanceError as error:
            _answer_response(reply, _rejection(governance, call, error))
            return
        except Exception as exc:  # the caller is answered whatever a guard raised
            log.exception("request_crashed", path=sent.path)
            _answer_error(reply, sent.path, internal_error(exc), logged=True)
            return
        _answered(
            reply,
            sent.path,
            lambda: self._direct_general(sent, route, received_ns, call.principal, reply),
        )

    def _ticket(self, chain: GuardChain, sent: _Sent, route: Route) -> Ticket | None:
        """The chain's ticket for the caller's credentials on this route, made on first use;
        None: the chain issues none."""
        model, version, _ = route
        key = (sent.path, sent.api_key, sent.authorization)  # as they arrived
        ticket = chain.known_ticket(key)
        if ticket is None:
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

    async def _infer_traced(
        self,
        scope: Scope,
        body: bytes,
        header_length: int | None,
        route: Route,
        trace: RequestTrace,
    ) -> _Response:
        """A sampled request: governed, decoded and run as any, its times kept for its spans."""
        model, version, _ = route
        dataplane = self.dataplane
        decoded: list[InferRequest] = []

        def decode() -> InferRequest:
            trace.admitted()
            request = decode_infer_request(body, header_length, model, version, self.shared_memory)
            self._with_forwarded(scope, request)
            request.trace = trace
            request.arrived_ns = trace.arrived_ns
            trace.decoded(request)
            if dataplane.forwards_requests:
                request.forward_headers = self.tracing.propagation_headers(trace)
            decoded.append(request)
            return request

        governance = self.governance
        if governance is None:
            response = await dataplane.infer(decode())
        else:
            call = _call_from_headers(governance, scope)
            try:
                response = await governance.infer(call, decode, dataplane)
            except GovernanceError as error:
                trace.error = error.line()
                return _rejection(governance, call, error)
        trace.answered(response)
        return self._infer_response(response, decoded[0] if decoded else None)

    async def _infer_governed(
        self,
        scope: Scope,
        governance: Governance,
        body: bytes,
        header_length: int | None,
        route: Route,
    ) -> _Response:
        call = _call_from_headers(governance, scope)
        model, version, _ = route
        decoded: list[InferRequest] = []

        def decode() -> InferRequest:
            request = decode_infer_request(body, header_length, model, version, self.shared_memory)
            request.arrived_ns = scope.get(RECEIVED_NS, 0)
            self._with_forwarded(scope, request)
            decoded.append(request)
            return request

        try:
            response = await governance.infer(call, decode, self.dataplane)
        except GovernanceError as error:
            return _rejection(governance, call, error)
        return self._infer_response(response, decoded[0] if decoded else None)

    def _lane_reply(
        self, lane: HttpLane, results: dict[str, np.ndarray], request_id: str | None
    ) -> _Response:
        """The response to a request of a lane, from the reply encoded once for it;
        ``request_id``: the one its lane key left out."""
        if lane.id_in_key:
            request_id = lane.layout.options["id"]
        reply = lane.reply
        if reply is not None:
            answer = reply.answer(results, request_id)
            if answer is not None:
                return _Response(200, answer[0], answer[1], sized=reply.sized)
        request = lane.request(request_id)
        return self._infer_response(lane.target.response(request, results), request)

    @staticmethod
    def _infer_response(response: InferResponse, request: InferRequest | None) -> _Response:
        """The encoded response; outputs the request asked for in shared memory go there."""
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
