"""The scheduler of one model version: a queue feeding N model instances.

Each instance is a thread that owns one engine object. Requests are queued
from the event loop and answered through asyncio futures. A free instance asks
the ``RequestQueue`` (server/batcher.py) what to run, stacks the chosen
requests along the batch axis, executes once and splits the outputs back:
engines never see individual requests.

Execution on the event loop: for models whose executions take a few tens of
microseconds, handing a request to a thread and its answer back costs more
than computing it. Once a version has shown (the median of its last 16
executions, so that the few that the OS preempted or the GIL held do not tip it)
that it runs under ``INLINE_THRESHOLD_NS``, and until it runs over
``LEAVE_INLINE_NS``, the event loop executes it with instance 0's engine.
``Scheduler.execution`` names the strategy a request takes (``Execution``):

* ``RUN_NOW``: a request that finds the queue empty and every instance idle runs
  at once;
* ``DRAIN_ON_LOOP``: otherwise it is queued, and one drain callback, run on the
  loop's next turn, executes everything queued by then in batches
  (``RequestQueue.take`` with no instance busy, so no queue delay is spent).
  Requests to batching models queue this way while the loop is busy
  (``LoopLoad``), so that under load the requests that arrive in one turn of the
  loop share one execution;
* ``INSTANCE_THREADS``: a slower model's requests are queued for its threads.

No thread hand-off or lock wake-up is paid per request on that path (nor a
cross-thread callback, unless ``preserve_ordering`` releases answers in
order). Slower models take the thread path; so does a queue that finds an
instance thread executing (the drain leaves it to the threads).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import operator
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.dataplane import CALLER_GONE
from modelyard.engines.base import (
    BatchedRequest,
    BatchOutcomes,
    Engine,
    TraceTimes,
    batch_requests,
    traced_activities,
)
from modelyard.errors import (
    INTERNAL,
    Code,
    EngineError,
    ModelServerError,
    ModelyardError,
    without_paths,
)
from modelyard.in_order import InOrder
from modelyard.server.batcher import (
    BatchingPolicy,
    QueuedRequest,
    RequestQueue,
)
from modelyard.server.loop_load import LoopLoad
from modelyard.server.ragged import RaggedBatching
from modelyard.server.resource_limiter import InstanceNeeds, ResourceLimiter
from modelyard.server.response_cache import ResponseCache, through_cache
from modelyard.server.scheduling import Submission, answers_once, check_outputs
from modelyard.server.stats import VersionStats

if TYPE_CHECKING:
    from modelyard.server.decoupled import ResponseStream


class Pending(NamedTuple):
    """What a queued request carries for the scheduler (``QueuedRequest.payload``).

    A named tuple: made once per request, for a fraction of a dataclass's cost.
    """

    inputs: dict[str, np.ndarray]
    outputs: list[str]
    future: asyncio.Future[dict[str, np.ndarray]]
    loop: asyncio.AbstractEventLoop
    # a traced request's: enqueued, execution start, compute start and end, execution end
    timing: list[int] | None = None
    # when the front door first saw the request (0: unknown): its counted time starts there
    arrived_ns: int = 0
    # its parameters, for a model that reads requests (None for any other model)
    parameters: dict[str, Any] | None = None
    # for a model that reads requests: whether its caller has gone (None: never known)
    caller_gone: Callable[[], bool] | None = None
    # for a model that reads requests: a traced request's trace context (Submission's)
    trace_context: str | None = None


def settle(answers: list[tuple[asyncio.Future[Any], Any]]) -> None:
    """Answer futures on their own loop: an exception fails its future, else is its result."""
    for future, outcome in answers:
        if not future.done():
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)


_PAYLOAD = operator.attrgetter("payload")
_GENERATIONS = itertools.count(1)
_ROWS = operator.attrgetter("rows")

# a request and what it gets: its outputs, or the error that refused it
_Answer = tuple[QueuedRequest, dict[str, np.ndarray] | BaseException]


def shape_key_of(inputs: dict[str, np.ndarray]) -> tuple[Any, ...]:
    """Requests batch together only when this matches: names, item shapes, dtypes."""
    return tuple((n, a.shape[1:], a.dtype.str) for n, a in inputs.items())


def stack_rows(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays, one after another along the batch axis.

    Arrays of a plain dtype are joined as bytes: one copy that keeps the GIL.
    ``np.concatenate`` costs about 0.4 µs per array, and lets go of the GIL for each large
    one; getting it back waits for the busy event loop's switch interval each time (a
    batch of eight 16-row MLP requests spent 0.3 ms there, against 3.3 ms of compute).
    The arrays of one batch share their dtype and item shape (``shape_key_of``).
    """
    first = arrays[0]
    if not first.dtype.hasobject:  # an object array's buffer holds pointers
        try:
            joined = bytearray().join(arrays)  # type: ignore[arg-type]  # numpy's stubs omit __buffer__
        except TypeError:  # a strided view has no contiguous buffer
            pass
        else:
            rows = sum(map(len, arrays))
            return np.frombuffer(joined, first.dtype).reshape((rows, *first.shape[1:]))
    return np.concatenate(arrays, axis=0)


