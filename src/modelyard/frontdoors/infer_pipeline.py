"""One inference request's way through an instance, written once for every front door.

    parse (the wire's) → resolve (lane) → admit (governance) → submit (scheduler) → encode

A front door parses what arrived into its own ``sent`` object, which carries the way back
to its caller, and hands it to ``InferPipeline.start``; the pipeline answers it exactly
once, through its ``Wire`` (``Wire.reply``: an HTTP response, a gRPC message, or an
error). Nothing is awaited on the way unless something must be: an admitted request is
queued from the caller's own callback and answered from the callback that settles its
future; a guard that must await, a model that loads when first asked for, a data plane
that forwards the request and a call the chain must run around go on in a task.

What a request may skip is decided here, once:
- a *lane* the wire found for it (``Wire.lane``: its model's version, its inputs' layout
  and its encoded reply, kept from an earlier request of the same shape and valid while the
  generation it was stamped with holds) skips decoding, validation and routing;
- a *ticket* (``governance.chain``: the chain's decisions for the caller's credentials on
  a route) admits without building a ``Call``; where it cannot decide alone, the chain goes
  on from the guard it stopped at;
- a request the chain must run around (a guard that learns from outcomes, so no ticket; a
  sampled request, timed step by step) takes the general path, ``governance.infer``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import structlog

from modelyard.dataplane import DataPlane, InferLane
from modelyard.errors import GovernanceError, ModelyardError, NotResident, internal_error
from modelyard.generation import Generation
from modelyard.governance.chain import Ticket
from modelyard.governance.guard import Call
from modelyard.governance.runtime import Governance
from modelyard.refusal_log import REFUSALS
from modelyard.tracing import RequestTrace
from modelyard.types import InferRequest, InferResponse

log = structlog.get_logger("modelyard.infer")


class Arrived(Protocol):
    """What the pipeline reads of a wire's parsed request itself."""

    # a sampled request's trace: it is timed step by step, so the chain runs around it
    # whatever its ticket (the general path)
    @property
    def trace(self) -> RequestTrace | None: ...


Sent = TypeVar("Sent", bound=Arrived)
Answer = TypeVar("Answer")
SentIn = TypeVar("SentIn", bound=Arrived, contravariant=True)
Results = dict[str, Any]


class FastLane(Protocol):
    """A lane a wire keeps for requests of one shape: its ticket admits them."""

    ticket: Ticket | None


class Wire(Protocol[SentIn, Answer]):
    """What a front door's protocol adds to the pipeline: how a request of it is found,
    decoded and answered."""

    def path(self, sent: SentIn) -> str:
        """What the request's log lines name it by."""
        ...

    def reply(self, sent: SentIn, answer: Answer) -> None:
        """Give the caller its answer (the pipeline does so once per request)."""
        ...

    def lane(self, sent: SentIn, stamp: int) -> FastLane | None:
        """The lane kept for requests of its shape, still current at ``stamp``."""
        ...

    def ticket(self, sent: SentIn) -> Ticket | None:
        """The chain's ticket for its caller and route; None: the chain issues none."""
        ...

    def call(self, sent: SentIn) -> Call:
        """The call governance admits it as (its credentials, its request id)."""
        ...

    def submit_on_lane(self, lane: Any, sent: SentIn) -> asyncio.Future[Results]:
        """Queue it on its lane, undecoded."""
        ...

    def lane_answer(self, lane: Any, results: Results, sent: SentIn) -> Answer: ...

    def decode(self, sent: SentIn) -> tuple[InferRequest, Any]:
        """The request, and its layout where a lane may be kept for its shape (else None)."""
        ...

    def answer(
        self,
        target: InferLane,
        request: InferRequest,
        layout: Any,
        sent: SentIn,
        results: Results,
        stamp: int,
    ) -> Answer:
        """The answer to a routed request, from its raw outputs; it may keep a lane for the
        shape (stamped with the generation it was routed at)."""
        ...

    def response_answer(
        self, response: InferResponse, request: InferRequest | None, sent: SentIn
    ) -> Answer: ...

    def error_answer(self, error: ModelyardError, sent: SentIn, call: Call | None) -> Answer:
        """The answer to a refusal; ``call``: the one a guard refused, if one did."""
        ...


