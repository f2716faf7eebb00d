"""The KServe V2 gRPC API: Triton's ``inference.GRPCInferenceService`` on grpc.aio.

It runs in the event loop of the HTTP server and calls the same DataPlane.
Every ModelyardError becomes the gRPC status that ``modelyard.protocol.status``
names, with the error line HTTP returns as its details. The standard
``grpc.health.v1.Health`` service answers for "" (the server) and each model.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import itertools
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias, TypeVar

import grpc
import structlog
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc

from modelyard import error_rules
from modelyard.dataplane import (
    CALLER_GONE,
    MAX_UNREAD,
    MAX_UNREAD_BYTES,
    DataPlane,
    InferLane,
    StreamResponse,
    unknown_model_refusal,
    unread_responses,
)
from modelyard.errors import (
    ConfigError,
    DecoupledRefusal,
    GovernanceError,
    ModelyardError,
    ProtocolError,
    internal_error,
    listen_failure,
    retry_after_header,
    shown,
)
from modelyard.frontdoors.bounds import DEFAULT_MAX_MESSAGE_BYTES
from modelyard.frontdoors.header_forwarding import HeaderForwarding
from modelyard.frontdoors.infer_pipeline import InferPipeline
from modelyard.frontdoors.restricted import GRPC_METHODS, Restrictions
from modelyard.governance.guard import CALL_HEADERS, Call
from modelyard.governance.runtime import Governance
from modelyard.in_order import InOrder
from modelyard.logging import SETTINGS
from modelyard.modelfiles.load_request import load_files, load_override
from modelyard.protocol.shared_memory import SystemSharedMemory, place_outputs
from modelyard.protocol.status import grpc_status_name
from modelyard.protocol.v2_grpc import decode_infer_request, encode_infer_response, parameter_value
from modelyard.refusal_log import REFUSALS
from modelyard.tasks import cancel_and_wait
from modelyard.tracing import RequestTrace, Tracing, unknown_model
from modelyard.types import InferRequest, InferResponse

log = structlog.get_logger("modelyard.grpc")

# Triton's verbose lines of its gRPC infer handlers, which its QA suite counts: each
# ModelInfer call gets a number when it comes; Triton's two ModelInfer handlers each await
# a call from the start ("New request handler"), and take up awaiting the next once one
# is read
_CALL_NUMBERS = itertools.count(1)
INFER_HANDLERS = 2


def _log_awaiting_call() -> int:
    number = next(_CALL_NUMBERS)
    if SETTINGS.verbose:  # on every call's path: no event built unless it is written
        log.debug(
            "grpc_awaiting_call", triton=f"New request handler for ModelInferHandler, {number}"
        )
    return number


_STREAM_CALL_NUMBERS = itertools.count(1)


def _log_cancelled(handler: str, number: int | None = None, step: str = "ISSUED") -> None:
    """A call its client cancelled while it was in the server (``step``: ISSUED, its
    request handed on; START, not yet read), in the words of Triton's verbose line."""
    number = next(_STREAM_CALL_NUMBERS) if number is None else number
    log.debug(
        "grpc_call_cancelled",
        triton=f"Cancellation notification received for {handler}, rpc_ok=1, "
        f"context {number}, {number} step {step}",
    )


HEALTH_SYNC_SECS = 1.0
SHUTDOWN_GRACE_SECS = 5.0
# a stream's requests read and not yet answered: past these it reads no more until one
# is, and HTTP/2's flow control holds the caller back
MAX_STREAM_IN_FLIGHT = 4_096
MAX_STREAM_IN_FLIGHT_BYTES = 256 << 20

# Triton's test hook: each RPC but inference is answered this many seconds after it ran
# (its QA suite sets it to see clients' deadlines pass; a caller that gives up meanwhile
# leaves what the call did done)
RESPONSE_DELAY_ENV = "TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC"
MAX_RESPONSE_DELAY_SECS = 600
# Triton's test hook: a ModelInfer call is read this many milliseconds after it came (its
# QA suite cancels calls meanwhile, before their requests reach a model)
PROCESS_DELAY_ENV = "TRITONSERVER_DELAY_GRPC_PROCESS"

_RETRYABLE = {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE}
_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

Reply = TypeVar("Reply")
Context: TypeAlias = grpc.aio.ServicerContext


def status_code(error: ModelyardError) -> grpc.StatusCode:
    return grpc.StatusCode[grpc_status_name(error.code)]


def trailing_metadata(error: ModelyardError) -> tuple[tuple[str, str], ...]:
    relayed = error.reply_headers  # an instance's, on an error the gateway forwarded
    if error.retry_after is None or status_code(error) not in _RETRYABLE:
        return relayed
    if any(key == "retry-after" for key, _ in relayed):
        return relayed
    return (("retry-after", retry_after_header(error.retry_after)), *relayed)


# the governed Call of the RPC being answered (grpc contexts take no attributes)
_CURRENT_CALL: ContextVar[Call] = ContextVar("modelyard_call")

_INTERFACES = {
    "ServerLive": "health",
    "ServerReady": "health",
    "ModelReady": "health",
    "ServerMetadata": "health",
    "ModelMetadata": "metadata",
    "ModelConfig": "metadata",
    "ModelStatistics": "metadata",
    "ModelInfer": "infer",
    "RepositoryIndex": "admin",
    "RepositoryModelLoad": "admin",
    "RepositoryModelUnload": "admin",
    "LogSettings": "admin",
}


