"""The scheduler of a decoupled model: zero, one or many responses per request.

A model with ``model_transaction_policy { decoupled: true }`` (a python-backend model
that answers through ``request.get_response_sender()``) does not return its answer:
it sends responses, during ``execute`` or later from threads of its own, and marks
the last with the FINAL flag. Each request gets a ``ResponseStream``, an asyncio
queue its responses reach on the event loop; the gRPC ``ModelStreamInfer`` front
door writes them as they come. Instance threads take one request at a time from a
FIFO queue and return to it as soon as ``execute`` returns; the request stays
open, and counts as pending, until its FINAL flag.

A plain call (HTTP infer, gRPC ModelInfer, an ensemble step) has one answer to give,
so it is refused at once with the error line saying to stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any, NamedTuple

import numpy as np

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.errors import Code, ModelServerError, ModelyardError
from modelyard.server.stats import VersionStats


class StreamItem(NamedTuple):
    """One response of a decoupled model's request: outputs or an error, and whether it is
    the request's last (a FINAL flag sent alone has neither outputs nor error)."""

    outputs: dict[str, np.ndarray] | None
    error: ModelyardError | None
    final: bool


ResponseStream = asyncio.Queue[StreamItem]


class _Request(NamedTuple):
    inputs: dict[str, np.ndarray]
    outputs: list[str]
    stream: ResponseStream
    loop: asyncio.AbstractEventLoop
    enqueued_ns: int


def decoupled_refusal(model: str) -> ModelServerError:
    return ModelServerError(
        f"model '{model}' is decoupled (many responses per request): a call that takes one "
        "answer cannot reach it",
        code=Code.UNIMPLEMENTED,
        rule="model-server/decoupled",
        where="stream the request over gRPC ModelStreamInfer (tritonclient: "
        "start_stream and async_stream_infer)",
    )


class DecoupledScheduler:
    def __init__(
        self, model: str, version: int, engines: list[Any], *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.model = model
        self.version = version
        self.max_batch_size = 0  # one request per execute()
        self.stats = VersionStats()
        self.cache = None
        self._clock = clock
        self._queue: deque[_Request] = deque()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._closed = False
        self._open = 0  # requests taken, not yet FINAL
        self._threads = [
            threading.Thread(
                target=self._run,
                args=(engine,),
                name=f"{model}-v{version}-dec{index}",
                daemon=True,
            )
            for index, engine in enumerate(engines)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pending(self) -> int:
        return len(self._queue) + self._open

    def submit(self, *args: Any, **kwargs: Any) -> asyncio.Future[dict[str, np.ndarray]]:
        raise decoupled_refusal(self.model)

    def submit_stream(
        self, inputs: dict[str, np.ndarray], outputs: list[str], arrived_ns: int = 0
    ) -> ResponseStream:
        """Queue a request; its responses arrive on the returned queue (event loop thread)."""
        loop = asyncio.get_running_loop()
        stream: ResponseStream = asyncio.Queue()
        now = self._clock.monotonic_ns()
        with self._lock:
            if self._closed:
                raise ModelServerError(
                    f"model '{self.model}' version {self.version} is unloading",
                    code=Code.UNAVAILABLE,
                    rule="model-server/unloading",
                    where="retry: the model's next version takes the request",
                )
            self._queue.append(_Request(inputs, outputs, stream, loop, min(arrived_ns, now) or now))
            self._cond.notify()
        return stream

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> None:
        for thread in self._threads:
            thread.join(timeout)

    def _run(self, engine: Any) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                request = self._queue.popleft()
                self._open += 1
            self._execute(engine, request)

    def _execute(self, engine: Any, request: _Request) -> None:
        clock = self._clock
        start_ns = clock.monotonic_ns()
        finished = threading.Event()
        failed: list[ModelyardError] = []

        def deliver(
            outputs: dict[str, np.ndarray] | None, error: ModelyardError | None, final: bool
        ) -> None:
            if finished.is_set():
                return
            if error is not None:
                failed.append(error)
            if final:
                finished.set()
                with self._lock:
                    self._open -= 1
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody reads the stream
                request.loop.call_soon_threadsafe(
                    request.stream.put_nowait, StreamItem(outputs, error, final)
                )

        try:
            engine.execute_decoupled(request.inputs, request.outputs, deliver)
        except Exception as exc:  # the engine's contract says it never raises: still answer
            deliver(
                None,
                ModelServerError(
                    f"model '{self.model}' version {self.version} failed around its execution: "
                    f"{type(exc).__name__}: {exc}",
                    code=Code.INTERNAL,
                    rule="model-server/internal",
                    where="report this as a bug with the server log",
                ),
                True,
            )
        end_ns = clock.monotonic_ns()
        if failed and finished.is_set():
            self.stats.record_failure("BACKEND", end_ns - request.enqueued_ns)
        else:
            self.stats.record_execution(
                [request.enqueued_ns],
                start_ns,
                1,
                0,
                end_ns - start_ns,
                0,
                end_ns,
                int(clock.wall() * 1000),
            )
