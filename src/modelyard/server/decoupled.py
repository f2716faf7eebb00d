"""The scheduler of a decoupled model: zero, one or many responses per request.

A model with ``model_transaction_policy { decoupled: true }`` (a python-backend model
that answers through ``request.get_response_sender()``) does not return its answer:
it sends responses, during ``execute`` or later from threads of its own, and marks
the last with the FINAL flag. Each request gets a ``ResponseStream``, an asyncio
queue its responses reach on the event loop; the gRPC ``ModelStreamInfer`` front
door writes them as they come. Instance threads take requests from a FIFO queue (one
at a time, or with ``dynamic_batching`` as many as are waiting, up to
``max_batch_size``, in one ``execute`` as Triton's python backend gives them) and
return to it as soon as ``execute`` returns; each request stays open, and counts as
pending, until its FINAL flag.

A plain call (HTTP infer, gRPC ModelInfer, an ensemble step) has one answer to give,
so it is refused at once with the error line saying to stream.

A decoupled model with ``sequence_batching`` has the sequence scheduler instead (its
slots and backlog), which opens its requests the same way: ``OpenRequest`` and
``execute_decoupled`` are the parts both use.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.dataplane import MAX_UNREAD, MAX_UNREAD_BYTES, unread_responses
from modelyard.engines.base import DecoupledRequest, ResponseTiming
from modelyard.errors import (
    Code,
    DecoupledRefusal,
    ModelServerError,
    ModelyardError,
    RequestRescheduled,
)
from modelyard.server.scheduler import (
    InstanceThreads,
    failed_around,
    start_instance_threads,
    unloading,
)
from modelyard.server.scheduling import Submission
from modelyard.server.stats import VersionStats


class StreamItem(NamedTuple):
    """One response of a decoupled model's request: outputs or an error, and whether it is
    the request's last (a FINAL flag sent alone has neither outputs nor error)."""

    outputs: dict[str, np.ndarray] | None
    error: ModelyardError | None
    final: bool




class ResponseStream:
    """A request's responses as they reach the event loop, and whether its caller has gone
    (the model reads that as ``is_cancelled()``; what it sends after is dropped)."""

    def __init__(self, model: str = "") -> None:
        self.items: asyncio.Queue[StreamItem] = asyncio.Queue()
        self.cancelled = False
        self.model = model
        self.unread_bytes = 0
        self._on_cancel: list[Callable[[], None]] = []

    async def get(self) -> StreamItem:
        item = await self.items.get()
        self.unread_bytes -= _size(item)
        return item

    def cancel(self) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        waiting, self._on_cancel = self._on_cancel, []
        for tell in waiting:
            tell()

    def on_cancel(self, tell: Callable[[], None]) -> None:
        """``tell()`` once the caller has gone (at once if it has; it may be told twice):
        what a model in a process of its own keeps, so that its ``is_cancelled()`` asks
        nobody. Any thread: the loop may cancel meanwhile (the check after sees it)."""
        self._on_cancel.append(tell)
        if self.cancelled:
            tell()

    def put(self, item: StreamItem) -> None:
        """A response, on the loop; past MAX_UNREAD unread ones the request is cancelled
        and its caller reads, after them, why."""
        if self.cancelled:
            return
        size = _size(item)
        if not item.final and (
            self.items.qsize() >= MAX_UNREAD or self.unread_bytes + size > MAX_UNREAD_BYTES
        ):
            self.cancel()
            item, size = StreamItem(None, unread_responses(self.model), True), 0
        self.unread_bytes += size
        self.items.put_nowait(item)


def _nothing() -> None:
    pass


def _size(item: StreamItem) -> int:
    return sum(array.nbytes for array in item.outputs.values()) if item.outputs else 0


class _Request(NamedTuple):
    inputs: dict[str, np.ndarray]
    outputs: list[str]
    stream: ResponseStream
    loop: asyncio.AbstractEventLoop
    enqueued_ns: int
    parameters: dict[str, Any] | None
    trace_context: str | None = None


MAX_QUEUED = 4096  # requests waiting for an instance: each holds its inputs


def decoupled_refusal(model: str) -> DecoupledRefusal:
    rule = error_rules.DECOUPLED
    return DecoupledRefusal(model, code=rule.code, rule=rule.id, where=rule.where)


