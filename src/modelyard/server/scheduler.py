"""The scheduler of one model version: a queue feeding N model instances.

Each instance is a thread that owns one engine object. Requests are queued
from the event loop and answered through asyncio futures. With batching on
(``max_batch_size > 0`` and ``dynamic_batching`` in the config), a free
instance takes every queued request whose tensors can share its batch, up to
``max_batch_size`` rows, stacks them along the batch axis, executes once and
splits the outputs back. Batching is greedy: a request on an idle instance is
executed at once, and batches grow exactly when instances are busy, so low
load pays no queue delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.engines.base import Engine
from modelyard.errors import Code, EngineError, ModelServerError, ModelyardError


@dataclass(slots=True)
class VersionStats:
    """Counters in Triton's statistics shape (nanoseconds)."""

    success_count: int = 0
    success_ns: int = 0
    fail_count: int = 0
    fail_ns: int = 0
    queue_count: int = 0
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0
    inference_count: int = 0  # rows
    execution_count: int = 0  # engine calls
    last_inference_ms: int = 0
    batch_stats: dict[int, list[int]] = field(
        default_factory=dict
    )  # size -> [count, in, infer, out]


@dataclass(slots=True)
class _Pending:
    inputs: dict[str, np.ndarray]
    outputs: list[str]
    rows: int
    shape_key: tuple[Any, ...]
    future: asyncio.Future[dict[str, np.ndarray]]
    loop: asyncio.AbstractEventLoop
    enqueued_ns: int
    deadline: float | None


def _resolve(p: _Pending, result: dict[str, np.ndarray]) -> None:
    if not p.future.done():
        p.future.set_result(result)


def _reject(p: _Pending, error: BaseException) -> None:
    if not p.future.done():
        p.future.set_exception(error)


