"""Triton's generate extension over HTTP: ``POST /v2/models/{name}[/versions/{v}]/generate``
answers one JSON object, ``/generate_stream`` one Server-Sent Event per response.

A call takes the way of every streamed infer call (gRPC's ModelStreamInfer): governance
admits it as an infer call on its model (``Governance.stream``), and the data plane gives
its responses as they come (``DataPlane.infer_stream``: a decoupled model's many, any
other model's one), so its limits, breakers, auth, residency and statistics are an infer
call's. Its body is read once it is admitted, as a V2 body is decoded then: against the
model's inputs, from its metadata (protocol/generate.py).

As Triton answers: a request refused before any response is a JSON error; on
``/generate_stream`` the first response decides the status, and a later error is an
event of its own; ``/generate`` answers once its model has finished, and only a model
that sent exactly one response has an answer to give. A caller that goes cancels its
request (the model reads ``is_cancelled()``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from modelyard.dataplane import (
    MAX_UNREAD,
    MAX_UNREAD_BYTES,
    DataPlane,
    StreamResponse,
    unread_responses,
)
from modelyard.errors import (
    Code,
    GovernanceError,
    ModelyardError,
    NotResident,
    ProtocolError,
    internal_error,
)
from modelyard.frontdoors.http_connections import RECEIVED_NS
from modelyard.governance.guard import Call
from modelyard.governance.runtime import Governance
from modelyard.protocol.generate import (
    SSE_CONTENT_TYPE,
    error_event,
    event,
    infer_inputs,
    read_body,
    refused,
    response_body,
)
from modelyard.protocol.status import http_status
from modelyard.refusal_log import REFUSALS
from modelyard.tasks import cancel_and_wait
from modelyard.types import InferRequest

log = structlog.get_logger("modelyard.http")

GENERATE = "/generate"
GENERATE_STREAM = "/generate_stream"
GENERATE_ACTIONS = frozenset((GENERATE, GENERATE_STREAM))

Headers = list[tuple[bytes, bytes]]
Send = Callable[[dict[str, Any]], Any]
Receive = Callable[[], Any]
# the HTTP front door's answer to a refusal (status, headers, body): its error line, and
# a guard's RateLimit headers where ``Call`` is the call a guard refused
ErrorReply = Callable[[ModelyardError, Call | None], tuple[int, Headers, bytes]]

_JSON = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class _Ended:
    """The end of a call's responses: how it ended (None: done), or that its caller went."""

    error: Exception | None = None
    gone: bool = False


class _Unread(asyncio.Queue[StreamResponse | _Ended]):
    """A call's responses waiting for its writer, bounded as a stream's are: past
    MAX_UNREAD of them or MAX_UNREAD_BYTES the call is cancelled (its model's stream with
    it), and the writer finds, after what it had not written, why."""

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model
        self.unread_bytes = 0
        self.producer: asyncio.Future[None] | None = None
        self.over = False

    def put(self, item: StreamResponse | _Ended) -> None:  # type: ignore[override]
        if self.over:
            return
        size = _size(item)
        if isinstance(item, StreamResponse) and (
            self.qsize() >= MAX_UNREAD or self.unread_bytes + size > MAX_UNREAD_BYTES
        ):
            self.over = True
            if self.producer is not None:
                self.producer.cancel()
            item, size = _Ended(unread_responses(self.model)), 0
        self.unread_bytes += size
        self.put_nowait(item)

    async def get(self) -> StreamResponse | _Ended:
        item = await super().get()
        self.unread_bytes -= _size(item)
        return item


def _size(item: StreamResponse | _Ended) -> int:
    if isinstance(item, _Ended) or item.response is None:
        return 0
    return sum(output.data.nbytes for output in item.response.outputs)


class _GenerateBody:
    """The data plane, as governance streams an admitted generate call from it: the call's
    body read against its model's inputs first (the model loaded first where it loads when
    asked for), then the data plane's stream of the request."""

    def __init__(self, dataplane: DataPlane, body: bytes, encoding: bytes | None) -> None:
        self.dataplane = dataplane
        self.body = body
        self.encoding = encoding

    async def infer_stream(self, request: InferRequest) -> AsyncIterator[StreamResponse]:
        metadata = await self._metadata(request)
        if self.encoding is not None and self.encoding.strip().lower() != b"identity":
            raise refused("Unsupported content-encoding, only 'identity' is supported.")
        given = infer_inputs(read_body(self.body), metadata["inputs"])
        request.inputs = given.inputs
        request.input_datatypes = given.datatypes
        request.parameters = given.parameters
        request.id = given.id
        async for item in self.dataplane.infer_stream(request):
            yield item

    async def _metadata(self, request: InferRequest) -> dict[str, Any]:
        try:
            return self.dataplane.model_metadata(request.model_name, request.model_version)
        except NotResident as missing:
            await missing.resident(request.wait_deadline())
            return self.dataplane.model_metadata(request.model_name, request.model_version)