class InferPipeline(Generic[Sent, Answer]):
    """The pipeline of one front door (its wire) over a data plane and its governance."""

    def __init__(
        self,
        wire: Wire[Sent, Answer],
        dataplane: DataPlane,
        governance: Governance | None,
    ) -> None:
        self.wire = wire
        self.dataplane = dataplane
        self.governance = governance
        self._waiting: set[asyncio.Future[None]] = set()  # requests a task carries on
        # what a kept lane depends on, counted (modelyard/generation.py): the data plane's (a
        # model loaded, unloaded or swapped) and governance's (rules changed, tickets
        # forgotten); both only grow, so their sum moves whenever either does
        data_plane = dataplane.generation if dataplane is not None else Generation()
        if governance is None or governance.generation is data_plane:
            self.stamp: Callable[[], int] = lambda: data_plane.value
        else:
            rules = governance.generation
            self.stamp = lambda: data_plane.value + rules.value

    def start(self, sent: Sent) -> None:
        """Take one request on its way; it is answered through the wire, once."""
        wire = self.wire
        try:
            governance = self.governance
            chain = None if governance is None else governance.chain  # replaced as rules change
            if sent.trace is not None:  # timed step by step: the chain runs around it
                self._carry_on(self._general(sent))
                return
            lane = wire.lane(sent, self.stamp())
            if lane is not None:
                ticket = lane.ticket
            elif chain is not None:
                ticket = wire.ticket(sent)
                if ticket is None:  # a guard learns from outcomes: the chain runs around
                    self._carry_on(self._general(sent))
                    return
            else:
                ticket = None
            first = None if ticket is None else ticket.admit()
            if first is None:
                if lane is not None:  # admitted: queued with no await between
                    wire.submit_on_lane(lane, sent).add_done_callback(
                        functools.partial(self._lane_done, lane, sent)
                    )
                else:
                    self._admitted(sent, None if ticket is None else ticket.principal)
                return
            assert chain is not None and ticket is not None
            call = wire.call(sent)  # past the ticket's quick path: the chain decides
            call.principal = ticket.principal
            try:
                pending = chain.admit(call, first)
            except GovernanceError as error:
                self._fail(sent, error, call)
                return
            if pending is None:
                self._admitted(sent, ticket.principal)
            else:
                self._carry_on(self._admitted_after(pending, call, sent))
        except Exception as exc:
            self._fail(sent, exc)

    def _lane_done(self, lane: FastLane, sent: Sent, done: asyncio.Future[Results]) -> None:
        """A request queued on its lane, answered from its raw outputs."""
        wire = self.wire
        try:
            answer = wire.lane_answer(lane, done.result(), sent)
        except (Exception, asyncio.CancelledError) as exc:
            self._fail(sent, exc)
            return
        wire.reply(sent, answer)

    def _admitted(self, sent: Sent, principal: str | None) -> None:
        """An admitted request, decoded, validated, routed and queued now (an admission that
        awaited may have let a new version in)."""
        request, layout = self.wire.decode(sent)
        if principal is not None:  # whom its model's own calls (BLS) are for
            request.principals = (principal,)
        try:
            target = self.dataplane.lane(request)
        except NotResident as missing:  # its model loads first: awaited in a task
            self._carry_on(self._when_resident(missing, request, layout, sent))
            return
        self._submit(target, request, layout, sent)

    def _submit(
        self, target: InferLane | None, request: InferRequest, layout: Any, sent: Sent
    ) -> None:
        if target is None:  # a data plane that keeps no lanes: it forwards the request
            self._carry_on(self._forwarded(request, sent))
            return
        stamp = self.stamp()  # routed now: what its lane decided holds while this does
        target.submit(
            request.inputs,
            request.priority,
            request.timeout_us,
            request.deadline,
            None,
            request.arrived_ns,
        ).add_done_callback(functools.partial(self._done, target, request, layout, sent, stamp))

    def _done(
        self,
        target: InferLane,
        request: InferRequest,
        layout: Any,
        sent: Sent,
        stamp: int,
        done: asyncio.Future[Results],
    ) -> None:
        """A routed request, answered from its raw outputs."""
        wire = self.wire
        try:
            answer = wire.answer(target, request, layout, sent, done.result(), stamp)
        except (Exception, asyncio.CancelledError) as exc:
            self._fail(sent, exc)
            return
        wire.reply(sent, answer)

    async def _admitted_after(self, pending: Awaitable[Any], call: Call, sent: Sent) -> None:
        try:
            await pending
        except Exception as exc:  # the caller is answered whatever a guard raised
            self._fail(sent, exc, call)
            return
        self._answer(sent, lambda: self._admitted(sent, call.principal))

    async def _when_resident(
        self, missing: NotResident, request: InferRequest, layout: Any, sent: Sent
    ) -> None:
        """A request to a model that loads when asked for: routed once it has loaded,
        within the request's deadline."""
        try:
            await missing.resident(request.wait_deadline())
            target = self.dataplane.lane(request)
        except Exception as exc:
            self._fail(sent, exc)
            return
        self._answer(sent, lambda: self._submit(target, request, layout, sent))

    async def _forwarded(self, request: InferRequest, sent: Sent) -> None:
        try:
            response = await self.dataplane.infer(request)
        except Exception as exc:
            self._fail(sent, exc)
            return
        self._answer(sent, lambda: self.wire.response_answer(response, request, sent))

    async def _general(self, sent: Sent) -> None:
        """The chain around the whole call (``governance.infer``), or no chain at all."""
        wire = self.wire
        decoded: list[InferRequest] = []

        def decode() -> InferRequest:
            request = wire.decode(sent)[0]
            decoded.append(request)
            return request

        governance = self.governance
        call = None
        try:
            if governance is None:
                response = await self.dataplane.infer(decode())
            else:
                call = wire.call(sent)
                response = await governance.infer(call, decode, self.dataplane)
        except Exception as exc:
            self._fail(sent, exc, call)
            return
        request = decoded[0] if decoded else None
        self._answer(sent, lambda: wire.response_answer(response, request, sent))

    def _answer(self, sent: Sent, answer: Callable[[], Answer | None]) -> None:
        """Run a step that answers (or goes on); what it raises is the caller's answer."""
        try:
            answered = answer()
        except (Exception, asyncio.CancelledError) as exc:
            self._fail(sent, exc)
            return
        if answered is not None:
            self.wire.reply(sent, answered)

    def _fail(
        self, sent: Sent, exc: Exception | asyncio.CancelledError, call: Call | None = None
    ) -> None:
        wire = self.wire
        path = wire.path(sent)
        if isinstance(exc, ModelyardError):
            if call is None or not isinstance(exc, GovernanceError):  # the chain logs its own
                REFUSALS.warning(log, "request_failed", path=path, **exc.fields())
            wire.reply(sent, wire.error_answer(exc, sent, call))
            return
        if isinstance(exc, asyncio.CancelledError):  # its future: the caller still answered
            log.warning("request_cancelled", path=path)
            error = internal_error(RuntimeError("request cancelled"))
            wire.reply(sent, wire.error_answer(error, sent, None))
            return
        log.exception("request_crashed", path=path, exc_info=exc)
        wire.reply(sent, wire.error_answer(internal_error(exc), sent, None))

    def _carry_on(self, step: Awaitable[None]) -> None:
        task = asyncio.ensure_future(step)
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)