# a request refused at the queue, before it cost an execution
_REJECTED = (error_rules.QUEUE_FULL.id, error_rules.QUEUE_TIMEOUT.id)


def failure_reason(error: BaseException) -> str:
    """Triton's failure reasons for nv_inference_request_failure."""
    if isinstance(error, ModelyardError):
        if error.code is Code.DEADLINE_EXCEEDED:
            return "CANCELED"
        if error.rule in _REJECTED:
            return "REJECTED"
        if error.layer == "engine":  # a model's own error, whatever its code
            return "BACKEND"
        if error.code is Code.CANCELLED:
            return "CANCELED"
    return "OTHER"


AnswersByLoop = dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]]


def answers_by_loop(
    answers: Iterable[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Any]],
) -> AnswersByLoop:
    """An instance thread's answers, by the loop whose futures they settle: one
    cross-thread call per loop and batch, not one per request."""
    by_loop: AnswersByLoop = {}
    for loop, future, outcome in answers:
        by_loop.setdefault(loop, []).append((future, outcome))
    return by_loop


def settle_on_loops(by_loop: AnswersByLoop, settler: Callable[..., None], *args: Any) -> None:
    """Hand each loop its answers: ``settler(answers, *args)`` runs on that loop."""
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for them
            loop.call_soon_threadsafe(settler, settled, *args)


def start_instance_threads(
    prefix: str, run: Callable[..., None], args: list[tuple[Any, ...]], first: int = 0
) -> list[threading.Thread]:
    """One daemon thread per instance, running ``run(*args[i])``, named ``prefix`` + i
    (counted from ``first``)."""
    threads = [
        threading.Thread(target=run, args=each, name=f"{prefix}{index}", daemon=True)
        for index, each in enumerate(args, start=first)
    ]
    for thread in threads:
        thread.start()
    return threads


def failed_around(model: str, version: int, exc: BaseException) -> ModelServerError:
    """An exception outside the engine's call (the server's own bug): answered, not raised."""
    return ModelServerError.of(
        INTERNAL,
        f"model '{model}' version {version} failed around its execution: "
        f"{type(exc).__name__}: {exc}",
    )


@dataclass(eq=False)
class Retiring:
    """An instance an instance update removed: its thread ends once it has nothing more to
    do (at once, or as the sequences it holds end), then its engine is unloaded."""

    thread: threading.Thread
    engine: Engine
    needs: InstanceNeeds | None
    busy: bool  # it holds sequences, and ends when they do