class GenerateRoutes:
    """The generate extension of an HTTP front door, over its data plane and governance."""

    def __init__(
        self, dataplane: DataPlane, governance: Governance | None, error_reply: ErrorReply
    ) -> None:
        self.dataplane = dataplane
        self.governance = governance
        self.error_reply = error_reply

    async def answer(
        self,
        scope: dict[str, Any],
        route: tuple[str, str | None, str | None],
        body: bytes,
        call: Call | None,
        receive: Receive,
        send: Send,
    ) -> None:
        """Answer one call of either route (``route``: the path's model, version, action);
        ``call``: what governance admits it as (None: ungoverned)."""
        model, version, action = route
        encoding = None
        for key, value in scope["headers"]:
            if key == b"content-encoding":
                encoding = value
        streamed = _GenerateBody(self.dataplane, body, encoding)
        request = InferRequest(model, version, {}, {}, arrived_ns=scope.get(RECEIVED_NS, 0))
        ended: _Unread = _Unread(model)
        producer = asyncio.ensure_future(self._produce(request, call, streamed, ended.put))
        ended.producer = producer
        watcher = asyncio.ensure_future(_watch_disconnect(receive, producer, ended.put_nowait))
        path: str = scope["path"]
        try:
            if action == GENERATE_STREAM:
                await self._stream(ended, send, path, call)
            else:
                await self._one(ended, send, path, call, model)
        finally:
            await cancel_and_wait(watcher)
            await cancel_and_wait(producer)

    async def _produce(
        self,
        request: InferRequest,
        call: Call | None,
        streamed: _GenerateBody,
        put: Callable[[StreamResponse | _Ended], None],
    ) -> None:
        try:
            if call is None or self.governance is None:
                async for item in streamed.infer_stream(request):
                    put(item)
            else:
                await self.governance.stream(call, lambda: request, streamed, put)
        except Exception as exc:  # the caller is answered whatever was raised
            put(_Ended(exc))
        else:
            put(_Ended())

    async def _stream(
        self,
        items: asyncio.Queue[StreamResponse | _Ended],
        send: Send,
        path: str,
        call: Call | None,
    ) -> None:
        """``/generate_stream``: each response an event as it comes; the first one decides
        the status."""
        started = False
        while True:
            item = await items.get()
            if isinstance(item, _Ended):
                if item.gone:
                    return
                if item.error is not None:
                    error = self._logged(item.error, path, call)
                    if not started:  # refused before any response: a JSON error
                        await self._reply_error(send, error, call)
                        return
                    await send(_body(error_event(error), more=True))
                if not started:  # no response at all: an empty stream
                    await send(_start(200, [(b"content-type", SSE_CONTENT_TYPE)]))
                await send(_body(b"", more=False))
                return
            if item.response is None and item.error is None:
                continue  # a FINAL flag sent alone: the end follows
            status = 200
            if item.error is not None:
                error = self._logged(item.error, path, None)
                status = http_status(error.code)
                chunk = error_event(error)
            else:
                assert item.response is not None
                try:
                    chunk = event(response_body(item.response))
                except ModelyardError as error:
                    self._logged(error, path, None)
                    chunk = error_event(error)
                    status = http_status(error.code)
            if not started:
                await send(_start(status, [(b"content-type", SSE_CONTENT_TYPE)]))
                started = True
            await send(_body(chunk, more=True))

    async def _one(
        self,
        items: asyncio.Queue[StreamResponse | _Ended],
        send: Send,
        path: str,
        call: Call | None,
        model: str,
    ) -> None:
        """``/generate``: the model's one response, once it has finished; a second one
        ends the call at once (its model's stream cancelled with it)."""
        answers: list[StreamResponse] = []
        while True:
            item = await items.get()
            if isinstance(item, _Ended):
                break
            if item.response is not None or item.error is not None:
                answers.append(item)
                if len(answers) > 1:
                    break
        if isinstance(item, _Ended):
            if item.gone:
                return
            if item.error is not None:
                if not answers:  # refused before any response
                    await self._reply_error(send, self._logged(item.error, path, call), call)
                    return
                answers.append(StreamResponse(None, item.error, True))
        try:
            if len(answers) != 1:
                raise ProtocolError(
                    "generate expects model to produce exactly 1 response, use generate "
                    "stream for model that generates various number of responses "
                    f"({'more than 1 response' if answers else '0 responses'})",
                    code=Code.INVALID_ARGUMENT,
                    rule="protocol/generate-one-response",
                    where=f"POST /v2/models/{model}/generate_stream, which sends each "
                    "response as it comes",
                    triton=True,
                )
            (answer,) = answers
            if answer.error is not None:
                raise answer.error
            assert answer.response is not None
            body = response_body(answer.response)
        except Exception as exc:
            await self._reply_error(send, self._logged(exc, path, None), None)
            return
        await send(_start(200, [_JSON, (b"content-length", str(len(body)).encode())]))
        await send(_body(body, more=False))

    def _logged(self, exc: Exception, path: str, call: Call | None) -> ModelyardError:
        """``exc`` as the error its caller reads, logged as the infer pipeline logs one."""
        if isinstance(exc, ModelyardError):
            if call is None or not isinstance(exc, GovernanceError):  # the chain logs its own
                REFUSALS.warning(log, "request_failed", path=path, **exc.fields())
            return exc
        log.exception("request_crashed", path=path, exc_info=exc)
        return internal_error(exc)

    async def _reply_error(self, send: Send, error: ModelyardError, call: Call | None) -> None:
        status, headers, body = self.error_reply(error, call)
        await send(_start(status, [*headers, (b"content-length", str(len(body)).encode())]))
        await send(_body(body, more=False))


async def _watch_disconnect(
    receive: Receive, producer: asyncio.Future[None], put: Callable[[_Ended], None]
) -> None:
    """Wait for the caller to go; then its request is cancelled (the model's stream with it)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    producer.cancel()
    put(_Ended(gone=True))


def _start(status: int, headers: Headers) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status, "headers": headers}


def _body(chunk: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.response.body", "body": chunk, "more_body": more}
