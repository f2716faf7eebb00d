"""Triton's sequence batcher: each sequence of a stateful model bound to one slot.

A model with ``sequence_batching`` keeps state per sequence, so every request of a
sequence must reach the instance that holds it, in order. A request's START flag
takes a slot for its sequence (or, when every slot is held, puts the sequence in
the backlog until one frees); END, or no request for ``max_sequence_idle_microseconds``,
gives the slot back. Each instance thread executes, in one batch, the next request
of the sequences in its slots, and the server fills the control inputs (START,
END, READY, CORRID) and the implicit states (``state``) the config names:

* **direct**: a sequence keeps its row of the batch (its slot); the batch runs to
  the highest slot that has a request, and the slots between without one are sent
  with READY false and zeros;
* **oldest**: up to ``max_candidate_sequences`` sequences per instance; a batch takes
  the next request of as many of them as are ready, oldest first, with no padding.
  With ``preserve_ordering``, answers leave in the order their requests were taken for
  execution, across sequences and instances (``InOrder``): as Triton's, whose oldest
  strategy feeds each instance's dynamic batcher a sequence's next request once the one
  before it has run. A request of a sequence still waiting for a slot is not yet taken,
  so it holds back nobody (its slot may wait for their callers to end a sequence).

A sequence's requests never run concurrently and are answered in order. The
implicit state a sequence's execution returns feeds its next one; START resets it
to the configured initial state.

With an input that allows ragged batching (``allow_ragged_batch``), sequences whose next
requests differ in its shape share an execution, as Triton's sequence batcher forms a
batch without comparing such an input's shapes: the batch is assembled as the dynamic
batcher's ragged batches are (``RaggedBatching``: the input flat, the batch inputs
computed), a padding row carrying the first request's shapes (Triton's null request, a
copy of it), and each request's answer is its part.

A queued request whose caller cancels it (a gRPC call or stream cancelled) cancels its
sequence, as Triton's: within ``CANCELLED_CHECK_S`` it and the requests queued after it
are answered CANCELLED (each counted as a CANCELED failure), those before it run, and the
sequence then gives its slot back; a sequence in the backlog is cancelled whole. Its id
is forgotten, so its next request must START another.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.dataplane import CALLER_GONE
from modelyard.engines.base import (
    BatchedRequest,
    BatchOutcomes,
    DecoupledRequest,
    Engine,
    batch_requests,
)
from modelyard.errors import ModelServerError, ModelyardError, RequestRescheduled
from modelyard.in_order import InOrder
from modelyard.server.decoupled import (
    OpenRequest,
    ResponseStream,
    StreamItem,
    decoupled_refusal,
    execute_decoupled,
)
from modelyard.server.ragged import RaggedBatching
from modelyard.server.resource_limiter import InstanceNeeds, ResourceLimiter
from modelyard.server.scheduler import (
    InstanceThreads,
    Retiring,
    answers_by_loop,
    engine_error,
    failed_around,
    failure_reason,
    held_until_queued,
    settle,
    settle_on_loops,
    settle_soon,
    shape_key_of,
    stack_rows,
    unloading,
)
from modelyard.server.scheduling import Submission, answers_once, check_outputs
from modelyard.server.sequence_policy import (
    CORRID,
    END,
    READY,
    START,
    STATE_MAX_BYTES,
    Control,
    SequenceFlags,
    SequenceId,
    SequencePolicy,
    State,
)

# bounds on what callers can make the server hold: sequences waiting for a slot (each
# with its queued requests), and requests queued behind one sequence's
MAX_BACKLOG = 4096
MAX_QUEUED_PER_SEQUENCE = 64
# how often queued requests whose callers can go are looked at (Triton's reaper's role)
CANCELLED_CHECK_S = 0.5


@dataclass(slots=True, eq=False)
class _Request:
    inputs: dict[str, np.ndarray]
    outputs: list[str]
    flags: SequenceFlags
    # where it is answered: a future (answered once), or a decoupled model's stream
    future: asyncio.Future[dict[str, np.ndarray]] | None
    loop: asyncio.AbstractEventLoop
    enqueued_ns: int
    shape_key: tuple[Any, ...]
    timing: list[int] | None = None
    parameters: dict[str, Any] | None = None
    ticket: int = -1  # its place in the answers' order (preserve_ordering), once taken
    stream: ResponseStream | None = None
    opened: OpenRequest | None = None  # a decoupled model's request, once taken
    deadline_ns: int = 0  # its timeout or caller's deadline: not run again after (0: none)
    # an iterative sequence's START: its sequence ends once it is answered (not given back)
    closes: bool = False
    caller_gone: Callable[[], bool] | None = None  # whether its caller cancelled it
    trace_context: str | None = None  # a traced request's, for a model that reads requests


@dataclass(slots=True, eq=False)
class _Sequence:
    id: SequenceId
    queue: deque[_Request] = field(default_factory=deque)
    instance: int = -1  # -1: in the backlog
    slot: int = -1
    state: dict[str, np.ndarray] | None = None  # None: the initial state
    last_ns: int = 0
    executing: bool = False
    ending: bool = False  # its last request queued so far has END
    expires_ns: int = 0  # in the backlog: when its requests' earliest timeout passes (0: none)
    cancelled: bool = False  # a caller cancelled it: its slot is given back once idle


@dataclass(slots=True)
class _Row:
    sequence: _Sequence | None  # None: a padding row (direct, a slot without a request)
    request: _Request | None


def _not_started(model: str, sequence_id: SequenceId) -> ModelServerError:
    return ModelServerError.of(
        error_rules.SEQUENCE,
        f"inference request for sequence {sequence_id} to model '{model}' must specify the "
        "START flag on the first request of the sequence",
        where="send sequence_start: true on a sequence's first request (a sequence idle "
        f"longer than max_sequence_idle_microseconds in {model}/config.pbtxt was released)",
        triton=True,
    )


def stopping_refusal() -> ModelServerError:
    """tritonserver's stop has begun: a new inference (a sequence's START) is refused."""
    return ModelServerError.of(
        error_rules.STOPPING,
        "Server is stopping, scheduler for model has stopped accepting new inference requests",
        triton=True,
    )


def _backlog_delay() -> int:
    """Triton's ``TRITONSERVER_BACKLOG_DELAY_SCHEDULER=N``: with its delay hook, the
    instances also wait for N requests in the backlog."""
    try:
        return max(0, int(os.environ.get("TRITONSERVER_BACKLOG_DELAY_SCHEDULER", "0")))
    except ValueError:
        return 0


def _kept(returned: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """A state the model returned, as its next request's input: a STRING state's elements
    as bytes, the type BYTES inputs have (an engine may return them as str)."""
    state = np.array(returned, dtype=dtype)
    if dtype == np.object_:
        for index, item in np.ndenumerate(state):
            if isinstance(item, str):
                state[index] = item.encode("utf-8")
    return state


def _row_bytes(array: np.ndarray, shape: tuple[int, ...], batched: bool) -> int:
    """What the largest row's state holds: a STRING state's strings counted by their bytes."""
    if array.dtype != np.object_:
        return math.prod(shape) * array.itemsize
    rows = array if batched else [array]
    return max(
        (sum(len(item) for item in row.flat if isinstance(item, (bytes, str))) for row in rows),
        default=0,
    )


def _zeros_like(array: np.ndarray) -> np.ndarray:
    return np.full_like(array, b"") if array.dtype.hasobject else np.zeros_like(array)


def _row_request(
    request: _Request | None, ragged_shapes: dict[str, tuple[int, ...]] | None = None
) -> BatchedRequest:
    if request is None:
        return BatchedRequest(ragged_shapes=ragged_shapes)
    flags = request.flags
    return BatchedRequest(
        1, request.parameters, flags.id, (1 if flags.start else 0) | (2 if flags.end else 0),
        ragged_shapes=ragged_shapes, trace_context=request.trace_context,
    )  # fmt: skip


class SequenceScheduler(InstanceThreads):
    """The scheduler of a version with ``sequence_batching``: slots, backlog, instance threads.

    ``decoupled``: the engines are a decoupled model's (``execute_decoupled``): requests come
    through ``submit_stream``, and each answers through its own response sender, zero, one or
    many times, as ``DecoupledScheduler``'s do; its slot and the sequence's next request wait
    only for its ``execute`` to return, as Triton releases a decoupled model's request then.

    ``ragged``: the model's ragged batching (an input with ``allow_ragged_batch``): sequences
    whose requests differ in that input's shape run in one execution.

    ``limiter``, ``needs``: Triton's rate limiter and what each instance holds while it
    executes (a sequence's requests still go to its slot's instance, however busy).
    """

    def __init__(
        self,
        model: str,
        version: int,
        engines: list[Engine],
        policy: SequencePolicy,
        *,
        clock: Clock = SYSTEM_CLOCK,
        decoupled: bool = False,
        ragged: RaggedBatching | None = None,
        limiter: ResourceLimiter | None = None,
        needs: list[InstanceNeeds | None] | None = None,
    ) -> None:
        super().__init__(model, version, policy.max_batch_size, clock)
        self.policy = policy
        self._limiter = limiter
        self.needs = needs if limiter is not None and needs else [None] * len(engines)
        self._ragged = ragged if policy.batched else None
        self._variable_states = policy.variable_states
        self.decoupled = decoupled  # answers through submit_stream (ModelScheduler)
        self._engines = list(engines)  # grows with instance updates (indices stay)
        self._queued = 0
        self._executing = 0
        self._sequences: dict[SequenceId, _Sequence] = {}
        self._slots: list[list[_Sequence | None]] = [[None] * policy.slots for _ in engines]
        self._backlog: deque[_Sequence] = deque()
        # oldest's preserve_ordering: answers leave in the order their requests were taken
        self._in_order = InOrder() if policy.preserve_ordering else None
        self._last_auto_id = 0  # iterative_sequence: the ids of the sequences it starts
        self._watching_callers = False  # a check of cancelled callers is due
        # tritonserver's stop has begun: a START is refused, the sequences running go on
        # (Triton's sequence batcher), and each counts as in flight until it ends or is
        # released idle
        self.stopped_accepting = False
        # Triton's test hooks: nothing runs until this many requests are queued in slots
        # and this many in the backlog (TRITONSERVER_DELAY_SCHEDULER, _BACKLOG_DELAY_...)
        self._held_until_queued = held_until_queued()
        self._held_until_backlogged = _backlog_delay() if self._held_until_queued else 0
        # instances an instance update removed: no sequence starts on them, and each stops
        # once the sequences it holds have ended
        self._retired: set[int] = set()
        self._threads = self._start_instances(
            f"{model}-v{version}-seq", self._run, list(enumerate(engines))
        )

    updates_instances = True

    def update_instances(
        self, engines: list[Engine], needs: list[InstanceNeeds | None],
        limiter: ResourceLimiter | None,
    ) -> list[Retiring]:  # fmt: skip
        """As ``InstanceThreads.update_instances``; a removed instance that holds sequences
        serves them until they end (Triton's), and a new one's slots take the backlog."""
        limited = limiter is not None and any(needs)
        needs = needs if limited else [None] * len(engines)
        kept = {id(engine) for engine in engines}
        with self._lock:
            known = {id(engine) for engine in self._engines}
            added = [(engine, need) for engine, need in zip(engines, needs, strict=True)
                     if id(engine) not in known]  # fmt: skip
            removed = [index for index, engine in enumerate(self._engines)
                       if id(engine) not in kept and index not in self._retired]  # fmt: skip
            self._retired.update(removed)
            retiring = [
                Retiring(self._threads[index], self._engines[index], self.needs[index],
                         busy=any(s is not None for s in self._slots[index]))
                for index in removed
            ]  # fmt: skip
            first = len(self._engines)
            self._engines += [engine for engine, _ in added]
            self.needs += [need for _, need in added]
            self._slots += [[None] * self.policy.slots for _ in added]
            self._limiter = limiter if limited else None
            while self._backlog and self._free_slot() is not None:
                self._place(self._backlog.popleft())
            self._threads += self._start_instances(
                f"{self.model}-v{self.version}-seq", self._run,
                [(first + n, engine) for n, (engine, _) in enumerate(added)],
            )  # fmt: skip
            self._cond.notify_all()
        return retiring

    def _free_slot(self) -> tuple[int, int] | None:
        """The lowest free slot of an instance that takes sequences: (instance, slot)."""
        for slot in range(self.policy.slots):
            for instance, slots in enumerate(self._slots):
                if slots[slot] is None and instance not in self._retired:
                    return instance, slot
        return None

    @property
    def pending(self) -> int:
        return self._queued + self._executing

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def active_sequences(self) -> int:
        return len(self._sequences)

    @property
    def in_flight(self) -> int:
        """What tritonserver's stop waits for (its log's in-flight inferences): as Triton's
        sequence batcher counts them, the sequences holding a slot (and any request still
        queued or executing)."""
        with self._lock:
            held = sum(1 for slots in self._slots for s in slots if s is not None)
        return max(held, self.pending)

    def submit(self, submitted: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        """Queue one request of its sequence (the caller's, or the ensemble's it is a step
        of); from the event loop's thread. One that names none is refused, as Triton does.
        Its ``timeout_us`` bounds its wait in the backlog, as Triton's: a sequence still
        there when one of its requests' timeouts passes is refused whole."""
        if self.decoupled:
            raise decoupled_refusal(self.model)
        future: asyncio.Future[dict[str, np.ndarray]] = asyncio.get_running_loop().create_future()
        self._queue(submitted, future, None)
        return future

    def submit_stream(self, submitted: Submission) -> ResponseStream:
        """Queue one request of a decoupled model's sequence; its responses come on the
        stream returned (``submit``'s rules otherwise)."""
        if not self.decoupled:
            raise answers_once(self.model)
        stream = ResponseStream(self.model)
        self._queue(submitted, None, stream)
        return stream

    def _queue(
        self,
        submitted: Submission,
        future: asyncio.Future[dict[str, np.ndarray]] | None,
        stream: ResponseStream | None,
    ) -> None:
        flags = submitted.sequence
        auto = self.policy.iterative and (flags is None or flags.id in (0, ""))
        if auto:  # Triton's iterative sequencer: a sequence of its own, with its id
            flags = SequenceFlags(0, True, False)
        if flags is None:
            raise ModelServerError.of(
                error_rules.SEQUENCE,
                f"inference request to model '{self.model}' must specify a non-zero or "
                "non-empty correlation ID",
                where=f"'{self.model}' is a sequence model: send the ensemble's requests with "
                "a sequence_id, which it passes on",
                triton=True,
            )
        inputs, shape_key, arrived_ns = submitted.inputs, submitted.shape_key, submitted.arrived_ns
        outputs, timing, parameters = submitted.outputs, submitted.timing, submitted.parameters
        timeout_us = submitted.timeout_us
        loop = asyncio.get_running_loop()
        now = self._clock.monotonic_ns()
        if self._ragged is not None:  # a ragged input's shape is left out
            shape_key = self._ragged.shape_key(inputs)
        elif shape_key is None:
            shape_key = shape_key_of(inputs)
        request = _Request(
            inputs, outputs, flags, future, loop, min(arrived_ns, now) or now, shape_key,
            timing, parameters, stream=stream, caller_gone=CALLER_GONE.get(),
            trace_context=submitted.trace_context,
        )  # fmt: skip
        # past its timeout or its caller's deadline, a request given back is not run again
        ends = (now + timeout_us * 1000 if timeout_us > 0 else 0,
                int(submitted.deadline * 1e9) if submitted.deadline else 0)  # fmt: skip
        request.deadline_ns = min((t for t in ends if t), default=0)
        with self._lock:
            if self._closed:
                raise unloading(self.model, self.version)
            if self.stopped_accepting and flags.start:
                raise stopping_refusal()
            if auto:
                flags = request.flags = SequenceFlags(self._auto_id(), True, False)
            request.closes = self.policy.iterative and flags.start
            sequence = self._sequences.get(flags.id)
            if sequence is None or sequence.ending:
                # a new sequence: as Triton, an id is forgotten once its END is queued, so a
                # START then begins another sequence (a slot, or the backlog) while the
                # ended one finishes in its slot
                if not flags.start:
                    raise _not_started(self.model, flags.id)
                if len(self._backlog) >= MAX_BACKLOG:
                    raise self._full(f"{MAX_BACKLOG} sequences wait for a slot")
                sequence = _Sequence(flags.id)
                self._sequences[flags.id] = sequence
                self._place(sequence)
            elif len(sequence.queue) >= MAX_QUEUED_PER_SEQUENCE:
                raise self._full(
                    f"sequence {flags.id} has {MAX_QUEUED_PER_SEQUENCE} requests queued"
                )
            # a START on a running sequence restarts it in its slot (its state reset), as
            # Triton does; its END, queued, is the one that ends it
            sequence.ending = flags.end
            sequence.queue.append(request)
            sequence.last_ns = now
            self._queued += 1
            if timeout_us > 0 and sequence.instance < 0:  # waits in the backlog
                expires_ns = now + timeout_us * 1000
                if not sequence.expires_ns or expires_ns < sequence.expires_ns:
                    sequence.expires_ns = expires_ns
                    loop.call_later(timeout_us / 1e6 + 1e-3, self._expire_backlog)
            if request.caller_gone is not None and not self._watching_callers:
                self._watching_callers = True
                loop.call_later(CANCELLED_CHECK_S, self._cancel_sequences)
            self._cond.notify_all()

    def _auto_id(self) -> int:
        """The next id of a sequence the server starts (one no sequence holds)."""
        while True:
            self._last_auto_id += 1
            if self._last_auto_id not in self._sequences:
                return self._last_auto_id

    def _expire_backlog(self) -> None:
        """Refuse, whole, each sequence still in the backlog when one of its requests'
        timeouts has passed (Triton's reaper); its id is forgotten, so a later request of it
        without START is refused as one that never started."""
        now = self._clock.monotonic_ns()
        expired: list[_Request] = []
        with self._lock:
            for sequence in [s for s in self._backlog if 0 < s.expires_ns <= now]:
                self._backlog.remove(sequence)
                if self._sequences.get(sequence.id) is sequence:
                    del self._sequences[sequence.id]
                expired.extend(sequence.queue)
                self._queued -= len(sequence.queue)
                sequence.queue.clear()
        if not expired:
            return
        error = ModelServerError.of(
            error_rules.QUEUE_TIMEOUT,
            "timeout of the corresponding sequence has been expired",
            where=f"the requests' timeout parameter, or more sequence slots (max_batch_size, "
            f"instance_group.count) in {self.model}/config.pbtxt",
            triton=True,
        )
        for request in expired:
            self.stats.record_failure(failure_reason(error), now - request.enqueued_ns)
        self._answer([(request, error) for request in expired])

    def _cancel_sequences(self) -> None:
        """Cancel each sequence a queued request of which its caller cancelled (the
        module docstring); look again later while requests whose callers can go wait."""
        cancelled: list[_Request] = []
        with self._lock:
            held = [s for slots in self._slots for s in slots if s is not None]
            for sequence in [*held, *self._backlog]:
                cancelled += self._cut_cancelled(sequence)
            self._watching_callers = any(
                request.caller_gone is not None
                for sequence in [*held, *self._backlog]
                for request in sequence.queue
            )
            if self._watching_callers:
                asyncio.get_running_loop().call_later(CANCELLED_CHECK_S, self._cancel_sequences)
            if cancelled:
                self._cond.notify_all()
        if not cancelled:
            return
        now = self._clock.monotonic_ns()
        error = ModelServerError.of(
            error_rules.SEQUENCE_CANCELLED,
            f"a request of sequence {cancelled[0].flags.id} of model '{self.model}' was "
            "cancelled by its caller, which cancels the sequence",
        )
        for request in cancelled:
            self.stats.record_failure(failure_reason(error), now - request.enqueued_ns)
        self._answer([(request, error) for request in cancelled])

    def _cut_cancelled(self, sequence: _Sequence) -> list[_Request]:
        """Under the lock: ``sequence``'s queued requests from the first whose caller
        cancelled it (all of them in the backlog), taken out; the sequence ended."""
        queue = sequence.queue
        first = next(
            (i for i, r in enumerate(queue) if r.caller_gone is not None and r.caller_gone()),
            None,
        )
        if first is None:
            return []
        if sequence.instance < 0:
            first = 0
        cut = [queue.pop() for _ in range(len(queue) - first)][::-1]
        self._queued -= len(cut)
        sequence.ending = sequence.cancelled = True
        if self._sequences.get(sequence.id) is sequence:
            del self._sequences[sequence.id]
        if sequence.instance < 0:
            self._backlog.remove(sequence)
        elif not queue and not sequence.executing:
            self._release(sequence)
        return cut

    def _full(self, detail: str) -> ModelServerError:
        return ModelServerError.of(
            error_rules.QUEUE_FULL,
            f"model '{self.model}' version {self.version} takes no more: {detail}",
            where=f"end sequences (sequence_end), or more instances in {self.model}/config.pbtxt",
            retry_after=1.0,
        )

    def _place(self, sequence: _Sequence) -> None:
        """Give ``sequence`` the lowest free slot of any instance, or a place in the backlog."""
        free = self._free_slot()
        if free is None:
            self._backlog.append(sequence)
            return
        instance, slot = free
        self._slots[instance][slot] = sequence
        sequence.instance, sequence.slot = instance, slot

    def _release(self, sequence: _Sequence) -> None:
        """Free ``sequence``'s slot for the backlog's first sequence."""
        if self._sequences.get(sequence.id) is sequence:
            del self._sequences[sequence.id]
        if sequence.instance < 0:
            return
        slots = self._slots[sequence.instance]
        slots[sequence.slot] = None
        if self._backlog and sequence.instance not in self._retired:
            waiting = self._backlog.popleft()
            slots[sequence.slot] = waiting
            waiting.instance, waiting.slot = sequence.instance, sequence.slot
        sequence.instance = sequence.slot = -1

    def close(self) -> None:
        """Take no more requests; what is queued in slots runs, the backlog is refused."""
        refused: list[_Request] = []
        with self._lock:
            self._closed = True
            while self._backlog:
                sequence = self._backlog.popleft()
                refused.extend(sequence.queue)
                self._queued -= len(sequence.queue)
                self._sequences.pop(sequence.id, None)
            self._cond.notify_all()
        error = ModelServerError.of(
            error_rules.SEQUENCE_VERSION_UNLOADED,
            f"model '{self.model}' version {self.version} unloaded before the sequence got a slot",
        )
        self._answer([(request, error) for request in refused])

    # ---- instance threads -------------------------------------------------

    def _run(self, instance: int, engine: Engine) -> None:
        while True:
            rows = self._next_rows(instance)
            if rows is None:
                return
            answers: list[tuple[_Request, Any]] = []
            try:
                if self.decoupled:  # each request answers through its sender
                    self._execute_decoupled(engine, rows)
                elif self._limiter is not None:  # waits for its resources
                    with self._limiter.held(self.needs[instance], more=self._has_queued):
                        answers = self._execute(engine, rows)
                else:
                    answers = self._execute(engine, rows)
            except Exception as exc:  # outside the engine call: answer, and keep the thread
                error = failed_around(self.model, self.version, exc)
                answers = [(row.request, error) for row in rows if row.request is not None]
            finally:
                with self._lock:
                    if not self.decoupled:  # a decoupled model's: at its FINAL (_finished)
                        self._executing -= sum(1 for row in rows if row.request is not None)
                        answers = self._run_again(rows, answers)
                    for row in rows:
                        sequence = row.sequence
                        if sequence is None:
                            continue
                        sequence.executing = False
                        sequence.last_ns = self._clock.monotonic_ns()
                        ends = sequence.cancelled or (
                            row.request is not None
                            and (row.request.flags.end or row.request.closes)
                        )
                        if ends and not sequence.queue:
                            self._release(sequence)
                    self._cond.notify_all()
            self._answer(answers)

    def _run_again(
        self, rows: list[_Row], answers: list[tuple[_Request, Any]]
    ) -> list[tuple[_Request, Any]]:
        """Under the lock: an iterative sequence's requests the model gave back go to the
        front of their sequence's queue (not answered); the answers left."""
        if not self.policy.iterative:
            return answers
        sequences = {id(row.request): row.sequence for row in rows if row.request is not None}
        left = []
        for request, outcome in answers:
            sequence = sequences.get(id(request))
            if isinstance(outcome, RequestRescheduled) and sequence is not None:
                refusal, stranded = self._requeue(sequence, request)
                left += [(later, refusal) for later in stranded]
                if refusal is None:
                    continue
                outcome = refusal
            left.append((request, outcome))
        return left

    def _requeue(
        self, sequence: _Sequence, request: _Request
    ) -> tuple[ModelyardError | None, list[_Request]]:
        """Under the lock: ``request`` queued again as its sequence's next, with no START or
        END flag, as Triton's iterative sequencer does; or why it is not (its caller gone,
        its timeout passed, the version unloading: a model that gives a request back forever
        holds its caller no longer than that). Second: the sequence's requests queued
        behind it that a release took out, each to be answered with the first."""
        return self._requeued(sequence, request), self._stranded(sequence)

    def _stranded(self, sequence: _Sequence) -> list[_Request]:
        """Under the lock: a released sequence's queued requests, taken out (no slot reads
        its queue again)."""
        if sequence.instance >= 0 or sequence in self._backlog or not sequence.queue:
            return []
        stranded = list(sequence.queue)
        sequence.queue.clear()
        self._queued -= len(stranded)
        return stranded

    def _requeued(self, sequence: _Sequence, request: _Request) -> ModelyardError | None:
        if self._closed:
            return unloading(self.model, self.version)
        gone = request.future.cancelled() if request.future is not None else (
            request.stream is not None and request.stream.cancelled
        )  # fmt: skip
        if gone:
            return ModelServerError.of(
                error_rules.RESCHEDULED_CALLER_GONE,
                f"the caller of a request to model '{self.model}' has gone; it is not run again",
            )
        now = self._clock.monotonic_ns()
        if request.deadline_ns and now >= request.deadline_ns:
            return ModelServerError.of(
                error_rules.QUEUE_TIMEOUT,
                f"Request timeout expired: request to model '{self.model}' version "
                f"{self.version} was given back to run again after its timeout (or its "
                "caller's deadline)",
                where="the request's timeout parameter, or its caller's deadline",
                triton=True,
            )
        if now - sequence.last_ns > self.policy.idle_ns:
            # as Triton's reaper, which counts a sequence idle from its last request queued,
            # executing or not: released meanwhile, its request without START is refused
            self._release(sequence)
            return _not_started(self.model, request.flags.id)
        request.flags = SequenceFlags(request.flags.id, False, False)
        request.opened, request.ticket = None, -1
        sequence.queue.appendleft(request)
        sequence.last_ns = now
        self._queued += 1
        return None

    def _reopen(self, sequence: _Sequence, request: _Request) -> ModelyardError | None:
        """A decoupled model gave ``request`` back (its execute's end): queued again, or why
        not (then its FINAL carries that)."""
        with self._lock:
            refusal, stranded = self._requeue(sequence, request)
            if refusal is None:
                self._executing -= 1  # this opening of it is over
                self._cond.notify_all()
        if stranded:
            self._answer([(later, refusal) for later in stranded])
        return refusal

    def _execute_decoupled(self, engine: Engine, rows: list[_Row]) -> None:
        """Run a decoupled model's requests of one batch (padding rows have none to send), each
        with its sequence's control inputs, correlation id and flags; returns once its
        ``execute`` has."""
        real = [row for row in rows if row.request is not None]
        opened, described = [], []
        for row in real:
            request = row.request
            assert request is not None and request.stream is not None
            in_turn = None
            if self._in_order is not None:
                in_turn = functools.partial(self._in_order.release, request.ticket)
            again = None
            if self.policy.iterative and row.sequence is not None:
                again = functools.partial(self._reopen, row.sequence, request)
            request.opened = OpenRequest(
                request.stream, request.loop, request.enqueued_ns, self.stats, self._clock,
                self._finished, in_turn, again,
            )  # fmt: skip
            opened.append(request.opened)
        try:
            for row, each in zip(real, opened, strict=True):
                request = row.request
                assert request is not None
                inputs = dict(request.inputs)
                shape = (1, 1) if self.policy.batched else (1,)
                for control in self.policy.controls:
                    inputs[control.name] = self._control_value(control, request, shape)
                meta = _row_request(request)
                described.append(DecoupledRequest(
                    inputs, request.outputs, each.deliver, each.is_cancelled, request.parameters,
                    meta.correlation_id, meta.flags, timed=True,
                    trace_context=request.trace_context, on_cancel=each.on_cancel,
                ))  # fmt: skip
        except Exception as exc:  # the server's own bug: answered, the thread goes on
            error = failed_around(self.model, self.version, exc)
            for each in opened:
                each.deliver(None, error, True)
            return
        execute_decoupled(engine, self.model, self.version, opened, described)

    def _finished(self) -> None:
        """A decoupled model's request has sent its FINAL."""
        with self._lock:
            self._executing -= 1

    def _has_queued(self) -> bool:
        """Whether requests wait in slots (an instance keeps its rate-limiter turn then)."""
        return self._queued > 0

    def _next_rows(self, instance: int) -> list[_Row] | None:
        clock = self._clock
        with self._cond:
            while True:
                now = clock.monotonic_ns()
                if self._held_until_queued and not self._closed and self._held():
                    self._cond.wait(0.01)
                    continue
                wake = self._release_idle(now)
                slots = self._slots[instance]
                ready = [
                    (slot, sequence)
                    for slot, sequence in enumerate(slots)
                    if sequence is not None and sequence.queue and not sequence.executing
                ]
                if ready:
                    held_until = self._hold_until(ready, slots, now)
                    if held_until is None:
                        return self._take(ready)
                    wake = held_until if wake is None else min(wake, held_until)
                elif self._closed and not any(
                    s is not None and (s.queue or s.executing) for s in slots
                ):
                    return None
                elif instance in self._retired and not any(s is not None for s in slots):
                    return None  # removed by an instance update, its sequences all ended
                wait_s = None if wake is None else min(max(0.0, (wake - now) / 1e9), 3600.0)
                self._cond.wait(None if wait_s is None else wait_s + 1e-4)

    def _held(self) -> bool:
        """Whether Triton's test hooks still hold the instances (then once released, never
        again)."""
        in_slots = sum(len(s.queue) for slots in self._slots for s in slots if s is not None)
        backlogged = sum(len(sequence.queue) for sequence in self._backlog)
        if in_slots < self._held_until_queued or backlogged < self._held_until_backlogged:
            return True
        self._held_until_queued = self._held_until_backlogged = 0
        return False

    def _hold_until(
        self, ready: list[tuple[int, _Sequence]], slots: list[_Sequence | None], now: int
    ) -> int | None:
        """Until when a batch waits for more sequences' requests; None: it runs now."""
        policy = self.policy
        delay = policy.max_queue_delay_ns
        if delay <= 0 or self._closed:
            return None
        oldest = min(sequence.queue[0].enqueued_ns for _, sequence in ready)
        if oldest + delay <= now:
            return None
        if policy.oldest:  # Triton's dynamic batcher over the candidate sequences
            return None if len(ready) >= policy.oldest_aim else oldest + delay
        # Triton's test: the share of all slots ready, however many hold a sequence
        if len(ready) / len(slots) >= policy.minimum_slot_utilization:
            return None
        return oldest + delay

    def _release_idle(self, now: int) -> int | None:
        """Release the sequences idle too long; when the next one falls idle."""
        idle_ns = self.policy.idle_ns
        wake: int | None = None
        for slots in self._slots:
            for sequence in slots:
                if sequence is None or sequence.queue or sequence.executing:
                    continue
                due = sequence.last_ns + idle_ns
                if due <= now:
                    self._release(sequence)
                    self._cond.notify_all()
                elif wake is None or due < wake:
                    wake = due
        return wake

    def _take(self, ready: list[tuple[int, _Sequence]]) -> list[_Row]:
        """The rows of the next execution: one request per ready sequence, of one shape."""
        policy = self.policy
        if policy.oldest:
            ready = sorted(ready, key=lambda item: item[1].queue[0].enqueued_ns)
            ready = ready[: max(1, policy.max_batch_size)]
        # the oldest request's shape: a sequence that keeps sending cannot hold back another
        shape_key = self._shape_key(min(ready, key=lambda item: item[1].queue[0].enqueued_ns)[1])
        chosen = {
            slot: sequence for slot, sequence in ready if self._shape_key(sequence) == shape_key
        }
        # direct: every slot up to the highest with a request ready (as Triton's), those
        # without one of this shape as padding
        highest = max(slot for slot, _ in ready)
        slots_in_order = list(chosen) if policy.oldest else list(range(highest + 1))
        rows = []
        for slot in slots_in_order:
            sequence = chosen.get(slot)
            if sequence is None:
                rows.append(_Row(None, None))
                continue
            request = sequence.queue.popleft()
            if self._in_order is not None:
                request.ticket = self._in_order.ticket()
            sequence.executing = True
            rows.append(_Row(sequence, request))
        taken = len(chosen)
        self._queued -= taken
        self._executing += taken
        return rows

    def _shape_key(self, sequence: _Sequence) -> tuple[Any, ...]:
        """What the rows of one execution share: their next request's shapes, and the
        shapes of the variable-sized states they carry."""
        request = sequence.queue[0]
        if not self._variable_states:
            return request.shape_key
        return (request.shape_key, *(self._state_of(sequence, request, state).shape
                                     for state in self._variable_states))  # fmt: skip

    @staticmethod
    def _state_of(sequence: _Sequence | None, request: _Request | None, state: State) -> np.ndarray:
        """The state a request runs with: its sequence's kept one, or the initial state."""
        if request is None or sequence is None or request.flags.start or sequence.state is None:
            return state.initial
        return sequence.state[state.input_name]

    def _execute(
        self, engine: Engine, rows: list[_Row]
    ) -> list[tuple[_Request, dict[str, np.ndarray] | BaseException]]:
        """Run one batch of slots (padding rows included); each real request's answer, its
        sequence's state kept from the outputs, the statistics recorded."""
        clock = self._clock
        start_ns = clock.monotonic_ns()
        real = [row.request for row in rows if row.request is not None]
        first = real[0]
        outputs = list(first.outputs)
        for request in real[1:]:
            outputs += [name for name in request.outputs if name not in outputs]
        engine_outputs = outputs + [n for n in self.policy.state_outputs if n not in outputs]
        infer_start = start_ns
        try:  # a state the model returned in a shape of its own fails here, not later
            parts = self._row_inputs(rows, first)
            inputs = self._batch_inputs(rows, first, parts)
            infer_start = clock.monotonic_ns()
            with batch_requests(self._described(rows, parts)):
                results = engine.execute(inputs, engine_outputs)
            self._check(results, engine_outputs, len(rows))
            each_row = self._each_row(rows, results, parts)
        except RequestRescheduled as again:  # one request, given back (_run_again)
            return [(request, again) for request in real]
        except BatchOutcomes as each:
            return self._each_failed(engine, rows, real, each, start_ns, infer_start)
        except Exception as exc:
            return self._failed_batch(engine, real, exc)
        infer_end = clock.monotonic_ns()
        answers = self._answers(rows, results, each_row)
        self._record(real, len(rows), start_ns, infer_start, infer_end)
        return answers

    def _record(
        self, real: list[_Request], rows: int, start_ns: int, infer_start: int, infer_end: int
    ) -> None:
        """An execution's statistics (counted by its slots, padding included) and each
        traced request's times."""
        clock = self._clock
        end_ns = clock.monotonic_ns()
        enqueued = [request.enqueued_ns for request in real]
        self.stats.record_execution(
            enqueued, start_ns, len(enqueued), infer_start - start_ns, infer_end - infer_start,
            end_ns - infer_end, end_ns, int(clock.wall() * 1000), batch_size=rows,
        )  # fmt: skip
        for request in real:
            if request.timing is not None:
                request.timing += (request.enqueued_ns, start_ns, infer_start, infer_end, end_ns)

    def _described(
        self, rows: list[_Row], parts: list[dict[str, np.ndarray]] | None
    ) -> list[BatchedRequest]:
        """Each row as a model that reads requests sees it; in a ragged batch, with its
        shapes of the ragged inputs."""
        ragged = self._ragged
        if ragged is None or parts is None:
            return [_row_request(row.request) for row in rows]
        return [
            _row_request(row.request, {n: part[n].shape for n in ragged.ragged if n in part})
            for row, part in zip(rows, parts, strict=True)
        ]

    def _each_failed(
        self,
        engine: Engine,
        rows: list[_Row],
        real: list[_Request],
        each: BatchOutcomes,
        start_ns: int,
        infer_start: int,
    ) -> list[tuple[_Request, dict[str, np.ndarray] | BaseException]]:
        """A batch whose model answered its requests each on its own (a python model's
        responses; a ragged batch's, each in its own shape): with no error, each request
        its answer; with one, a state needs every row, so the batch fails, each request with
        its own error where it has one, the others with the first."""
        if self.policy.iterative:  # each answered on its own (no state kept), or run again
            return self._each_on_its_own(rows, each)
        errors = [o if isinstance(o, BaseException) else None for o in each.outcomes]
        lead = next((error for error in errors if error is not None), None)
        if lead is None:
            if self.policy.states:  # rows of their own: the states cannot be kept
                return self._failed_batch(engine, real, each)
            answers: list[tuple[_Request, dict[str, np.ndarray] | BaseException]] = []
            for row, outcome in zip(rows, each.outcomes, strict=True):
                if row.request is not None and isinstance(outcome, dict):
                    asked = {n: outcome[n] for n in row.request.outputs if n in outcome}
                    answers.append((row.request, asked))
            infer_end = self._clock.monotonic_ns()
            self._record(real, len(rows), start_ns, infer_start, infer_end)
            return answers
        end_ns = self._clock.monotonic_ns()
        failed: list[tuple[_Request, dict[str, np.ndarray] | BaseException]] = []
        for row, error in zip(rows, errors, strict=True):
            if row.request is not None:
                failure = error or lead
                self.stats.record_failure(failure_reason(failure), end_ns - row.request.enqueued_ns)
                failed.append((row.request, failure))
        return failed

    def _each_on_its_own(
        self, rows: list[_Row], each: BatchOutcomes
    ) -> list[tuple[_Request, dict[str, np.ndarray] | BaseException]]:
        end_ns = self._clock.monotonic_ns()
        answers: list[tuple[_Request, dict[str, np.ndarray] | BaseException]] = []
        for row, outcome in zip(rows, each.outcomes, strict=True):
            if row.request is None:
                continue
            if isinstance(outcome, BaseException) and not isinstance(outcome, RequestRescheduled):
                self.stats.record_failure(failure_reason(outcome), end_ns - row.request.enqueued_ns)
            answers.append((row.request, outcome))
        return answers

    def _failed_batch(
        self, engine: Engine, real: list[_Request], exc: Exception
    ) -> list[tuple[_Request, dict[str, np.ndarray] | BaseException]]:
        error = engine_error(self.model, self.version, engine, exc)
        end_ns = self._clock.monotonic_ns()
        for request in real:
            self.stats.record_failure(failure_reason(error), end_ns - request.enqueued_ns)
        return [(request, error) for request in real]

    def _each_row(
        self,
        rows: list[_Row],
        results: dict[str, np.ndarray],
        parts: list[dict[str, np.ndarray]] | None,
    ) -> list[dict[str, np.ndarray] | None]:
        """Each row's outputs that its request asked for (None: a padding row): its row of
        each, or, in a ragged batch, its part (a scattered output's in its own shape)."""
        ragged = self._ragged
        if ragged is not None and parts is not None:
            wanted = [[] if row.request is None else row.request.outputs for row in rows]
            where = f"the model files of {self.model}/{self.version}"
            split = ragged.split(results, parts, wanted, [1] * len(rows), where)
            return [None if r.request is None else p for r, p in zip(rows, split, strict=True)]
        batched = self.policy.batched
        each_row: list[dict[str, np.ndarray] | None] = []
        for index, row in enumerate(rows):
            if row.request is None:
                each_row.append(None)
                continue
            asked = [name for name in row.request.outputs if name in results]  # one left out
            if batched:
                each_row.append({name: results[name][index : index + 1] for name in asked})
            else:
                each_row.append({name: results[name] for name in asked})
        return each_row

    def _answers(
        self,
        rows: list[_Row],
        results: dict[str, np.ndarray],
        each_row: list[dict[str, np.ndarray] | None],
    ) -> list[tuple[_Request, dict[str, np.ndarray] | BaseException]]:
        """Each real row's outputs, and its sequence's state for its next request."""
        answers: list[tuple[_Request, dict[str, np.ndarray] | BaseException]] = []
        policy = self.policy
        batched = policy.batched
        for index, (row, outputs) in enumerate(zip(rows, each_row, strict=True)):
            request, sequence = row.request, row.sequence
            if request is None or sequence is None or outputs is None:
                continue
            answers.append((request, outputs))
            if policy.states:
                sequence.state = {
                    state.input_name: _kept(
                        results[state.output_name][index]
                        if batched
                        else results[state.output_name],
                        state.dtype,
                    )
                    for state in policy.states
                }
        return answers

    def _row_inputs(self, rows: list[_Row], first: _Request) -> list[dict[str, np.ndarray]] | None:
        """Each row's client inputs in a batch (None: one slot per instance): a padding
        row's are zeros in the first request's shapes (Triton's null request, a copy of it)."""
        if not self.policy.batched:
            return None
        padding: dict[str, np.ndarray] | None = None
        parts = []
        for row in rows:
            if row.request is not None:
                parts.append(row.request.inputs)
                continue
            if padding is None:
                padding = {name: _zeros_like(array) for name, array in first.inputs.items()}
            parts.append(padding)
        return parts

    def _batch_inputs(
        self, rows: list[_Row], first: _Request, parts: list[dict[str, np.ndarray]] | None
    ) -> dict[str, np.ndarray]:
        """The client inputs stacked by row (padding rows as zeros; a ragged input flat, the
        batch inputs computed), and the filled ones."""
        policy = self.policy
        if parts is None:  # one slot per instance: the request as it came
            request, sequence = rows[0].request, rows[0].sequence
            assert request is not None and sequence is not None
            inputs = dict(request.inputs)
            for control in policy.controls:
                inputs[control.name] = self._control_value(control, request, shape=(1,))
            for state in policy.states:
                inputs[state.input_name] = self._state_of(sequence, request, state)
            return inputs
        if self._ragged is not None:
            inputs = self._ragged.assemble(parts, stack_rows)
        else:
            inputs = {name: stack_rows([part[name] for part in parts]) for name in first.inputs}
        for control in policy.controls:
            inputs[control.name] = np.concatenate(
                [self._control_value(control, row.request, shape=(1, 1)) for row in rows]
            )
        for state in policy.states:
            parts_of = [self._state_of(row.sequence, row.request, state) for row in rows]
            if state.variable:  # padding rows: zeros in the shape the real rows share
                real = (part for row, part in zip(rows, parts_of, strict=True) if row.request)
                shape = next(real).shape
                parts_of = [
                    state.zeros(shape) if row.request is None else part
                    for row, part in zip(rows, parts_of, strict=True)
                ]
            inputs[state.input_name] = np.stack(parts_of)
        return inputs

    @staticmethod
    def _control_value(
        control: Control, request: _Request | None, shape: tuple[int, ...]
    ) -> np.ndarray:
        if control.kind == CORRID:
            value: Any = 0 if request is None else request.flags.id
            if control.dtype == np.object_:
                text = value if isinstance(value, str) else ("" if value == 0 else str(value))
                return np.full(shape, text.encode("utf-8"), dtype=object)
            return np.full(shape, value if isinstance(value, int) else 0, dtype=control.dtype)
        if request is None:
            on = False
        elif control.kind == START:
            on = request.flags.start
        elif control.kind == END:
            on = request.flags.end
        else:
            assert control.kind == READY
            on = True
        return np.full(shape, control.false_true[1 if on else 0], dtype=control.dtype)

    def _check(self, results: dict[str, np.ndarray], outputs: list[str], rows: int) -> None:
        """The engine's outputs: a row per row in, each state returned in its shape (an
        output asked for may be left out: the response leaves it out)."""
        for state in self.policy.states:
            array = results.get(state.output_name)
            if array is None:
                raise ModelServerError.of(
                    error_rules.ENGINE_CONTRACT,
                    f"model '{self.model}' returned no state '{state.output_name}'",
                    where=f"the model's outputs, or the states in {self.model}/config.pbtxt",
                )
            batched = self.policy.batched
            shape = array.shape[1:] if batched else array.shape
            if not state.fits(shape) or _row_bytes(array, shape, batched) > STATE_MAX_BYTES:
                raise ModelServerError.of(
                    error_rules.ENGINE_CONTRACT,
                    f"model '{self.model}' returned state '{state.output_name}' in shape "
                    f"{list(shape)}; its state dims are {list(state.dims)}, within "
                    f"{STATE_MAX_BYTES} bytes",
                    where=f"the state dims in {self.model}/config.pbtxt, or the model's output",
                )
        if self._ragged is not None:  # a scattered output is flat: its parts are checked then
            outputs = [name for name in outputs if name not in self._ragged.scattered]
        check_outputs(self.model, self.version, results, outputs, rows, self.policy.batched)

    def _answer(self, answers: list[tuple[_Request, Any]]) -> None:
        if self.decoupled:  # refusals, before its model had them (or around its execute)
            for request, error in answers:
                if request.opened is not None:
                    request.opened.deliver(None, error, True)
                elif request.stream is not None:
                    item = StreamItem(None, error, True)
                    with contextlib.suppress(RuntimeError):  # a closed loop: nobody reads
                        request.loop.call_soon_threadsafe(request.stream.put, item)
            return
        in_order = self._in_order
        now: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Any]] = []
        for request, outcome in answers:
            future = request.future
            assert future is not None  # a model that answers once: each request has one
            if in_order is not None and request.ticket >= 0:  # taken: answered in its turn
                in_order.release(
                    request.ticket, functools.partial(settle_soon, request.loop, future, outcome)
                )
            else:
                now.append((request.loop, future, outcome))
        settle_on_loops(answers_by_loop(now), settle)