class InstanceThreads:
    """What a scheduler whose instances are threads has: the version it serves and its
    statistics, the lock and condition the instances wait on, closing (they finish what is
    queued, then stop) and joining them.

    ``updates_instances``: whether ``update_instances`` serves Triton's instance update
    (instances added and removed while the version serves); a scheduler that does not is
    reloaded whole for a change of its instance groups."""

    _threads: list[threading.Thread]
    updates_instances = False

    def __init__(self, model: str, version: int, max_batch_size: int, clock: Clock) -> None:
        self.model = model
        self.version = version
        self.max_batch_size = max_batch_size
        self.stats = VersionStats()
        # the server's response cache, where the model's config enables it (the manager sets
        # it; a sequence's or a decoupled model's requests are never answered from it)
        self.cache: ResponseCache | None = None
        self._clock = clock
        # held as `_lock` (a C-level context manager); `_cond` waits and notifies on it
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._closed = False
        # what each instance holds while it executes (Triton's rate limiter; None: nothing)
        self.needs: list[InstanceNeeds | None] = []
        self._instances_started = 0  # thread names count on across instance updates

    def update_instances(
        self, engines: list[Engine], needs: list[InstanceNeeds | None],
        limiter: ResourceLimiter | None,
    ) -> list[Retiring]:  # fmt: skip
        """Serve on ``engines`` from now (Triton's instance update): an engine not served yet
        gets a thread, one no longer listed finishes what it executes and stops; those
        removed. ``needs``: each engine's, the kept ones' as they were."""
        raise NotImplementedError(f"{type(self).__name__} reloads for an instance update")

    def _start_instances(self, prefix: str, run: Callable[..., None],
                         args: list[tuple[Any, ...]]) -> list[threading.Thread]:  # fmt: skip
        threads = start_instance_threads(prefix, run, args, self._instances_started)
        self._instances_started += len(args)
        return threads

    def close(self) -> None:
        """Stop taking requests; instances finish what is queued, then stop."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> None:
        for thread in self._threads:
            thread.join(timeout)


def unloading(model: str, version: int) -> ModelServerError:
    """A request to a version that takes no more (its scheduler is closed)."""
    return ModelServerError.of(
        error_rules.VERSION_UNLOADING, f"model '{model}' version {version} is unloading"
    )


def engine_error(model: str, version: int, engine: Engine, exc: Exception) -> ModelyardError:
    """What an exception from an engine's execute() means for the requests it ran."""
    if isinstance(exc, ModelyardError):
        return exc
    if engine.refuses_input(exc):
        return EngineError.of(
            error_rules.INPUT_VALUES,
            f"model '{model}' version {version} refused the request's values: "
            f"{type(exc).__name__}: {without_paths(str(exc)).strip()}",
            where=f"the request's input values (GET /v2/models/{model}/config shows the inputs)",
        )
    return EngineError.of(
        error_rules.EXECUTE,
        f"model '{model}' version {version} failed to execute: {type(exc).__name__}: {exc}",
        where=f"the model files of {model}/{version}",
    )


def settle_soon(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], outcome: Any) -> None:
    """Settle one future on its own loop, from any thread (``InOrder``'s release)."""
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
        loop.call_soon_threadsafe(settle, [(future, outcome)])


class Execution(StrEnum):
    """The scheduler's execution strategies; ``Scheduler.execution`` picks one per request."""

    # a slow version: instance threads take batches from the queue (``RequestQueue.take``)
    INSTANCE_THREADS = "instance-threads"
    # a fast version on an idle loop: run at once on the loop, if nothing is queued or
    # executing; else as DRAIN_ON_LOOP
    RUN_NOW = "run-now"
    # a fast version on a busy loop: queued, and run in batches by one drain callback on
    # the loop's next turn, with what arrived in between
    DRAIN_ON_LOOP = "drain-on-loop"


INLINE_THRESHOLD_NS = 100_000  # a model faster than this starts executing on the loop
# ... and goes back to its threads once slower than this. Under load a tiny model's batches
# read 50-130 µs on the loop, against 7-14 µs for onnxruntime alone: the loop's work
# between two executions leaves the caches cold. With one threshold both ways, such a model
# flipped to the thread path and back hundreds of times a minute, each time paying thread
# hand-offs of 200-500 µs behind the busy loop. A model in between stays where it is.
LEAVE_INLINE_NS = 4 * INLINE_THRESHOLD_NS
# Whether a model is fast is the median of its last executions' times. A mean is moved by
# the few executions that something else slowed (one the OS or the VM preempted can read
# milliseconds). A model that is really slow is slow in most executions: it leaves the
# loop after half a window of them.
_WINDOW = 16  # executions; inline execution may start once the window is full


def held_until_queued() -> int:
    """Triton's test hook ``TRITONSERVER_DELAY_SCHEDULER=N``: a model's instances take
    nothing until N requests are queued, once (its QA suite sets it so that requests
    collect before the first batch forms); 0 when unset."""
    try:
        return max(0, int(os.environ.get("TRITONSERVER_DELAY_SCHEDULER", "0")))
    except ValueError:
        return 0


def _asked(payloads: list[Pending]) -> list[str]:
    """The outputs any request of a batch asks for."""
    outputs = payloads[0].outputs
    for payload in payloads:  # requests of one lane share its list of names
        if payload.outputs is not outputs:
            return sorted({name for p in payloads for name in p.outputs})
    return outputs


def _stacked(payloads: list[Pending]) -> tuple[dict[str, np.ndarray], list[str]]:
    """A batch's inputs, each request's rows stacked, and the outputs any of them asks for."""
    outputs = _asked(payloads)
    if len(payloads) == 1:
        return payloads[0].inputs, outputs
    names = payloads[0].inputs
    return {name: stack_rows([p.inputs[name] for p in payloads]) for name in names}, outputs