# admin RPCs that act for the whole server, whatever names their request carries (a region)
_SERVER_WIDE = frozenset(
    f"{kind}SharedMemory{action}"
    for kind in ("System", "Cuda")
    for action in ("Status", "Register", "Unregister")
)


def governed_call(governance: Governance, rpc: str, request: Any, context: Context) -> Call:
    """What governance needs of an RPC: interface, model, credentials."""
    if rpc in _SERVER_WIDE:  # of no one model: an admin of every model
        model: str | None = "*"
    else:
        model = getattr(request, "model_name", "") or getattr(request, "name", "") or None
    version = getattr(request, "model_version", "") or getattr(request, "version", "") or None
    call = governance.call(_INTERFACES.get(rpc, "admin"), model, version)
    for key, value in context.invocation_metadata() or ():
        if key in CALL_HEADERS:
            call.take_header(key, str(value))
    return call


def governance_metadata(
    governance: Governance | None, call: Call | None, error: ModelyardError
) -> tuple[tuple[str, str], ...]:
    if governance is None or call is None or not isinstance(error, GovernanceError):
        return ()
    extra = [(k.lower(), v) for k, v in governance.rate_limit_headers(call, error).items()]
    if call.request_id:
        extra.append(("x-request-id", call.request_id))
    return tuple(extra)


async def _abort(
    context: Context, rpc: str, error: ModelyardError, extra: tuple[tuple[str, str], ...] = ()
) -> None:
    if not isinstance(error, GovernanceError):  # the chain logs its own rejections
        REFUSALS.warning(log, "rpc_failed", rpc=rpc, **error.fields())
    await context.abort(status_code(error), error.line(), trailing_metadata(error) + extra)


def response_delay_secs() -> int:
    """``TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC`` (whole seconds, as Triton's atoi
    reads it: what does not parse is 0), within MAX_RESPONSE_DELAY_SECS."""
    raw = os.environ.get(RESPONSE_DELAY_ENV, "").strip()
    try:
        return min(max(int(raw), 0), MAX_RESPONSE_DELAY_SECS)
    except ValueError:
        return 0


def process_delay_secs() -> float:
    """``TRITONSERVER_DELAY_GRPC_PROCESS`` in seconds (milliseconds in the variable, as
    Triton's atoi reads them: what does not parse is 0), within MAX_RESPONSE_DELAY_SECS."""
    raw = os.environ.get(PROCESS_DELAY_ENV, "").strip()
    try:
        return min(max(int(raw), 0) / 1000, MAX_RESPONSE_DELAY_SECS)
    except ValueError:
        return 0.0


def _rpc(
    method: Callable[[Any, Any, Context], Awaitable[Reply]],
) -> Callable[[Any, Any, Context], Awaitable[Reply]]:
    """Answer a unary RPC's ModelyardError (or crash) with its status and error line."""
    name = method.__name__

    category = GRPC_METHODS.get(name, "")

    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: Context) -> Reply:
        governance: Governance | None = self.governance
        call: Call | None = None
        delay = 0 if name == "ModelInfer" else self.response_delay_secs
        try:
            if self.restrictions is not None:
                _check_restricted(self.restrictions, category, context)
            if governance is None:
                reply = await method(self, request, context)
            else:
                call = governed_call(governance, name, request, context)
                _CURRENT_CALL.set(call)
                if name == "ModelInfer":  # governs itself, to answer with a fallback
                    return await method(self, request, context)
                reply = await governance.guard(call, lambda: method(self, request, context))
            if delay:
                await asyncio.sleep(delay)
            return reply
        except grpc.aio.AbortError:
            raise
        except ModelyardError as error:
            if delay:
                await asyncio.sleep(delay)
            await _abort(context, name, error, governance_metadata(governance, call, error))
        except Exception as exc:
            log.exception("rpc_crashed", rpc=name)
            await _abort(context, name, internal_error(exc))
        raise AssertionError("context.abort returned")  # pragma: no cover

    return wrapper


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # raised to the caller, or (gone) logged where it failed


async def _outlasting_caller(work: Awaitable[Reply]) -> Reply:
    """``work`` run to its end even where the caller gives up meanwhile (its deadline
    passes, it cancels): a repository load or unload is done or not done, never left
    part way, as in Triton."""
    task = asyncio.ensure_future(work)
    task.add_done_callback(_retrieve)
    return await asyncio.shield(task)


def _check_restricted(restrictions: Restrictions, category: str, context: Context) -> None:
    """Refuse a call tritonserver's --grpc-restricted-protocol restricts, lacking its key."""
    if category not in restrictions.by_category:
        return
    metadata = {
        key: value if isinstance(value, str) else value.decode("latin-1")
        for key, value in context.invocation_metadata() or ()
    }
    refusal = restrictions.refusal(category, metadata)
    if refusal is not None:
        raise refusal


def _trace_context(context: Context) -> dict[str, str]:
    """The W3C trace context an RPC came with (traceparent, tracestate metadata)."""
    return {
        key: str(value)
        for key, value in context.invocation_metadata() or ()
        if key in ("traceparent", "tracestate") and len(str(value)) <= 512 and str(value).isascii()
    }


def _sequence_key(message: pb.ModelInferRequest) -> tuple[str, Any] | None:
    """The model and sequence id of a streamed request, or None when it names no sequence."""
    if "sequence_id" not in message.parameters:
        return None
    parameter = message.parameters["sequence_id"]
    value = parameter_value(parameter)
    if value in (0, "") or isinstance(value, bool):
        return None
    return (message.model_name, value)