class Scheduler:
    def __init__(
        self,
        model: str,
        version: int,
        engines: list[Engine],
        *,
        max_batch_size: int,
        batching: bool,
        max_queue_size: int = 0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.model = model
        self.version = version
        self.max_batch_size = max_batch_size
        self.batching = batching and max_batch_size > 0
        self.max_queue_size = max_queue_size
        self.stats = VersionStats()
        self._stats_lock = threading.Lock()
        self._clock = clock
        self._engines = engines
        self._queue: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._executing = 0
        self._threads = [
            threading.Thread(
                target=self._run, args=(engine,), name=f"{model}-v{version}-{i}", daemon=True
            )
            for i, engine in enumerate(engines)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pending(self) -> int:
        return len(self._queue) + self._executing

    def submit(
        self,
        inputs: dict[str, np.ndarray],
        outputs: list[str],
        rows: int,
        deadline: float | None = None,
    ) -> asyncio.Future[dict[str, np.ndarray]]:
        """Queue one request; must be called from the event loop thread."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, np.ndarray]] = loop.create_future()
        shape_key = tuple((n, a.shape[1:], a.dtype.str) for n, a in inputs.items())
        pending = _Pending(
            inputs, outputs, rows, shape_key, future, loop, self._clock.monotonic_ns(), deadline
        )
        with self._cond:
            if self._closed:
                raise ModelServerError(
                    f"model '{self.model}' version {self.version} is unloading",
                    code=Code.UNAVAILABLE,
                    rule="model-server/version-unloading",
                    where="send the request without a version, or to a ready version",
                )
            if self.max_queue_size and len(self._queue) >= self.max_queue_size:
                raise ModelServerError(
                    f"queue of model '{self.model}' version {self.version} is full "
                    f"({len(self._queue)}/{self.max_queue_size} requests)",
                    code=Code.UNAVAILABLE,
                    rule="model-server/queue-full",
                    where=f"dynamic_batching.default_queue_policy.max_queue_size in "
                    f"{self.model}/config.pbtxt, or add instances (instance_group.count)",
                    retry_after=0.05,
                )
            self._queue.append(pending)
            self._cond.notify()
        return future

    def close(self) -> None:
        """Stop taking requests; instances finish what is queued, then stop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> None:
        for thread in self._threads:
            thread.join(timeout)

    def _take_batch(self) -> list[_Pending] | None:
        with self._cond:
            while not self._queue:
                if self._closed:
                    return None
                self._cond.wait()
            first = self._queue.popleft()
            batch = [first]
            if self.batching and self._queue:
                rows = first.rows
                keep: deque[_Pending] = deque()
                while self._queue:
                    candidate = self._queue.popleft()
                    if (
                        candidate.shape_key == first.shape_key
                        and rows + candidate.rows <= self.max_batch_size
                    ):
                        batch.append(candidate)
                        rows += candidate.rows
                    else:
                        keep.append(candidate)
                        if rows >= self.max_batch_size:
                            break
                keep.extend(self._queue)
                self._queue = keep
            self._executing += 1
            return batch

    def _run(self, engine: Engine) -> None:
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            try:
                self._execute(engine, batch)
            finally:
                with self._cond:
                    self._executing -= 1

    def _execute(self, engine: Engine, batch: list[_Pending]) -> None:
        clock = self._clock
        start_ns = clock.monotonic_ns()
        now = start_ns / 1e9
        live: list[_Pending] = []
        for p in batch:
            if p.deadline is not None and now > p.deadline:
                waited = (start_ns - p.enqueued_ns) / 1e9
                error = ModelServerError(
                    f"request to model '{self.model}' version {self.version} timed out after "
                    f"{waited * 1000:.1f} ms in queue; it was dropped before execution",
                    code=Code.DEADLINE_EXCEEDED,
                    rule="model-server/queue-timeout",
                    where="raise the request timeout, or add instances (instance_group.count)",
                )
                self._finish(p, error, start_ns)
            else:
                live.append(p)
        if not live:
            return
        outputs = sorted({name for p in live for name in p.outputs})
        if len(live) == 1:
            inputs = live[0].inputs
        else:
            inputs = {
                name: np.concatenate([p.inputs[name] for p in live], axis=0)
                for name in live[0].inputs
            }
        total_rows = sum(p.rows for p in live)
        infer_start = clock.monotonic_ns()
        try:
            results = engine.execute(inputs, outputs)
            self._check_rows(results, outputs, total_rows)
        except Exception as exc:
            error = exc if isinstance(exc, ModelyardError) else self._engine_error(exc)
            end_ns = clock.monotonic_ns()
            for p in live:
                self._finish(p, error, end_ns)
            return
        infer_end = clock.monotonic_ns()
        if len(live) == 1:
            self._finish(live[0], results, infer_end)
        else:
            offset = 0
            for p in live:
                part = {n: results[n][offset : offset + p.rows] for n in p.outputs}
                offset += p.rows
                self._finish(p, part, infer_end)
        end_ns = clock.monotonic_ns()
        self._record_execution(live, start_ns, infer_start, infer_end, end_ns, total_rows)

    def _check_rows(self, results: dict[str, np.ndarray], outputs: list[str], rows: int) -> None:
        for name in outputs:
            if name not in results:
                raise EngineError(
                    f"engine returned no output '{name}' for model '{self.model}'",
                    code=Code.INTERNAL,
                    rule="engine/contract",
                )
            if self.max_batch_size > 0 and len(results[name]) != rows:
                raise EngineError(
                    f"engine returned {len(results[name])} rows of '{name}' for {rows} rows in",
                    code=Code.INTERNAL,
                    rule="engine/contract",
                )

    def _engine_error(self, exc: Exception) -> EngineError:
        return EngineError(
            f"model '{self.model}' version {self.version} failed to execute: "
            f"{type(exc).__name__}: {exc}",
            code=Code.INTERNAL,
            rule="engine/execute",
            where=f"the model files of {self.model}/{self.version}",
        )

    def _finish(
        self, p: _Pending, outcome: dict[str, np.ndarray] | BaseException, end_ns: int
    ) -> None:
        stats = self.stats
        elapsed = end_ns - p.enqueued_ns
        callback: Callable[[_Pending, Any], None]
        if isinstance(outcome, BaseException):
            with self._stats_lock:
                stats.fail_count += 1
                stats.fail_ns += elapsed
            callback = _reject
        else:
            callback = _resolve
        # a closed event loop means nobody waits for this answer any more
        with contextlib.suppress(RuntimeError):
            p.loop.call_soon_threadsafe(callback, p, outcome)

    def _record_execution(
        self,
        live: list[_Pending],
        start_ns: int,
        infer_start: int,
        infer_end: int,
        end_ns: int,
        rows: int,
    ) -> None:
        input_ns = infer_start - start_ns
        infer_ns = infer_end - infer_start
        output_ns = end_ns - infer_end
        with self._stats_lock:
            self._add_execution(live, start_ns, end_ns, rows, input_ns, infer_ns, output_ns)

    def _add_execution(
        self,
        live: list[_Pending],
        start_ns: int,
        end_ns: int,
        rows: int,
        input_ns: int,
        infer_ns: int,
        output_ns: int,
    ) -> None:
        stats = self.stats
        for p in live:
            stats.success_count += 1
            stats.success_ns += end_ns - p.enqueued_ns
            stats.queue_count += 1
            stats.queue_ns += start_ns - p.enqueued_ns
            stats.compute_input_ns += input_ns
            stats.compute_infer_ns += infer_ns
            stats.compute_output_ns += output_ns
        stats.inference_count += rows
        stats.execution_count += 1
        stats.last_inference_ms = int(self._clock.wall() * 1000)
        entry = stats.batch_stats.setdefault(rows, [0, 0, 0, 0])
        entry[0] += 1
        entry[1] += input_ns
        entry[2] += infer_ns
        entry[3] += output_ns


def run_warmup(engine: Engine, samples: list[tuple[dict[str, np.ndarray], list[str], int]]) -> None:
    """Execute warm-up samples on one engine before its version takes traffic."""
    for inputs, outputs, count in samples:
        for _ in range(max(1, count)):
            engine.execute(inputs, outputs)


WarmupFactory = Callable[[], list[tuple[dict[str, np.ndarray], list[str], int]]]