class DecoupledScheduler(InstanceThreads):
    def __init__(
        self,
        model: str,
        version: int,
        engines: list[Any],
        *,
        batch_size: int = 1,
        clock: Clock = SYSTEM_CLOCK,
        target: int = 0,
        delay_ns: int = 0,
    ) -> None:
        # max_batch_size 0: requests are not stacked, each keeps its own tensors
        super().__init__(model, version, 0, clock)
        self._batch_size = max(1, batch_size)  # requests per execute()
        # dynamic batching's queue delay: a batch waits for ``target`` requests (the largest
        # preferred size, or a full batch) until its oldest has waited ``delay_ns``
        self._target = min(target or self._batch_size, self._batch_size)
        self._delay_ns = delay_ns
        self._queue: deque[_Request] = deque()
        self._open = 0  # requests taken, not yet FINAL
        self._threads = start_instance_threads(
            f"{model}-v{version}-dec", self._run, [(engine,) for engine in engines]
        )

    @property
    def pending(self) -> int:
        return len(self._queue) + self._open

    @property
    def queued(self) -> int:
        return len(self._queue)

    decoupled = True  # answers through submit_stream (ModelScheduler)

    def submit(self, request: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        raise decoupled_refusal(self.model)

    def submit_stream(self, request: Submission) -> ResponseStream:
        """Queue a request; its responses arrive on the returned queue (event loop thread)."""
        loop = asyncio.get_running_loop()
        stream = ResponseStream(self.model)
        now = self._clock.monotonic_ns()
        with self._lock:
            if self._closed:
                raise unloading(self.model, self.version)
            if len(self._queue) >= MAX_QUEUED:
                raise ModelServerError.of(
                    error_rules.QUEUE_FULL,
                    f"model '{self.model}' has {MAX_QUEUED} requests waiting for an instance",
                    where=f"instance_group count of {self.model}/config.pbtxt, or retry",
                    retry_after=1.0,
                )
            arrived_ns = min(request.arrived_ns, now) or now
            self._queue.append(
                _Request(
                    request.inputs, request.outputs, stream, loop, arrived_ns, request.parameters,
                    request.trace_context,
                )
            )
            self._cond.notify()
        return stream

    def _run(self, engine: Any) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                self._wait_for_batch()
                if not self._queue:
                    return
                taken: list[_Request] = []
                while self._queue and len(taken) < self._batch_size:
                    request = self._queue.popleft()
                    if not request.stream.cancelled:  # its caller has gone: never executed
                        taken.append(request)
                self._open += len(taken)
            if taken:
                opened = [
                    OpenRequest(r.stream, r.loop, r.enqueued_ns, self.stats, self._clock,
                                self._finished)
                    for r in taken
                ]  # fmt: skip
                described = [
                    DecoupledRequest(r.inputs, r.outputs, each.deliver, each.is_cancelled,
                                     r.parameters, timed=True, trace_context=r.trace_context,
                                     on_cancel=each.on_cancel)
                    for r, each in zip(taken, opened, strict=True)
                ]  # fmt: skip
                execute_decoupled(engine, self.model, self.version, opened, described)

    def _wait_for_batch(self) -> None:
        """Under the lock: hold the waiting requests, as Triton's dynamic batcher, until
        there are ``target`` of them or the oldest has waited the queue delay."""
        while self._delay_ns and self._queue and not self._closed:
            if len(self._queue) >= self._target:
                return
            waited = self._clock.monotonic_ns() - self._queue[0].enqueued_ns
            if waited >= self._delay_ns:
                return
            self._cond.wait((self._delay_ns - waited) / 1e9)

    def _finished(self) -> None:
        with self._lock:
            self._open -= 1


def execute_decoupled(
    engine: Any,
    model: str,
    version: int,
    opened: list[OpenRequest],
    described: list[DecoupledRequest],
) -> None:
    """One ``execute`` of a decoupled model's requests (``described``, each answering
    through its ``OpenRequest``); returns when the model's execute has."""
    start_ns = opened[0].clock.monotonic_ns()
    for each in opened:
        each.start_ns = start_ns
    try:
        engine.execute_decoupled(described)
    except Exception as exc:  # the engine's contract says it never raises: still answer
        error = failed_around(model, version, exc)
        for each in opened:
            each.deliver(None, error, True)


class OpenRequest:
    """A request taken by an instance: open until the model sends FINAL (once, whichever
    thread sends it), then counted in the statistics and ``finished`` called. Its responses
    reach its stream on its event loop; with ``in_turn`` (``InOrder.release`` for its
    ticket) once the requests taken before it have had their FINAL."""

    def __init__(
        self,
        stream: ResponseStream,
        loop: asyncio.AbstractEventLoop,
        enqueued_ns: int,
        stats: VersionStats,
        clock: Clock,
        finished: Callable[[], None],
        in_turn: Callable[[Callable[[], None], bool], None] | None = None,
        again: Callable[[], ModelyardError | None] | None = None,
    ) -> None:
        self.stream = stream
        self.loop = loop
        self.enqueued_ns = enqueued_ns
        self.stats = stats
        self.clock = clock
        self.finished = finished
        self.in_turn = in_turn
        # an iterative sequence's: the model gave the request back, to queue it again (None)
        # or say why not
        self.again = again
        self.lock = threading.Lock()
        self.final_sent = False
        self.failed = False
        self.start_ns = 0
        self.responses = 0  # sent so far (its next response's index in the statistics)
        self.response_start_ns = 0  # when the last was sent (0: none yet)

    def is_cancelled(self) -> bool:
        return self.stream.cancelled

    def on_cancel(self, tell: Callable[[], None]) -> None:
        self.stream.on_cancel(tell)

    def deliver(
        self,
        outputs: dict[str, np.ndarray] | None,
        error: ModelyardError | None,
        final: bool,
        *,
        timing: ResponseTiming | None = None,
    ) -> None:
        """One response (``outputs`` or ``error``), or FINAL alone; ``timing``: the model's
        side's readings of it (for the response statistics; without it, this side's)."""
        if final and isinstance(error, RequestRescheduled) and self.again is not None:
            with self.lock:
                if self.final_sent:
                    return
            refusal = self.again()
            if refusal is None:  # queued again: this opening ends without a FINAL
                with self.lock:
                    self.final_sent = True
                if self.in_turn is not None:
                    self.in_turn(_nothing, True)
                return
            error = refusal
        with self.lock:
            if self.final_sent:
                return
            self.final_sent = final
            self.failed = self.failed or error is not None
            # the model process's readings, held within this request's time here
            now_ns = self.clock.monotonic_ns()
            started_ns, made_ns, sent_ns = (
                min(max(reading, self.start_ns), now_ns) if reading else 0
                for reading in timing or (0, 0, 0)
            )
            index = self.responses
            start_ns = self.response_start_ns or started_ns or self.start_ns
            self.responses += 1
            self.response_start_ns = end_ns = sent_ns or self.clock.monotonic_ns()
        self._record_response(index, outputs, error, final, start_ns, made_ns, end_ns)
        if final:
            self._count()
        item = StreamItem(outputs, error, final)
        if self.in_turn is None:
            self._put(item)
        else:
            self.in_turn(functools.partial(self._put, item), final)

    def _record_response(
        self,
        index: int,
        outputs: dict[str, np.ndarray] | None,
        error: ModelyardError | None,
        final: bool,
        start_ns: int,
        made_ns: int,
        end_ns: int,
    ) -> None:
        """The response statistics of one response: success, fail, cancel (an error coded
        CANCELLED), or empty (FINAL alone)."""
        if error is not None:
            outcome = "cancel" if error.code is Code.CANCELLED else "fail"
        elif outputs is not None:
            outcome = "success"
        elif final:
            outcome = "empty"
        else:
            return
        self.stats.record_response(index, outcome, start_ns, made_ns, end_ns)

    def _put(self, item: StreamItem) -> None:
        if self.stream.cancelled:
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody reads the stream
            self.loop.call_soon_threadsafe(self.stream.put, item)

    def _count(self) -> None:
        clock = self.clock
        end_ns = clock.monotonic_ns()
        if self.failed:
            self.stats.record_failure("BACKEND", end_ns - self.enqueued_ns)
        else:
            self.stats.record_execution(
                [self.enqueued_ns], self.start_ns, 1, 0, end_ns - self.start_ns, 0, end_ns,
                int(clock.wall() * 1000),
            )  # fmt: skip
        self.finished()