class _Before(NamedTuple):
    """The request before this one of its sequence on a stream."""

    task: asyncio.Task[None]
    queued: asyncio.Event  # set once it is in its model's queue

    async def wait(self) -> None:
        if self.task.done() or self.queued.is_set():
            return
        waiter = asyncio.ensure_future(self.queued.wait())
        try:
            await asyncio.wait([self.task, waiter], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()


def _forget_sequence_task(
    last: dict[tuple[str, Any], _Before],
    key: tuple[str, Any],
    task: asyncio.Task[None],
) -> None:
    before = last.get(key)
    if before is not None and before.task is task:
        del last[key]


# a stream's answer: a response (its error in it), or an error that ends the stream
# (triton_grpc_error mode)
_Answer: TypeAlias = pb.ModelStreamInferResponse | ModelyardError
_Send: TypeAlias = Callable[[_Answer, bool], None]

# the header that starts a stream in Triton's gRPC error mode
GRPC_ERROR_HEADER = "triton_grpc_error"


def _grpc_error_mode(context: Context) -> bool:
    """Whether the stream started with ``triton_grpc_error: true``: its first error ends it,
    with that error's status, where otherwise it is written onto the stream."""
    return any(
        key == GRPC_ERROR_HEADER and value == "true"
        for key, value in context.invocation_metadata() or ()
    )


class _InFlight:
    """A stream's requests read and not yet answered, bounded: past MAX_STREAM_IN_FLIGHT of
    them or MAX_STREAM_IN_FLIGHT_BYTES of their messages the stream waits before it reads
    the next (one message alone always passes). An answer held for its turn still counts:
    a request that never ends would otherwise let every later answer pile up behind it."""

    def __init__(self) -> None:
        self.count = 0
        self.bytes = 0
        self._room = asyncio.Event()

    async def enter(self, size: int) -> None:
        while self.count and (
            self.count >= MAX_STREAM_IN_FLIGHT or self.bytes + size > MAX_STREAM_IN_FLIGHT_BYTES
        ):
            self._room.clear()
            await self._room.wait()
        self.count += 1
        self.bytes += size

    def leave(self, size: int) -> None:
        self.count -= 1
        self.bytes -= size
        self._room.set()


def _call(then: Callable[[], None], _task: asyncio.Task[None]) -> None:
    then()


class _InTurn:
    """Where one streamed request's answers go when its model answers once: onto the stream
    in the order the requests were read, as Triton writes them (its answer waits for those
    of the requests read before it). ``done`` runs once its last answer is written."""

    def __init__(
        self,
        order: InOrder,
        write: Callable[[_Answer], None],
        done: Callable[[], None],
    ):
        self.order = order
        self.ticket = order.ticket()
        self.write = write
        self.done = done
        self.ended = False

    def __call__(self, reply: _Answer, final: bool) -> None:
        if self.ended:
            return
        self.ended = final
        self.order.release(self.ticket, functools.partial(self._write, reply, final), final)

    def _write(self, reply: _Answer, final: bool) -> None:
        self.write(reply)
        if final:
            self.done()

    def end(self, _task: asyncio.Task[None] | None = None) -> None:
        """The request is done: the next one's turn comes, whatever it sent."""
        if not self.ended:
            self.ended = True
            self.order.release(self.ticket, self.done)


class _Unwritten(asyncio.Queue[_Answer | None]):
    """A stream's answers waiting to be written, bounded as a decoupled model's stream is:
    past MAX_UNREAD of them or MAX_UNREAD_BYTES of outputs the stream's requests are
    cancelled (a caller that stops reading would otherwise hold every answer), and the
    stream ends, after what it had not written, with the line saying why."""

    def __init__(self) -> None:
        super().__init__()
        self.unwritten_bytes = 0
        self.reader: asyncio.Task[None] | None = None
        self.over = False

    def put(self, reply: _Answer) -> None:  # type: ignore[override]
        if self.over:
            return
        if isinstance(reply, ModelyardError):  # the stream ends with it
            self.over = True
            self.put_nowait(reply)
            self.put_nowait(None)
            return
        size = sum(map(len, reply.infer_response.raw_output_contents))
        if self.qsize() >= MAX_UNREAD or self.unwritten_bytes + size > MAX_UNREAD_BYTES:
            self.over = True
            if self.reader is not None:
                self.reader.cancel()
            model = reply.infer_response.model_name
            reply = pb.ModelStreamInferResponse(error_message=unread_responses(model).line())
            size = 0
        self.unwritten_bytes += size
        self.put_nowait(reply)
        if self.over:
            self.put_nowait(None)

    async def get(self) -> _Answer | None:
        reply = await super().get()
        if isinstance(reply, pb.ModelStreamInferResponse):
            self.unwritten_bytes -= sum(map(len, reply.infer_response.raw_output_contents))
        return reply


def _wants_empty_final(message: pb.ModelInferRequest) -> bool:
    """Whether a streamed request asked for an empty response to carry a lone FINAL flag."""
    if "triton_enable_empty_final_response" not in message.parameters:
        return False
    return bool(message.parameters["triton_enable_empty_final_response"].bool_param)


def _stream_reply(response: pb.ModelInferResponse, final: bool) -> pb.ModelStreamInferResponse:
    response.parameters["triton_final_response"].bool_param = final
    return pb.ModelStreamInferResponse(infer_response=response)


def _stream_error(
    message: pb.ModelInferRequest, line: str, final: bool
) -> pb.ModelStreamInferResponse:
    reply = _stream_reply(
        pb.ModelInferResponse(
            model_name=message.model_name, model_version=message.model_version, id=message.id
        ),
        final,
    )
    reply.error_message = line
    return reply


def _deadline(dataplane: DataPlane, context: Context) -> float | None:
    remaining = context.time_remaining()
    return None if remaining is None else dataplane.clock.monotonic() + remaining


@dataclass(slots=True, eq=False)
class _GrpcSent:
    """A ModelInfer call as it arrived (``GrpcInferWire``)."""

    message: pb.ModelInferRequest
    context: Context
    deadline: float | None
    arrived_ns: int
    trace: RequestTrace | None
    context_headers: dict[str, str]  # its W3C trace context, where it travels on
    answered: asyncio.Future[Any]  # what the RPC awaits: the encoded response or the error


class GrpcInferWire:
    """The gRPC protocol's part of ModelInfer's pipeline (``infer_pipeline.Wire``): no lanes
    and no tickets, so a governed call has the chain run around it (its call is the one the
    RPC wrapper made from its metadata); the answer is the encoded response, or the error
    the RPC wrapper aborts with."""

    def __init__(self, service: InferenceService) -> None:
        self.service = service

    @staticmethod
    def path(sent: _GrpcSent) -> str:
        return "ModelInfer"

    def reply(self, sent: _GrpcSent, answer: Any) -> None:
        if not sent.answered.done():
            sent.answered.set_result(answer)
        elif sent.trace is not None and sent.answered.cancelled():
            # the caller cancelled the call: its trace ends with what ran, unanswered
            version = getattr(answer, "model_version", "") or sent.message.model_version
            self.service.tracing.finish(sent.trace, version, time.monotonic_ns(),
                                        cancelled=True)  # fmt: skip

    @staticmethod
    def lane(sent: _GrpcSent, stamp: int) -> None:
        return None

    @staticmethod
    def ticket(sent: _GrpcSent) -> None:
        return None

    @staticmethod
    def call(sent: _GrpcSent) -> Call:
        return _CURRENT_CALL.get()

    @staticmethod
    def submit_on_lane(lane: Any, sent: _GrpcSent) -> asyncio.Future[dict[str, Any]]:
        raise AssertionError("gRPC keeps no lanes")  # lane() finds none

    @staticmethod
    def lane_answer(lane: Any, results: dict[str, Any], sent: _GrpcSent) -> Any:
        raise AssertionError("gRPC keeps no lanes")

    def decode(self, sent: _GrpcSent) -> tuple[InferRequest, None]:
        trace = sent.trace
        if trace is not None:
            trace.admitted()
        request = self.service._decode(sent.message, sent.context)
        request.deadline = sent.deadline
        request.trace = trace
        if trace is not None:
            trace.decoded(request)
        request.arrived_ns = sent.arrived_ns
        if self.service.dataplane.forwards_requests:
            request.forward_headers = (
                self.service.tracing.propagation_headers(trace)
                if trace is not None
                else sent.context_headers or None
            )
        return request, None

    def answer(
        self,
        target: InferLane,
        request: InferRequest,
        layout: None,
        sent: _GrpcSent,
        results: dict[str, Any],
        stamp: int,
    ) -> Any:
        return self.response_answer(target.response(request, results), request, sent)

    @staticmethod
    def response_answer(
        response: InferResponse, request: InferRequest | None, sent: _GrpcSent
    ) -> Any:
        if sent.trace is not None:
            sent.trace.answered(response)
        if request is not None:
            place_outputs(request, response)
        return encode_infer_response(response)

    @staticmethod
    def error_answer(error: ModelyardError, sent: _GrpcSent, call: Call | None) -> Any:
        if isinstance(error, DecoupledRefusal):
            error = error.at("ModelInfer RPC")
        if sent.trace is not None:
            sent.trace.error = error.line()
        return error


class InferenceService(service_pb2_grpc.GRPCInferenceServiceServicer):
    def __init__(
        self,
        dataplane: DataPlane,
        governance: Governance | None = None,
        shared_memory: SystemSharedMemory | None = None,
        tracing: Tracing | None = None,
        header_forwarding: HeaderForwarding | None = None,
        restrictions: Restrictions | None = None,
    ) -> None:
        self.dataplane = dataplane
        self.governance = governance
        self.shared_memory = shared_memory or SystemSharedMemory(allowed=False)
        self.tracing = tracing or Tracing()
        self.header_forwarding = header_forwarding
        self.restrictions = restrictions  # tritonserver's --grpc-restricted-protocol
        self.response_delay_secs = response_delay_secs()  # Triton's test hook, 0 unless set
        self.process_delay_secs = process_delay_secs()  # Triton's test hook, 0 unless set
        # of infer responses (tritonserver's --grpc-infer-response-compression-level)
        self.compression: grpc.Compression | None = None
        self.pipeline = InferPipeline(GrpcInferWire(self), dataplane, governance)

    def _decode(self, message: pb.ModelInferRequest, context: Context) -> InferRequest:
        """The request, with the metadata ``--grpc-header-forward-pattern`` makes parameters."""
        try:
            request = decode_infer_request(message, self.shared_memory)
        except ProtocolError as error:  # Triton finds the model before it reads the inputs
            name, version = message.model_name, message.model_version or None
            raise unknown_model_refusal(self.dataplane, name, version) or error from None
        if self.header_forwarding is not None:
            forwarded = self.header_forwarding.parameters(
                (key, value if isinstance(value, str) else value.decode("latin-1"))
                for key, value in context.invocation_metadata() or ()
            )
            if forwarded:
                request.parameters = {**request.parameters, **forwarded}
        return request

    # ---- health and metadata -------------------------------------------

    @_rpc
    async def ServerLive(self, request: pb.ServerLiveRequest, context: Context) -> Any:
        return pb.ServerLiveResponse(live=self.dataplane.server_live())

    @_rpc
    async def ServerReady(self, request: pb.ServerReadyRequest, context: Context) -> Any:
        return pb.ServerReadyResponse(ready=self.dataplane.server_ready())

    @_rpc
    async def ModelReady(self, request: pb.ModelReadyRequest, context: Context) -> Any:
        ready = self.dataplane.model_ready(request.name, request.version or None)
        return pb.ModelReadyResponse(ready=ready)

    @_rpc
    async def ServerMetadata(self, request: pb.ServerMetadataRequest, context: Context) -> Any:
        doc = self.dataplane.server_metadata()
        return pb.ServerMetadataResponse(
            name=doc["name"], version=doc["version"], extensions=doc["extensions"]
        )

    @_rpc
    async def ModelMetadata(self, request: pb.ModelMetadataRequest, context: Context) -> Any:
        doc = self.dataplane.model_metadata(request.name, request.version or None)
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=doc["name"],
            versions=doc["versions"],
            platform=doc["platform"],
            inputs=[tensor(**t) for t in doc["inputs"]],
            outputs=[tensor(**t) for t in doc["outputs"]],
        )

    @_rpc
    async def ModelConfig(self, request: pb.ModelConfigRequest, context: Context) -> Any:
        response = pb.ModelConfigResponse()
        doc = self.dataplane.model_config(request.name, request.version or None)
        json_format.ParseDict(doc, response.config)
        return response

    @_rpc
    async def ModelStatistics(self, request: pb.ModelStatisticsRequest, context: Context) -> Any:
        doc = self.dataplane.statistics(request.name or None, request.version or None)
        visible = self._visible()
        if visible is not None:
            doc["model_stats"] = [s for s in doc["model_stats"] if visible(s["name"])]
        return json_format.ParseDict(doc, pb.ModelStatisticsResponse(), ignore_unknown_fields=True)

    def _visible(self) -> Callable[[str], bool] | None:
        """The models the governed RPC being answered may list; None: all."""
        return None if self.governance is None else self.governance.visible(_CURRENT_CALL.get())

    # ---- inference ------------------------------------------------------

    @_rpc
    async def ModelInfer(self, request: pb.ModelInferRequest, context: Context) -> Any:
        arrived_ns = time.monotonic_ns()
        number = _log_awaiting_call() - INFER_HANDLERS  # this call's; a handler awaits the next
        if self.process_delay_secs:
            await self._read_later(number)
        trace = None
        context_headers = (
            _trace_context(context)
            if self.tracing.on or self.dataplane.forwards_requests
            else {}
        )
        if self.tracing.on:
            trace = self.tracing.begin(
                request.model_name, request.model_version or None, request.id or None, "grpc",
                context_headers, arrived_ns,
            )  # fmt: skip
        answered: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        sent = _GrpcSent(
            request, context, _deadline(self.dataplane, context), arrived_ns, trace,
            context_headers, answered,
        )  # fmt: skip
        # a call the client cancels cancels this task, and the future it awaits
        CALLER_GONE.set(answered.cancelled)
        self.pipeline.start(sent)
        try:
            answer = await answered
        except asyncio.CancelledError:
            _log_cancelled("ModelInferHandler", number)
            raise
        if isinstance(answer, ModelyardError):
            if trace is not None:
                self.tracing.finish(trace, request.model_version, time.monotonic_ns())
            raise answer
        if self.compression is not None:
            context.set_compression(self.compression)
        if trace is not None:
            self.tracing.finish(trace, answer.model_version, time.monotonic_ns())
        return answer

    async def _read_later(self, number: int) -> None:
        """Triton's TRITONSERVER_DELAY_GRPC_PROCESS: the call is read once the delay has
        passed. A call cancelled meanwhile is dropped unread; as in Triton, the log says so
        when the cancellation comes and again when the delayed read finds it (step START)."""
        try:
            await asyncio.sleep(self.process_delay_secs)
        except asyncio.CancelledError:
            _log_cancelled("ModelInferHandler", number, "START")
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(self.process_delay_secs)
            _log_cancelled("ModelInferHandler", number, "START")
            raise

    async def ModelStreamInfer(
        self, request_iterator: AsyncIterator[pb.ModelInferRequest], context: Context
    ) -> AsyncIterator[pb.ModelStreamInferResponse]:
        """Requests on one stream run concurrently. As Triton's, the answers of requests to
        models that answer once are written in the order the requests were read; a
        decoupled model's many come as it sends them. Each says whether it is its request's
        last (``triton_final_response``); a FINAL flag sent alone becomes an empty response
        only for a request that set ``triton_enable_empty_final_response``."""
        if self.restrictions is not None:  # refused at once: the stream ends with the line
            try:
                _check_restricted(self.restrictions, "inference", context)
            except ModelyardError as error:
                await _abort(context, "ModelStreamInfer", error)
        answers = _Unwritten()
        deadline = _deadline(self.dataplane, context)
        error_mode = _grpc_error_mode(context)

        def write_now(reply: _Answer, final: bool) -> None:
            answers.put(reply)

        async def read() -> None:
            tasks: set[asyncio.Task[None]] = set()
            in_turn = InOrder()  # the answers of requests to models that answer once
            # a sequence's requests reach its model in the order they came: each waits
            # until the one before it is queued there, or answered (a gateway forwards them
            # as separate calls, and says nothing of queues)
            last_of_sequence: dict[tuple[str, Any], _Before] = {}
            in_flight = _InFlight()
            try:
                async for message in request_iterator:
                    size = message.ByteSize()
                    await in_flight.enter(size)
                    done = functools.partial(in_flight.leave, size)
                    key = _sequence_key(message)
                    before = None if key is None else last_of_sequence.get(key)
                    queued = asyncio.Event() if key is not None else None
                    send: _Send = write_now
                    if self._answers_once(message):
                        send = _InTurn(in_turn, answers.put, done)
                    task = asyncio.create_task(
                        self._stream_one(
                            message, deadline, context, send, before, queued, error_mode
                        )
                    )
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    if isinstance(send, _InTurn):
                        task.add_done_callback(send.end)
                    else:  # a decoupled model's answers are written as they come
                        task.add_done_callback(functools.partial(_call, done))
                    if key is not None:
                        assert queued is not None
                        last_of_sequence[key] = _Before(task, queued)
                        task.add_done_callback(
                            functools.partial(_forget_sequence_task, last_of_sequence, key)
                        )
                if tasks:
                    await asyncio.gather(*tasks)
            finally:
                for task in tasks:
                    task.cancel()
                answers.put_nowait(None)

        reader = asyncio.create_task(read())
        answers.reader = reader
        try:
            while (item := await answers.get()) is not None:
                if isinstance(item, ModelyardError):  # triton_grpc_error: the stream ends
                    await context.abort(status_code(item), item.line(), trailing_metadata(item))
                yield item
            if not answers.over:  # past the bound its requests were cancelled
                await reader  # re-raises a failed read
        finally:
            reader.cancel()

    def _answers_once(self, message: pb.ModelInferRequest) -> bool:
        """Whether a streamed request's model answers once (is not decoupled); one it cannot
        name yet counts so, as Triton counts it."""
        try:
            config = self.dataplane.model_config(message.model_name, message.model_version or None)
        except ModelyardError:
            return True
        return not config.get("model_transaction_policy", {}).get("decoupled", False)

    async def _stream_one(
        self,
        message: pb.ModelInferRequest,
        deadline: float | None,
        context: Context,
        send: _Send,
        before: _Before | None = None,
        queued: asyncio.Event | None = None,
        error_mode: bool = False,
    ) -> None:
        # a stream the client cancels cancels this task: its model's is_cancelled() says so
        gone = asyncio.Event()
        CALLER_GONE.set(gone.is_set)
        try:
            await self._stream_answer(message, deadline, context, send, before, queued,
                                      error_mode)  # fmt: skip
        except asyncio.CancelledError:
            gone.set()
            _log_cancelled("ModelStreamInferHandler")
            raise

    async def _stream_answer(
        self,
        message: pb.ModelInferRequest,
        deadline: float | None,
        context: Context,
        send: _Send,
        before: _Before | None,
        queued: asyncio.Event | None,
        error_mode: bool,
    ) -> None:
        if before is not None:
            await before.wait()
        decoded: list[InferRequest] = []
        empty_final = _wants_empty_final(message)
        trace = None
        if self.tracing.on:  # each request of a stream traced as a ModelInfer call
            trace = self.tracing.begin(
                message.model_name, message.model_version or None, message.id or None, "grpc",
                _trace_context(context), time.monotonic_ns(),
            )  # fmt: skip

        def decode() -> InferRequest:
            request = self._decode(message, context)
            request.deadline = deadline
            if queued is not None:
                request.queued = queued.set
            if trace is not None:
                trace.admitted()
                request.trace = trace
                trace.decoded(request)
            decoded.append(request)
            return request

        def put(item: StreamResponse) -> None:
            if item.error is not None:
                error = item.error
                if not isinstance(error, ModelyardError):
                    error = internal_error(error)
                REFUSALS.warning(log, "rpc_failed", rpc="ModelStreamInfer", **error.fields())
                if error_mode:
                    send(error, True)
                    return
                send(_stream_error(message, error.line(), item.final), item.final)
                return
            if item.response is None:
                if item.final and empty_final:
                    send(_stream_reply(pb.ModelInferResponse(
                        model_name=message.model_name, model_version=message.model_version,
                        id=message.id,
                    ), True), True)  # fmt: skip
                return
            if decoded:
                place_outputs(decoded[0], item.response)
            if trace is not None and item.final:
                trace.answered(item.response)
            send(_stream_reply(encode_infer_response(item.response), item.final), item.final)

        try:
            if self.governance is None:
                async for item in self.dataplane.infer_stream(decode()):
                    put(item)
            else:
                call = governed_call(self.governance, "ModelInfer", message, context)
                await self.governance.stream(call, decode, self.dataplane, put)
            if trace is not None:
                version = trace.version or message.model_version
                self.tracing.finish(trace, version, time.monotonic_ns())
            return
        except ModelyardError as error:
            failed = error
        except Exception as exc:
            log.exception("rpc_crashed", rpc="ModelStreamInfer")
            failed = internal_error(exc)
        REFUSALS.warning(log, "rpc_failed", rpc="ModelStreamInfer", **failed.fields())
        if trace is not None:
            trace.error = failed.line()
            self.tracing.finish(trace, message.model_version, time.monotonic_ns())
        send(failed if error_mode else _stream_error(message, failed.line(), True), True)

    @_rpc
    async def LogSettings(self, request: pb.LogSettingsRequest, context: Context) -> Any:
        changes = {name: parameter_value(value) for name, value in request.settings.items()}
        settings = SETTINGS.update(changes) if changes else SETTINGS.as_triton()
        response = pb.LogSettingsResponse()
        for name, value in settings.items():
            entry = response.settings[name]
            if isinstance(value, bool):
                entry.bool_param = value
            elif isinstance(value, int):
                entry.uint32_param = value
            else:
                entry.string_param = value
        return response

    @_rpc
    async def RepositoryIndex(self, request: pb.RepositoryIndexRequest, context: Context) -> Any:
        rows = self.dataplane.manager.index(ready_only=request.ready)
        visible = self._visible()
        if visible is not None:
            rows = [row for row in rows if visible(row["name"])]
        return json_format.ParseDict(
            {"models": rows}, pb.RepositoryIndexResponse(), ignore_unknown_fields=True
        )

    @_rpc
    async def RepositoryModelLoad(
        self, request: pb.RepositoryModelLoadRequest, context: Context
    ) -> Any:
        params = {key: parameter_value(value) for key, value in request.parameters.items()}
        override = load_override(request.model_name, params)
        files = load_files(request.model_name, params)
        authorize = None
        if self.governance is not None:
            authorize = self.governance.authorize_load(_CURRENT_CALL.get())
        await _outlasting_caller(
            self.dataplane.manager.load(request.model_name, override, authorize, files)
        )
        return pb.RepositoryModelLoadResponse()

    @_rpc
    async def RepositoryModelUnload(
        self, request: pb.RepositoryModelUnloadRequest, context: Context
    ) -> Any:
        params = {key: parameter_value(value) for key, value in request.parameters.items()}
        await _outlasting_caller(
            self.dataplane.manager.unload(
                request.model_name, params.get("unload_dependents") is True
            )
        )
        return pb.RepositoryModelUnloadResponse()

    # ---- shared memory ----------------------------------------------------

    @_rpc
    async def SystemSharedMemoryStatus(
        self, request: pb.SystemSharedMemoryStatusRequest, context: Context
    ) -> Any:
        return self._region_status(pb.SystemSharedMemoryStatusResponse, request.name, "system")

    @_rpc
    async def SystemSharedMemoryRegister(
        self, request: pb.SystemSharedMemoryRegisterRequest, context: Context
    ) -> Any:
        self.shared_memory.register(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    @_rpc
    async def SystemSharedMemoryUnregister(
        self, request: pb.SystemSharedMemoryUnregisterRequest, context: Context
    ) -> Any:
        self.shared_memory.unregister(request.name or None)
        return pb.SystemSharedMemoryUnregisterResponse()

    @_rpc
    async def CudaSharedMemoryStatus(
        self, request: pb.CudaSharedMemoryStatusRequest, context: Context
    ) -> Any:
        return self._region_status(pb.CudaSharedMemoryStatusResponse, request.name, "cuda")

    @_rpc
    async def CudaSharedMemoryRegister(
        self, request: pb.CudaSharedMemoryRegisterRequest, context: Context
    ) -> Any:
        self.shared_memory.register_cuda(
            request.name, request.raw_handle, request.device_id, request.byte_size
        )
        return pb.CudaSharedMemoryRegisterResponse()

    @_rpc
    async def CudaSharedMemoryUnregister(
        self, request: pb.CudaSharedMemoryUnregisterRequest, context: Context
    ) -> Any:
        self.shared_memory.unregister(request.name or None, "cuda")
        return pb.CudaSharedMemoryUnregisterResponse()

    def _region_status(self, response_type: Any, name: str, kind: str) -> Any:
        """The regions of ``kind`` (all, or the one ``name`` names) as ``response_type``."""
        response = response_type()
        for region in self.shared_memory.status(name or None, kind):
            response.regions[region["name"]].CopyFrom(response_type.RegionStatus(**region))
        return response

    @_rpc
    async def TraceSetting(self, request: pb.TraceSettingRequest, context: Context) -> Any:
        changes = {name: (list(value.value) or None) for name, value in request.settings.items()}
        model = request.model_name or None
        if model and not self.dataplane.model_ready(model, None):
            raise unknown_model(model)
        settings = self.tracing.update(changes, model) if changes else self.tracing.settings(model)
        response = pb.TraceSettingResponse()
        for name, value in settings.items():
            response.settings[name].value.extend(value if isinstance(value, list) else [value])
        return response


class HealthService(health_aio.HealthServicer):
    """grpc.health.v1 for "" (server readiness) and each model name (model readiness).

    Check reads the dataplane on every call; Watch is the library's, fed by ``sync``
    when it starts and every HEALTH_SYNC_SECS after.
    """

    def __init__(self, dataplane: DataPlane) -> None:
        super().__init__()
        self.dataplane = dataplane
        self._published: dict[str, int] = {}

    def status(self, service: str) -> int | None:
        dp = self.dataplane
        if not service:
            return _SERVING if dp.server_ready() else _NOT_SERVING
        if dp.model_ready(service, None):
            return _SERVING
        known = any(row["name"] == service for row in dp.manager.index())
        return _NOT_SERVING if known else None

    def statuses(self) -> dict[str, int]:
        dp = self.dataplane
        names = {row["name"] for row in dp.manager.index()}
        statuses = {
            name: _SERVING if dp.model_ready(name, None) else _NOT_SERVING for name in names
        }
        statuses[""] = _SERVING if dp.server_ready() else _NOT_SERVING
        return statuses

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: Context
    ) -> health_pb2.HealthCheckResponse:
        status = self.status(request.service)
        if status is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"unknown service '{shown(request.service)}'"
            )
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Context) -> None:
        await self.sync()
        await super().Watch(request, context)

    async def sync(self) -> None:
        current = self.statuses()
        for service in self._published.keys() - current.keys():
            await self.set(service, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
        for service, status in current.items():
            if self._published.get(service) != status:
                await self.set(service, status)
        self._published = current

    async def sync_forever(self, interval: float = HEALTH_SYNC_SECS) -> None:
        while True:
            try:
                await self.sync()
            except Exception:  # a failed sync must not end health reporting
                log.exception("health_sync_failed")
            await asyncio.sleep(interval)


@dataclass(frozen=True)
class GrpcTls:
    """The server's certificate chain and key (PEM); with root certificates, a client must
    present a certificate they signed (tritonserver's --grpc-use-ssl-mutual)."""

    certificate: bytes
    key: bytes
    root_certificates: bytes | None = None


# tritonserver's gRPC connection flags and the grpc core option each sets
CONNECTION_OPTIONS = {
    "keepalive_time_ms": "grpc.keepalive_time_ms",
    "keepalive_timeout_ms": "grpc.keepalive_timeout_ms",
    "keepalive_permit_without_calls": "grpc.keepalive_permit_without_calls",
    "http2_max_pings_without_data": "grpc.http2.max_pings_without_data",
    "http2_min_recv_ping_interval_without_data_ms": "grpc.http2.min_ping_interval_without_data_ms",
    "http2_max_ping_strikes": "grpc.http2.max_ping_strikes",
    "max_connection_age_ms": "grpc.max_connection_age_ms",
    "max_connection_age_grace_ms": "grpc.max_connection_age_grace_ms",
    "reuse_port": "grpc.so_reuseport",
}


def server_options(
    max_message_bytes: int, keepalive_time_ms: int | None = None, **connection: int | None
) -> list[tuple[str, int]]:
    """``keepalive_time_ms``: how often the server pings an idle client's connection
    (tritonserver's --grpc-keepalive-time); ``connection``: the other keys of
    CONNECTION_OPTIONS (tritonserver's --grpc-keepalive-*, --grpc-http2-*,
    --grpc-max-connection-age*, --reuse-grpc-port); None: modelyard's default."""
    defaults = {
        # clients that ping every few seconds, even between calls, keep their connection
        "grpc.keepalive_permit_without_calls": 1,
        "grpc.http2.min_ping_interval_without_data_ms": 5_000,
        # a port another server holds is an error, not a silent share
        "grpc.so_reuseport": 0,
    }
    chosen = {"keepalive_time_ms": keepalive_time_ms, **connection}
    for key, value in chosen.items():
        if value is not None:
            defaults[CONNECTION_OPTIONS[key]] = int(value)
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        *defaults.items(),
    ]


