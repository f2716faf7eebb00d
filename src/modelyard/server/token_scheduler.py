"""The scheduler of an encoder: its requests queued as parts and batched by tokens.

A ``Scheduler`` (server/scheduler.py) whose queue forms batches under a budget of padded
tokens (server/batcher.py) from parts that server/token_batching.py makes: a text
model's texts one by one, tokenized when queued; any other encoder's requests whole. A
batch is padded to its own longest part, executed, pooled where the model pools, and
each part's answer kept until its request has all of them: the request is answered
once, its rows in the order it sent them. A request's parts share its priority, timeout
and deadline; one part that fails fails the request, and the parts still queued of a
request that failed or whose caller went are never computed. Encoders are never run on
the event loop: their executions take milliseconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from typing import Any

import numpy as np

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.engines.base import Engine
from modelyard.errors import ModelServerError
from modelyard.server.batcher import DEFAULT_EXECUTION_TOKENS, BatchingPolicy, QueuedRequest
from modelyard.server.embedding_cache import text_key
from modelyard.server.loop_load import LoopLoad
from modelyard.server.resource_limiter import InstanceNeeds, ResourceLimiter
from modelyard.server.scheduler import (
    Scheduler,
    _Answer,
    failure_reason,
    unloading,
)
from modelyard.server.scheduling import Submission, check_outputs
from modelyard.server.token_batching import (
    ExecutionCost,
    PartPending,
    TokenBatching,
    TokenRequest,
    join_parts,
)


class TokenScheduler(Scheduler):
    def __init__(
        self,
        model: str,
        version: int,
        engines: list[Engine],
        policy: BatchingPolicy,
        tokens: TokenBatching,
        *,
        clock: Clock = SYSTEM_CLOCK,
        loop_load: LoopLoad | None = None,
        limiter: ResourceLimiter | None = None,
        needs: list[InstanceNeeds | None] | None = None,
    ) -> None:
        self.tokens = tokens
        self.cost = ExecutionCost(DEFAULT_EXECUTION_TOKENS)
        self._groups = itertools.count(1)
        policy = dataclasses.replace(
            policy,
            max_batch_tokens=tokens.max_batch_tokens,
            max_padding_ratio=tokens.max_padding_ratio,
        )
        super().__init__(
            model, version, engines, policy, clock=clock, allow_inline=False,
            loop_load=loop_load, limiter=limiter, needs=needs,
        )  # fmt: skip

    def _submit(self, submitted: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        inputs, outputs, rows = submitted.inputs, submitted.outputs, submitted.rows
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, np.ndarray]] = loop.create_future()
        tokens = self.tokens
        clock = self._clock
        start_ns = clock.monotonic_ns()
        answers: list[dict[str, np.ndarray] | None] = [None] * rows
        keys: list[bytes] = []
        missing = list(range(rows))
        cache = tokens.cache
        if cache is not None and tokens.text is not None:
            names = tokens.text.text_inputs
            columns = [inputs[name].reshape(rows, -1)[:, 0] for name in names]
            keys = [text_key([_as_bytes(column[row]) for column in columns]) for row in missing]
            answers = [cache.get(key) for key in keys]
            missing = [row for row, answer in enumerate(answers) if answer is None]
            if not missing:
                future.set_result(join_parts(answers, outputs))  # type: ignore[arg-type]
                self.stats.record_text_cache(rows, 0, clock.monotonic_ns() - start_ns)
                return future
            self.stats.record_text_cache(rows - len(missing), len(missing), 0)
            if len(missing) < rows:
                inputs = {name: array[missing] for name, array in inputs.items()}
        parts = tokens.split(self.model, inputs, len(missing))
        # a text model's parts are its missing rows, one each; any other request is one part
        indexes = missing if tokens.text is not None else [0]
        request = TokenRequest(
            future, loop, outputs, answers, len(parts), submitted.timing, submitted.arrived_ns
        )
        group = next(self._groups)
        deadline_ns = int(submitted.deadline * 1e9) if submitted.deadline else None
        queued = [
            QueuedRequest(
                part.rows,
                tokens.shape_key(part),
                0,
                None,
                deadline_ns,
                payload=PartPending(request, index, part, keys[index] if keys else None),
                tokens=part.tokens,
                group=group,
            )
            for index, part in zip(indexes, parts, strict=True)
        ]
        with self._lock:
            if self._closed:
                raise unloading(self.model, self.version)
            was_empty = not self._queue.size
            try:
                self._queue.add_all(
                    queued, clock.monotonic_ns(), submitted.priority, submitted.timeout_us
                )
            except ModelServerError as error:
                self.stats.record_failure(failure_reason(error), 0)
                raise
            if was_empty or self._queue.worth_a_look(queued[-1]):
                self._cond.notify()
        return future

    def _execute(self, engine: Engine, batch: list[QueuedRequest], on_loop: bool) -> list[_Answer]:
        clock = self._clock
        start_ns = clock.monotonic_ns()
        # the parts of a request that failed, or whose caller went, are not computed
        live = [r for r in batch if not r.payload.request.failed and not r.payload.future.done()]
        if not live:
            return []
        tokens = self.tokens
        pendings: list[PartPending] = [r.payload for r in live]
        parts = [pending.part for pending in pendings]
        outputs = tokens.engine_outputs or sorted(
            {name for pending in pendings for name in pending.request.outputs}
        )
        cpu_start = time.thread_time_ns()  # the execution's own cost: no wait for the GIL
        inputs, longest = tokens.stack(parts)
        rows = sum(part.rows for part in parts)
        infer_start = clock.monotonic_ns()
        try:
            results = engine.execute(inputs, outputs)
            check_outputs(
                self.model, self.version, results, outputs, rows, self.max_batch_size > 0
            )
            answers = tokens.answers(parts, results)
        except Exception as exc:  # one text's values may fail the batch: each part alone
            return self._batch_failed(engine, live, exc, on_loop)
        infer_end = clock.monotonic_ns()
        self._observe(infer_end - infer_start)
        # what an execution costs beyond its tokens, which the queue trades against padding
        self.cost.observe(rows * longest, (time.thread_time_ns() - cpu_start) / 1e9)
        self._queue.execution_tokens = self.cost.overhead_tokens()
        done = self._settled(live, pendings, answers)
        end_ns = clock.monotonic_ns()
        self.stats.record_execution(
            [min(q.payload.request.arrived_ns, q.enqueued_ns) or q.enqueued_ns for q, _ in done],
            start_ns,
            rows,
            infer_start - start_ns,
            infer_end - infer_start,
            end_ns - infer_end,
            end_ns,
            int(clock.wall() * 1000),
        )
        self.stats.record_tokens(sum(p.rows * p.tokens for p in parts), rows * longest)
        if self._timed:
            for queued, _ in done:
                timing = queued.payload.request.timing
                if timing is not None:
                    timing += (queued.enqueued_ns, start_ns, infer_start, infer_end, end_ns)
        return done

    def _settled(
        self,
        live: list[QueuedRequest],
        pendings: list[PartPending],
        answers: list[dict[str, np.ndarray]],
    ) -> list[_Answer]:
        """Each part's answer kept (and cached); the requests that now have all of theirs."""
        cache = self.tokens.cache
        done: list[_Answer] = []
        for queued, pending, answer in zip(live, pendings, answers, strict=True):
            request = pending.request
            if cache is not None and pending.key is not None:
                cache.put(pending.key, answer)
            if request.settled(pending.index, answer):
                done.append((queued, request.joined()))
        return done

    def _failed(self, request: QueuedRequest, error: BaseException, end_ns: int) -> _Answer:
        if request.payload.request.fail():  # a request is counted once, whatever its parts
            self.stats.record_failure(failure_reason(error), end_ns - request.enqueued_ns)
        return (request, error)


def _as_bytes(item: Any) -> bytes:
    return item if isinstance(item, bytes) else str(item).encode("utf-8")