def _split(
    batch: list[QueuedRequest],
    payloads: list[Pending],
    outputs: list[str],
    results: dict[str, np.ndarray],
) -> list[_Answer]:
    """Each request's rows of a batch's results: the outputs it asked for that the engine
    returned (one it left out is left out of the answer, as Triton leaves it)."""
    if len(batch) == 1:
        return [(batch[0], results)]
    answers: list[_Answer] = []
    offset = 0
    if len(outputs) == 1 and outputs is payloads[0].outputs and outputs[0] in results:
        name = outputs[0]  # the usual: one output
        array = results[name]
        for request in batch:
            end = offset + request.rows
            answers.append((request, {name: array[offset:end]}))
            offset = end
        return answers
    for request, payload in zip(batch, payloads, strict=True):
        end = offset + request.rows
        part = {}
        for name in payload.outputs:  # a loop, not a comprehension: no frame each
            if name in results:
                part[name] = results[name][offset:end]
        offset = end
        answers.append((request, part))
    return answers


class Scheduler(InstanceThreads):
    def __init__(
        self,
        model: str,
        version: int,
        engines: list[Engine],
        policy: BatchingPolicy,
        *,
        clock: Clock = SYSTEM_CLOCK,
        allow_inline: bool = True,
        loop_load: LoopLoad | None = None,
        limiter: ResourceLimiter | None = None,
        needs: list[InstanceNeeds | None] | None = None,
        ragged: RaggedBatching | None = None,
    ) -> None:
        super().__init__(model, version, policy.max_batch_size, clock)
        self.policy = policy
        # Triton's ragged batching (server/ragged.py), where the config asks for it
        self._ragged = ragged
        self._timed = False  # whether a traced request was ever submitted
        # this load of the version: a reload's cache entries are not the old one's
        self._generation = next(_GENERATIONS)
        self._engines = engines
        # engines that read each request of a batch (its rows and parameters)
        self._takes_requests = any(getattr(e, "takes_requests", False) for e in engines)
        # engines that read their batch's trace activities or requests' rows (the same for
        # every instance of a version: one class, one config)
        self._observes = any(e.reports_activities or e.reads_request_rows for e in engines)
        self._queue = RequestQueue(model, version, policy)
        self._executing = 0
        self._in_order = InOrder() if policy.preserve_ordering else None
        self._held_until_queued = held_until_queued()
        # a model that waits for its preferred batch holds lone requests: never inline
        # a model that reads requests gets a ragged batch's shapes from an instance thread
        self._allow_inline = (
            allow_inline
            and not (policy.toward_preferred and policy.max_queue_delay_ns)
            and not self._held_until_queued
            and not (ragged is not None and self._takes_requests)
        )
        # batching models run inline only while the loop is idle; under load they queue
        self._loop_load = loop_load if policy.batching else None
        self._inline_ok = False
        self._inline_busy = False
        self._drain_loop: asyncio.AbstractEventLoop | None = None  # where a drain is pending
        # the loop that submits, while it runs in the thread that ran it last
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._samples: deque[int] = deque(maxlen=_WINDOW)  # execution times, ns
        # Triton's rate limiter: what each instance holds while it executes (None: nothing)
        self._limiter = limiter
        self.needs = needs if limiter is not None and needs else [None] * len(engines)
        # the threads of instances an instance update removed: each stops at its next look
        self._retired: set[threading.Thread] = set()
        self._threads = self._start_instances(
            f"{model}-v{version}-", self._run, list(zip(engines, self.needs, strict=True))
        )

    updates_instances = True

    def update_instances(
        self, engines: list[Engine], needs: list[InstanceNeeds | None],
        limiter: ResourceLimiter | None,
    ) -> list[Retiring]:  # fmt: skip
        limited = limiter is not None and any(needs)
        needs = needs if limited else [None] * len(engines)
        threads = dict(zip(map(id, self._engines), self._threads, strict=True))
        kept = {id(engine) for engine in engines}
        added = [(engine, need) for engine, need in zip(engines, needs, strict=True)
                 if id(engine) not in threads]  # fmt: skip
        started = iter(self._start_instances(f"{self.model}-v{self.version}-", self._run, added))
        with self._lock:
            retiring = [
                Retiring(thread, engine, need, busy=False)
                for engine, thread, need in zip(self._engines, self._threads, self.needs,
                                                strict=True)
                if id(engine) not in kept
            ]  # fmt: skip
            self._retired.update(r.thread for r in retiring)
            self._threads = [threads.get(id(engine)) or next(started) for engine in engines]
            self._engines, self.needs = engines, needs
            self._limiter = limiter if limited else None
            if limited:  # the event loop never waits for resources
                self._allow_inline = self._inline_ok = False
            self._cond.notify_all()
        return retiring

    @property
    def execution(self) -> Execution:
        """How a request submitted now runs."""
        if not self._inline_ok:
            return Execution.INSTANCE_THREADS
        if self._loop_load is not None and self._loop_load.busy:
            return Execution.DRAIN_ON_LOOP
        return Execution.RUN_NOW

    @property
    def pending(self) -> int:
        """Requests queued or executing."""
        return len(self._queue) + self._executing

    @property
    def queued(self) -> int:
        return len(self._queue)

    decoupled = False  # answers each request once (ModelScheduler)

    def submit(self, request: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        """Queue one request (``scheduling.Submission``); must be called from the event loop
        thread."""
        if request.timing is not None:
            self._timed = True
        if self.cache is not None:  # answered from it, or run and kept
            return through_cache(
                self.cache, request, self._generation, self.stats, self._clock,
                lambda: self._submit(request), self.model, self.version,
            )  # fmt: skip
        return self._submit(request)

    def submit_stream(self, request: Submission) -> ResponseStream:
        raise answers_once(self.model)

    def _submit(self, submitted: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        inputs, outputs, rows = submitted.inputs, submitted.outputs, submitted.rows
        timing, arrived_ns = submitted.timing, submitted.arrived_ns
        loop = self._loop
        if loop is None or not loop.is_running() or self._loop_thread != threading.get_ident():
            # asyncio.get_running_loop makes a getpid system call on Python 3.11: once
            loop = self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        future: asyncio.Future[dict[str, np.ndarray]] = loop.create_future()
        execution = self.execution
        if execution is Execution.RUN_NOW and self._try_inline(
            inputs, outputs, rows, future, timing, arrived_ns
        ):
            return future
        shape_key, client_deadline = submitted.shape_key, submitted.deadline
        if shape_key is None or self._ragged is not None:
            ragged = self._ragged
            shape_key = shape_key_of(inputs) if ragged is None else ragged.shape_key(inputs)
        request = QueuedRequest(  # by position: a third of the cost of keywords, per request
            rows,
            shape_key,
            0,  # enqueued_ns: set by the queue
            None,  # deadline_ns: set by the queue
            int(client_deadline * 1e9) if client_deadline else None,
            1,  # level: set by the queue
            0,  # seq: set by the queue
            Pending(inputs, outputs, future, loop, timing, arrived_ns, submitted.parameters,
                    None if submitted.parameters is None else CALLER_GONE.get(),
                    submitted.trace_context),
        )  # fmt: skip
        with self._lock:
            if self._closed:
                raise unloading(self.model, self.version)
            try:
                self._queue.add(
                    request, self._clock.monotonic_ns(), submitted.priority, submitted.timeout_us
                )
            except ModelServerError as error:
                self.stats.record_failure(failure_reason(error), 0)
                raise
            if request.deadline_ns is not None or request.client_deadline_ns is not None:
                self._expire_in_time(loop, request)
            if execution is Execution.INSTANCE_THREADS:
                if self._queue.worth_a_look(request):
                    self._cond.notify()
                return future
        # RUN_NOW that found the instances busy, or DRAIN_ON_LOOP
        if self._drain_loop is not loop:  # none scheduled, or on a loop that has gone
            self._drain_loop = loop
            loop.call_soon(self._drain)
        return future

    def _expire_in_time(self, loop: asyncio.AbstractEventLoop, request: QueuedRequest) -> None:
        """Answer ``request`` at its timeout even while every instance executes (an idle
        instance would wake for it anyway)."""
        times = [t for t in (request.deadline_ns, request.client_deadline_ns) if t is not None]
        delay_s = (min(times) - self._clock.monotonic_ns()) / 1e9
        loop.call_later(min(max(delay_s, 0.0), 3600.0) + 0.001, self._expire_due)

    def _expire_due(self) -> None:
        with self._lock:
            now = self._clock.monotonic_ns()
            for expired in self._queue.expire(now):
                self._finish(expired.request, expired.error, now)

    def _drain(self) -> None:
        """Execute on the event loop what was queued since the last turn, in batches."""
        self._drain_loop = None
        clock = self._clock
        while True:
            with self._lock:
                if not self._inline_ok or self._executing or self._closed:
                    self._cond.notify_all()  # the instance threads take the rest
                    return
                now = clock.monotonic_ns()
                for expired in self._queue.expire(now):
                    self._finish(expired.request, expired.error, now, on_loop=True)
                batch = self._queue.take(now, 0, hold=False)
                if not isinstance(batch, list):
                    return
                self._executing += 1
                self._inline_busy = True
            answers: list[_Answer] = []
            try:
                answers = self._execute(self._engines[0], batch, on_loop=True)
            except Exception as exc:  # outside the engine call: answer, and go on
                answers = self._failed_around(batch, exc)
            finally:
                with self._lock:
                    self._executing -= 1
                    self._inline_busy = False
            self._deliver(answers, on_loop=True)

    def _try_inline(
        self,
        inputs: dict[str, np.ndarray],
        outputs: list[str],
        rows: int,
        future: asyncio.Future[dict[str, np.ndarray]],
        timing: list[int] | None = None,
        arrived_ns: int = 0,
    ) -> bool:
        if self._executing or self._queue.size:  # read unlocked: a hint, checked again below
            return False
        with self._lock:
            if self._closed or self._executing or len(self._queue) or self._inline_busy:
                return False
            self._executing += 1
            self._inline_busy = True
        clock = self._clock
        start_ns = clock.monotonic_ns()
        try:
            if self._ragged is None:
                results = self._engines[0].execute(inputs, outputs)
                check_outputs(
                    self.model, self.version, results, outputs, rows, self.max_batch_size > 0
                )
            else:
                assembled = self._ragged.assemble([inputs], stack_rows)
                results = self._engines[0].execute(assembled, outputs)
                results = self._ragged_split(results, [inputs], [outputs], [rows])[0]
        except Exception as exc:
            error = engine_error(self.model, self.version, self._engines[0], exc)
            self.stats.record_failure(failure_reason(error), clock.monotonic_ns() - start_ns)
            future.set_exception(error)
        else:
            end_ns = clock.monotonic_ns()
            self._observe(end_ns - start_ns)
            self.stats.record_execution(
                [min(arrived_ns, start_ns) or start_ns], start_ns, rows, 0, end_ns - start_ns, 0,
                end_ns, int(clock.wall() * 1000),
            )  # fmt: skip
            if timing is not None:
                timing += (start_ns, start_ns, start_ns, end_ns, end_ns)
            future.set_result(results)
        finally:
            with self._lock:
                self._executing -= 1
                self._inline_busy = False
                if len(self._queue):  # wake a thread only when there is work for it
                    self._cond.notify()
        return True

    def _observe(self, compute_ns: int) -> None:
        """Track the execution time that decides whether inline execution pays."""
        samples = self._samples
        samples.append(compute_ns)  # from the loop and instance threads: whole under the GIL
        if not self._allow_inline or len(samples) < _WINDOW:
            return
        median = sorted(samples)[_WINDOW // 2]
        self._inline_ok = median < (LEAVE_INLINE_NS if self._inline_ok else INLINE_THRESHOLD_NS)

    # ---- instance threads -------------------------------------------------

    def _next_batch(self) -> list[QueuedRequest] | None:
        clock = self._clock
        with self._lock:
            while True:
                if self._retired and threading.current_thread() in self._retired:
                    self._retired.discard(threading.current_thread())
                    return None
                now = clock.monotonic_ns()
                for expired in self._queue.expire(now):
                    self._finish(expired.request, expired.error, now)
                if self._held_until_queued:
                    if len(self._queue) < self._held_until_queued and not self._closed:
                        self._cond.wait(0.01)
                        continue
                    self._held_until_queued = 0
                decision = None if self._inline_busy else self._queue.take(now, self._executing)
                if isinstance(decision, list):
                    self._executing += 1
                    return decision
                if decision is None and self._closed and not self._inline_busy:
                    return None
                expiry = self._queue.next_deadline_ns()
                wake = decision if decision is not None else expiry
                if wake is not None and expiry is not None:
                    wake = min(wake, expiry)
                # at most an hour: a caller's timeout of centuries overflows the wait and would
                # end the thread
                wait_s = None if wake is None else min(max(0.0, (wake - now) / 1e9), 3600.0)
                self._cond.wait(None if wait_s is None else wait_s + 1e-4)

    def _has_queued(self) -> bool:
        """Whether requests wait (an instance keeps its rate-limiter turn then)."""
        return len(self._queue) > 0

    def _run(self, engine: Engine, needs: InstanceNeeds | None = None) -> None:
        limiter = self._limiter
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            answers: list[_Answer] = []
            try:
                if limiter is not None and needs is not None:
                    with limiter.held(needs, more=self._has_queued):  # waits for resources
                        answers = self._execute(engine, batch, on_loop=False)
                else:
                    answers = self._execute(engine, batch, on_loop=False)
            except Exception as exc:  # outside the engine call: answer, and keep the thread
                answers = self._failed_around(batch, exc)
            finally:
                with self._lock:
                    self._executing -= 1
                    self._queue.answered(sum(map(_ROWS, batch)), self._clock.monotonic_ns())
                    self._cond.notify()
            self._deliver(answers, on_loop=False)

    def _failed_around(self, batch: list[QueuedRequest], exc: Exception) -> list[_Answer]:
        error = failed_around(self.model, self.version, exc)
        now = self._clock.monotonic_ns()
        return [self._failed(request, error, now) for request in batch]

    def _execute(self, engine: Engine, batch: list[QueuedRequest], on_loop: bool) -> list[_Answer]:
        """Run one batch; the answers, with their statistics already recorded.

        The caller delivers them once the execution no longer counts as pending, so a
        client that reads the statistics after its answer finds its request in them.
        """
        clock = self._clock
        start_ns = clock.monotonic_ns()
        payloads: list[Pending] = list(map(_PAYLOAD, batch))  # map: no bytecode per request
        ragged = self._ragged
        if ragged is None:
            inputs, outputs = _stacked(payloads)
        else:
            inputs = ragged.assemble([p.inputs for p in payloads], stack_rows)
            outputs = _asked(payloads)
        total_rows = sum(map(_ROWS, batch))
        # on an instance thread, an engine that computes on it is timed by the thread's CPU
        # time too: its wall time there also counts waits for the GIL behind a busy event
        # loop (200-500 µs against 30 µs of compute for a tiny model under load), which
        # would keep it off the loop for as long as the load lasts
        by_cpu = not on_loop and engine.computes_on_caller
        cpu_start = time.thread_time_ns() if by_cpu else 0
        infer_start = clock.monotonic_ns()
        try:
            results = self._run_engine(engine, batch, payloads, inputs, outputs)
        except BatchOutcomes as each:
            return self._each_answered(batch, payloads, each.outcomes, start_ns, infer_start)
        except Exception as exc:
            return self._batch_failed(engine, batch, exc, on_loop)
        try:
            if ragged is None:
                # a model that reads requests answers each with a response of its own, sent as
                # it made it (Triton's python backend checks no rows)
                if not self._takes_requests:
                    check_outputs(self.model, self.version, results, outputs, total_rows,
                                  self.max_batch_size > 0)  # fmt: skip
            else:
                parts = self._ragged_split(
                    results,
                    [p.inputs for p in payloads],
                    [p.outputs for p in payloads],
                    [r.rows for r in batch],
                )
        except Exception as exc:
            return self._batch_failed(engine, batch, exc, on_loop)
        infer_end = clock.monotonic_ns()
        self._observe(time.thread_time_ns() - cpu_start if by_cpu else infer_end - infer_start)
        if ragged is None:
            answers = _split(batch, payloads, outputs, results)
        else:
            answers = list(zip(batch, parts, strict=True))
        end_ns = clock.monotonic_ns()
        self.stats.record_execution(
            [
                min(p.arrived_ns, r.enqueued_ns) or r.enqueued_ns
                for r, p in zip(batch, payloads, strict=True)
            ],
            start_ns,
            total_rows,
            infer_start - start_ns,
            infer_end - infer_start,
            end_ns - infer_end,
            end_ns,
            int(clock.wall() * 1000),
        )
        if self._timed:  # once any request was traced: each says its times
            for request, payload in zip(batch, payloads, strict=True):
                timing = payload.timing
                if timing is not None:
                    timing += (request.enqueued_ns, start_ns, infer_start, infer_end, end_ns)
        return answers

    def _each_answered(
        self,
        batch: list[QueuedRequest],
        payloads: list[Pending],
        outcomes: list[dict[str, np.ndarray] | ModelyardError],
        start_ns: int,
        infer_start: int,
    ) -> list[_Answer]:
        """A batch whose requests the engine answered each on its own (a python-backend
        model's responses, some with an error or with rows of their own): each request its
        outcome, as the model made it; the execution counts for those that succeeded."""
        end_ns = self._clock.monotonic_ns()
        answers: list[_Answer] = []
        succeeded: list[int] = []
        for request, payload, outcome in zip(batch, payloads, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                answers.append(self._failed(request, outcome, end_ns))
                continue
            part = {name: outcome[name] for name in payload.outputs if name in outcome}
            answers.append((request, part))
            succeeded.append(min(payload.arrived_ns, request.enqueued_ns) or request.enqueued_ns)
        if succeeded:
            self.stats.record_execution(
                succeeded, start_ns, sum(map(_ROWS, batch)), infer_start - start_ns,
                end_ns - infer_start, 0, end_ns, int(self._clock.wall() * 1000),
            )  # fmt: skip
        return answers

    def _ragged_split(
        self,
        results: dict[str, np.ndarray],
        inputs: list[dict[str, np.ndarray]],
        outputs: list[list[str]],
        rows: list[int],
    ) -> list[dict[str, np.ndarray]]:
        """Each request's part of a ragged batch's results (``RaggedBatching.split``), the
        outputs split by rows checked as any batch's."""
        assert self._ragged is not None
        by_rows = [name for name in results if name not in self._ragged.scattered]
        check_outputs(self.model, self.version, results, by_rows, sum(rows), True)
        where = f"the model files of {self.model}/{self.version}"
        return self._ragged.split(results, inputs, outputs, rows, where)

    def _run_engine(
        self,
        engine: Engine,
        batch: list[QueuedRequest],
        payloads: list[Pending],
        inputs: dict[str, np.ndarray],
        outputs: list[str],
    ) -> dict[str, np.ndarray]:
        if not self._takes_requests:
            if not self._observes:
                return engine.execute(inputs, outputs)
            traced = [p.timing.activities for p in payloads if isinstance(p.timing, TraceTimes)]
            rows = self._described(batch, payloads, parameters=False)
            with traced_activities(traced), batch_requests(rows):
                return engine.execute(inputs, outputs)
        # Triton's python backend: each request as it came (a ragged input in its own shape)
        with batch_requests(self._described(batch, payloads, parameters=True)):
            return engine.execute(inputs, outputs)

    def _described(
        self, batch: list[QueuedRequest], payloads: list[Pending], parameters: bool
    ) -> list[BatchedRequest]:
        """Each request of a batch as the engine reads it: its rows and a ragged input's
        shape, and with ``parameters`` its parameters, cancellation and trace context."""
        ragged = self._ragged.ragged if self._ragged is not None else frozenset()
        return [
            BatchedRequest(
                r.rows,
                p.parameters if parameters else None,
                0,
                0,
                p.caller_gone if parameters else None,
                {n: p.inputs[n].shape for n in ragged if n in p.inputs} if ragged else None,
                p.trace_context if parameters else None,
            )
            for r, p in zip(batch, payloads, strict=True)
        ]

    def _batch_failed(
        self, engine: Engine, batch: list[QueuedRequest], exc: Exception, on_loop: bool
    ) -> list[_Answer]:
        """The answers to a batch whose execution raised: where the engine refused one
        request's values, each request runs again alone, so only those at fault fail."""
        error = engine_error(self.model, self.version, engine, exc)
        if len(batch) > 1 and error.code is Code.INVALID_ARGUMENT:
            return [answer for one in batch for answer in self._execute(engine, [one], on_loop)]
        end_ns = self._clock.monotonic_ns()
        return [self._failed(request, error, end_ns) for request in batch]

    def _failed(self, request: QueuedRequest, error: BaseException, end_ns: int) -> _Answer:
        self.stats.record_failure(failure_reason(error), end_ns - request.enqueued_ns)
        return (request, error)

    def _finish(
        self, request: QueuedRequest, error: BaseException, end_ns: int, on_loop: bool = False
    ) -> None:
        """Answer a request that never reached an engine (its timeout passed in the queue)."""
        self._deliver([self._failed(request, error, end_ns)], on_loop)

    def _deliver(self, answers: list[_Answer], on_loop: bool) -> None:
        in_order = self._in_order
        if in_order is not None:
            for request, outcome in answers:
                pending = request.payload
                in_order.release(
                    request.seq,
                    functools.partial(settle_soon, pending.loop, pending.future, outcome),
                )
            return
        if on_loop:  # the futures' own loop, running: settled in place
            settle([(request.payload.future, outcome) for request, outcome in answers])
            return
        by_loop = answers_by_loop(
            (request.payload.loop, request.payload.future, outcome) for request, outcome in answers
        )
        settle_on_loops(by_loop, self._settle_handed, self._clock.monotonic_ns())

    def _settle_handed(
        self, settled: list[tuple[asyncio.Future[Any], Any]], handed_ns: int
    ) -> None:
        """Answers an instance thread handed to the event loop: the time they waited for it
        counts as the requests' (a wait the server imposes), before they are answered."""
        waited_ns = self._clock.monotonic_ns() - handed_ns
        succeeded = sum(1 for _, outcome in settled if not isinstance(outcome, BaseException))
        if succeeded and waited_ns > 0:
            self.stats.record_wait(succeeded, waited_ns)
        settle(settled)