def _in_use(host: str, port: int) -> bool:
    """Whether another socket holds ``host:port`` (gRPC's bind error does not say)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


@dataclass
class GrpcServer:
    server: grpc.aio.Server
    port: int
    health: HealthService
    health_task: asyncio.Task[None]

    async def stop(self, grace: float = SHUTDOWN_GRACE_SECS) -> None:
        await cancel_and_wait(self.health_task)
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)


async def start_grpc_server(
    dataplane: DataPlane,
    host: str,
    port: int,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    governance: Governance | None = None,
    shared_memory: SystemSharedMemory | None = None,
    tracing: Tracing | None = None,
    tls: GrpcTls | None = None,
    header_forwarding: HeaderForwarding | None = None,
    keepalive_time_ms: int | None = None,
    restrictions: Restrictions | None = None,
    compression: grpc.Compression | None = None,
    **connection: int | None,
) -> GrpcServer:
    """Start serving on ``host:port`` (0: any free port) in the running event loop;
    ``tls``: serve over TLS (tritonserver's --grpc-use-ssl), None: in the clear;
    ``compression``: of infer responses (tritonserver's
    --grpc-infer-response-compression-level); ``connection``: see ``server_options``."""
    server = grpc.aio.server(
        options=server_options(max_message_bytes, keepalive_time_ms, **connection)
    )
    service = InferenceService(
        dataplane, governance, shared_memory, tracing, header_forwarding, restrictions
    )
    service.compression = compression
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(service, server)
    health = HealthService(dataplane)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        if tls is None:
            bound = server.add_insecure_port(address)
        else:
            credentials = grpc.ssl_server_credentials(
                [(tls.key, tls.certificate)],
                root_certificates=tls.root_certificates,
                require_client_auth=tls.root_certificates is not None,
            )
            bound = server.add_secure_port(address, credentials)
    except RuntimeError:
        why = "the port is in use or the address is not this machine's"
        raise ConfigError.of(
            error_rules.GRPC_PORT, listen_failure("GRPC", address, _in_use(host, port), why)
        ) from None
    await server.start()
    for _ in range(INFER_HANDLERS):
        _log_awaiting_call()
    await health.sync()
    task = asyncio.create_task(health.sync_forever())
    return GrpcServer(server, bound, health, task)
