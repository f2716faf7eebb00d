"""The scheduler under real threads: every caller gets exactly its own rows back."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.clock import FakeClock
from modelyard.engines.base import Engine, LoadContext, Signature
from modelyard.errors import Code, ModelyardError
from modelyard.server import scheduler as scheduler_module
from modelyard.server.batcher import BatchingPolicy
from modelyard.server.loop_load import LoopLoad
from modelyard.server.scheduler import Execution, Scheduler
from modelyard.server.scheduling import Submission
from modelyard.server.stats import VersionStats


class AffineEngine(Engine):
    """y = 2x + row sum; sleeps a little so batches form under load."""

    name = "affine"
    extra = "all"
    default_filenames = ()

    def __init__(self, jitter: float = 0.0) -> None:
        self.jitter = jitter
        self.batch_rows: list[int] = []

    def load(self, ctx: LoadContext) -> Signature | None:
        return None

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        x = inputs["x"]
        self.batch_rows.append(len(x))
        time.sleep(0.002 + random.random() * self.jitter)
        return {"y": x * 2 + x.sum(axis=1, keepdims=True)}


def make_scheduler(config_text: str, engines: list[Engine]) -> Scheduler:
    config = text_format.Parse(config_text, mc.ModelConfig())
    return Scheduler("affine", 1, engines, BatchingPolicy.from_config(config))


def test_concurrent_callers_with_mixed_shapes_get_their_own_rows() -> None:
    engines = [AffineEngine(), AffineEngine()]
    scheduler = make_scheduler("max_batch_size: 32 dynamic_batching {}", engines)
    rng = np.random.default_rng(1)
    requests = []
    for i in range(300):
        width = 4 if i % 3 else 6
        rows = int(rng.integers(1, 5))
        requests.append(rng.standard_normal((rows, width)).astype(np.float32))

    async def scenario() -> list[dict[str, np.ndarray]]:
        futures = [scheduler.submit(Submission({"x": x}, ["y"], len(x))) for x in requests]
        return list(await asyncio.gather(*futures))

    try:
        results = asyncio.run(scenario())
    finally:
        scheduler.close()
        scheduler.join(5)
    for x, result in zip(requests, results, strict=True):
        np.testing.assert_allclose(result["y"], x * 2 + x.sum(axis=1, keepdims=True), rtol=1e-6)
    executed = [rows for engine in engines for rows in engine.batch_rows]
    assert sum(executed) == sum(len(x) for x in requests)
    assert max(executed) > 4  # requests were batched together
    assert max(executed) <= 32
    assert scheduler.stats.success_count == 300
    assert scheduler.stats.inference_count == sum(len(x) for x in requests)


def test_preserve_ordering_answers_in_arrival_order() -> None:
    engines = [AffineEngine(jitter=0.01) for _ in range(3)]
    scheduler = make_scheduler(
        "max_batch_size: 2 dynamic_batching { preserve_ordering: true }", engines
    )
    order: list[int] = []

    async def scenario() -> None:
        futures = []
        for i in range(60):
            future = scheduler.submit(Submission({"x": np.full((1, 2), i, np.float32)}, ["y"], 1))
            future.add_done_callback(lambda _f, i=i: order.append(i))
            futures.append(future)
        await asyncio.gather(*futures)

    try:
        asyncio.run(scenario())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert order == list(range(60))


class ThreadRecordingEngine(Engine):
    name = "recording"
    extra = "all"
    default_filenames = ()

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.threads: list[str] = []

    def load(self, ctx: LoadContext) -> Signature | None:
        return None

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        self.threads.append(threading.current_thread().name)
        if self.delay:
            time.sleep(self.delay)
        return {"y": inputs["x"] + 1}


def _sequential(scheduler: Scheduler, count: int) -> None:
    async def scenario() -> None:
        for i in range(count):
            result = await scheduler.submit(
                Submission({"x": np.full((1, 2), i, np.float32)}, ["y"], 1)
            )
            assert result["y"].tolist() == [[i + 1.0, i + 1.0]]

    asyncio.run(scenario())


def _batching_model_called_in_turn(engine: Engine, count: int) -> Scheduler:
    scheduler = make_scheduler("max_batch_size: 4 dynamic_batching {}", [engine])
    try:
        _sequential(scheduler, count)
    finally:
        scheduler.close()
        scheduler.join(5)
    return scheduler


def test_a_fast_model_runs_inline_once_it_has_shown_it_is_fast() -> None:
    engine = ThreadRecordingEngine()
    scheduler = _batching_model_called_in_turn(engine, 40)
    main = threading.current_thread().name
    assert all(name != main for name in engine.threads[:16])  # observed on the thread first
    assert engine.threads[-1] == main  # then inline on the event loop
    assert scheduler.stats.success_count == 40


class StallingEngine(ThreadRecordingEngine):
    """Fast, except once: the call that the OS or the VM preempted for a while."""

    def __init__(self, stall_at: int) -> None:
        super().__init__()
        self.stall_at = stall_at

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        if len(self.threads) == self.stall_at:
            time.sleep(0.02)
        return super().execute(inputs, outputs)


def test_one_stalled_execution_does_not_move_a_fast_model_off_the_loop() -> None:
    engine = StallingEngine(stall_at=25)
    _batching_model_called_in_turn(engine, 40)
    main = threading.current_thread().name
    assert engine.threads[25] == main  # the stalled call itself ran inline
    assert engine.threads[26:] == [main] * 14  # and so did every call after it


class ClockedEngine(ThreadRecordingEngine):
    """Takes ``fast_us`` per execution on a fake clock, and ``slow_us`` from call ``slow_from``."""

    def __init__(self, clock: FakeClock, fast_us: int, slow_us: int, slow_from: int) -> None:
        super().__init__()
        self.clock = clock
        self.fast_us, self.slow_us, self.slow_from = fast_us, slow_us, slow_from

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        slow = len(self.threads) >= self.slow_from
        self.clock.advance((self.slow_us if slow else self.fast_us) / 1e6)
        return super().execute(inputs, outputs)


def _clocked_model_called_in_turn(engine: ClockedEngine, count: int) -> None:
    config = text_format.Parse("max_batch_size: 4 dynamic_batching {}", mc.ModelConfig())
    scheduler = Scheduler(
        "affine", 1, [engine], BatchingPolicy.from_config(config), clock=engine.clock
    )
    try:
        _sequential(scheduler, count)
    finally:
        scheduler.close()
        scheduler.join(5)


def test_a_model_on_the_loop_stays_there_until_it_is_slower_than_the_leaving_threshold() -> None:
    # under load a fast model's executions on the loop read a few times slower than alone
    # (cold caches); between the two thresholds it stays where it is, not flipping back
    engine = ClockedEngine(FakeClock(), fast_us=20, slow_us=300, slow_from=20)
    _clocked_model_called_in_turn(engine, 60)
    main = threading.current_thread().name
    assert 100 < 300 < scheduler_module.LEAVE_INLINE_NS // 1000
    assert main not in engine.threads[:16]  # observed on the thread first
    assert engine.threads[16:] == [main] * 44  # then on the loop, through the slower calls


def test_a_model_that_becomes_slow_leaves_the_loop_after_half_a_window() -> None:
    engine = ClockedEngine(FakeClock(), fast_us=20, slow_us=500, slow_from=20)
    _clocked_model_called_in_turn(engine, 50)
    main = threading.current_thread().name
    assert engine.threads[16:28] == [main] * 12  # the first 8 slow calls still ran inline
    assert main not in engine.threads[28:]  # the median turned: back on the thread


class WaitingEngine(ThreadRecordingEngine):
    """Computes for a moment, then waits 2 ms without the CPU (as for the GIL, or a device)."""

    def __init__(self, computes_on_caller: bool) -> None:
        super().__init__(delay=0.002)
        self.computes_on_caller = computes_on_caller


def test_an_engine_computing_on_its_thread_is_timed_by_that_threads_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # on the thread path, a fast engine's wall time can be mostly waiting for the GIL;
    # an engine that computes on the calling thread is judged by its CPU time there.
    # The 2 ms wait itself costs a thread 30-160 µs of CPU on a small VM (the sleep's and
    # the GIL's system calls), around the real 100 µs threshold; a 1 ms one (leaving the
    # loop at 4 ms) keeps the test about which clock is read.
    monkeypatch.setattr(scheduler_module, "INLINE_THRESHOLD_NS", 1_000_000)
    monkeypatch.setattr(scheduler_module, "LEAVE_INLINE_NS", 4_000_000)
    on_caller = WaitingEngine(computes_on_caller=True)
    elsewhere = WaitingEngine(computes_on_caller=False)
    _batching_model_called_in_turn(on_caller, 24)
    _batching_model_called_in_turn(elsewhere, 24)
    main = threading.current_thread().name
    assert main not in on_caller.threads[:16] and main in on_caller.threads
    assert main not in elsewhere.threads  # its 2 ms may be a device's: never on the loop


def test_a_slow_model_and_an_opted_out_model_never_run_inline() -> None:
    slow = ThreadRecordingEngine(delay=0.0005)
    fast = ThreadRecordingEngine()
    schedulers = [
        make_scheduler("max_batch_size: 4", [slow]),
        Scheduler(
            "affine",
            1,
            [fast],
            BatchingPolicy.from_config(text_format.Parse("max_batch_size: 4", mc.ModelConfig())),
            allow_inline=False,
        ),
    ]
    try:
        for scheduler in schedulers:
            _sequential(scheduler, 30)
    finally:
        for scheduler in schedulers:
            scheduler.close()
            scheduler.join(5)
    main = threading.current_thread().name
    assert main not in slow.threads and main not in fast.threads
    assert all(s.execution is Execution.INSTANCE_THREADS for s in schedulers)


def test_a_fast_model_waiting_for_its_preferred_batch_never_runs_inline() -> None:
    # a lone request waits the delay for a partner (on an instance thread): inline
    # execution would run it at once
    engine = ThreadRecordingEngine()
    scheduler = make_scheduler(
        "max_batch_size: 4 dynamic_batching "
        "{ preferred_batch_size: [2] max_queue_delay_microseconds: 1000 }",
        [engine],
    )
    try:
        started = time.monotonic()
        _sequential(scheduler, 24)
        waited = time.monotonic() - started
    finally:
        scheduler.close()
        scheduler.join(5)
    assert threading.current_thread().name not in engine.threads
    assert scheduler.execution is Execution.INSTANCE_THREADS
    assert waited >= 24 * 0.001  # each lone request waited out the delay


class BatchRecordingEngine(ThreadRecordingEngine):
    def __init__(self) -> None:
        super().__init__()
        self.runs: list[tuple[str, int]] = []

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        self.runs.append((threading.current_thread().name, len(inputs["x"])))
        return super().execute(inputs, outputs)


def test_tritons_delay_scheduler_hook_holds_the_instances_until_that_many_are_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRITONSERVER_DELAY_SCHEDULER", "3")
    engine = BatchRecordingEngine()
    scheduler = make_scheduler("max_batch_size: 8 dynamic_batching {}", [engine])

    async def scenario() -> list[dict[str, np.ndarray]]:
        futures = [scheduler.submit(Submission({"x": np.full((1, 2), i, np.float32)}, ["y"], 1))
                   for i in range(2)]  # fmt: skip
        await asyncio.sleep(0.1)
        assert not any(f.done() for f in futures) and engine.runs == []
        futures.append(
            scheduler.submit(Submission({"x": np.full((1, 2), 2, np.float32)}, ["y"], 1))
        )
        answers = list(await asyncio.gather(*futures))
        # once started it holds nothing: a lone request runs alone
        answers.append(
            await scheduler.submit(Submission({"x": np.full((1, 2), 3, np.float32)}, ["y"], 1))
        )
        return answers

    try:
        answers = asyncio.run(scenario())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert [a["y"].tolist() for a in answers] == [[[i + 1.0, i + 1.0]] for i in range(4)]
    assert [rows for _, rows in engine.runs] == [3, 1]


class _BusyLoop(LoopLoad):
    """A loop load that always reads busy, as under heavy traffic."""

    def __init__(self) -> None:
        super().__init__()
        self.busy = True


def _fast_model_under_load(engine: Engine) -> Scheduler:
    """A batching scheduler that has shown it is fast, on a loop that reads busy."""
    config = text_format.Parse("max_batch_size: 8 dynamic_batching {}", mc.ModelConfig())
    # its executions timed on a clock that stands still: fast however busy the machine is
    scheduler = Scheduler(
        "affine", 1, [engine], BatchingPolicy.from_config(config), clock=FakeClock()
    )
    assert scheduler.execution is Execution.INSTANCE_THREADS  # nothing shown yet
    _sequential(scheduler, 20)  # shows it is fast: it runs on the event loop from here on
    assert scheduler.execution is Execution.RUN_NOW
    scheduler._loop_load = _BusyLoop()  # requests queue for the drain
    assert scheduler.execution is Execution.DRAIN_ON_LOOP
    _until_instance_threads_wait(scheduler)
    return scheduler


def _until_instance_threads_wait(scheduler: Scheduler) -> None:
    """Wait until each instance thread waits for work: one that the machine delays after
    its last execution would otherwise take the next requests from the queue itself
    before the loop drains them (correct serving, but not what these tests look at)."""
    deadline = time.monotonic() + 5
    while len(scheduler._cond._waiters) < len(scheduler._threads):
        assert time.monotonic() < deadline, "the instance threads never waited for work"
        time.sleep(0.001)


def test_a_fast_batching_model_under_load_batches_on_the_event_loop() -> None:
    engine = BatchRecordingEngine()
    scheduler = _fast_model_under_load(engine)
    try:

        async def burst() -> list[dict[str, np.ndarray]]:
            futures = [
                scheduler.submit(Submission({"x": np.full((1, 2), i, np.float32)}, ["y"], 1))
                for i in range(20)
            ]
            return list(await asyncio.gather(*futures))

        results = asyncio.run(burst())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert [r["y"].tolist() for r in results] == [[[i + 1.0, i + 1.0]] for i in range(20)]
    main = threading.current_thread().name
    burst_runs = engine.runs[-3:]  # 20 requests of one turn: batches of 8, 8 and 4
    assert [rows for _, rows in burst_runs] == [8, 8, 4]
    assert all(thread == main for thread, _ in burst_runs)  # no thread hand-off
    assert scheduler.stats.success_count == 40
    assert scheduler.stats.execution_count == len(engine.runs)


class _Unsliceable:
    """An engine output that breaks the engine contract only when split."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, index: object) -> None:
        raise TypeError("output cannot be sliced")


class FlakyEngine(BatchRecordingEngine):
    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, Any]:
        result = super().execute(inputs, outputs)
        return {"y": _Unsliceable(len(inputs["x"]))} if self.broken else result


def test_a_failure_around_the_engine_call_answers_every_caller_and_serving_goes_on() -> None:
    engine = FlakyEngine()
    scheduler = _fast_model_under_load(engine)
    try:

        async def burst() -> list[Any]:
            futures = [
                scheduler.submit(Submission({"x": np.full((1, 2), i, np.float32)}, ["y"], 1))
                for i in range(5)
            ]
            return list(await asyncio.gather(*futures, return_exceptions=True))

        engine.broken = True
        failed = asyncio.run(burst())
        engine.broken = False
        answered = asyncio.run(burst())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert all(isinstance(f, ModelyardError) for f in failed), failed
    assert all("rule=model-server/internal" in f.line() for f in failed)
    assert [r["y"].tolist() for r in answered] == [[[i + 1.0, i + 1.0]] for i in range(5)]


def test_a_drain_left_pending_by_a_closed_loop_does_not_stall_the_next_loop() -> None:
    scheduler = _fast_model_under_load(BatchRecordingEngine())
    try:
        first = asyncio.new_event_loop()

        def submit_and_stop() -> None:  # queues, then the loop stops before its drain runs
            scheduler.submit(Submission({"x": np.zeros((1, 2), np.float32)}, ["y"], 1))
            first.stop()

        first.call_soon(submit_and_stop)
        first.run_forever()
        first.close()

        async def ask() -> dict[str, np.ndarray]:
            future = scheduler.submit(Submission({"x": np.ones((1, 2), np.float32)}, ["y"], 1))
            return await asyncio.wait_for(future, 5)

        result = asyncio.run(ask())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert result["y"].tolist() == [[2.0, 2.0]]


class _SlowToRecord(VersionStats):
    """Statistics whose recording of an execution takes 50 ms."""

    def record_execution(self, *args: Any) -> None:
        time.sleep(0.05)
        super().record_execution(*args)


def test_a_caller_reads_its_own_request_in_the_statistics_once_answered() -> None:
    slow = make_scheduler("max_batch_size: 4", [ThreadRecordingEngine(delay=0.001)])
    fast = _fast_model_under_load(BatchRecordingEngine())  # answered by the loop's drain
    seen: list[tuple[int, int]] = []

    async def one_by_one(scheduler: Scheduler) -> None:
        before = scheduler.stats.success_count
        for i in range(3):
            await scheduler.submit(Submission({"x": np.full((1, 2), i, np.float32)}, ["y"], 1))
            seen.append((scheduler.stats.success_count - before, scheduler.pending))

    try:
        for scheduler in (slow, fast):
            scheduler.stats = _SlowToRecord()
            asyncio.run(one_by_one(scheduler))
    finally:
        for scheduler in (slow, fast):
            scheduler.close()
            scheduler.join(5)
    assert seen == [(1, 0), (2, 0), (3, 0)] * 2


def test_a_timeout_of_centuries_does_not_end_the_instance_thread() -> None:
    policy = "default_queue_policy { allow_timeout_override: true }"
    config = f"max_batch_size: 8 dynamic_batching {{ {policy} }}"
    scheduler = make_scheduler(config, [AffineEngine()])
    scheduler._inline_busy = True  # the loop executes: the thread waits on the queue's deadline
    try:

        async def queued() -> dict[str, np.ndarray]:
            future = scheduler.submit(
                Submission({"x": np.ones((1, 2), np.float32)}, ["y"], 1, timeout_us=2**62)
            )
            await asyncio.sleep(0.05)  # the thread waits out a wait of 146,000 years, capped
            assert all(thread.is_alive() for thread in scheduler._threads)
            with scheduler._lock:
                scheduler._inline_busy = False
                scheduler._cond.notify_all()
            return await asyncio.wait_for(future, 5)

        assert asyncio.run(queued())["y"].tolist() == [[4.0, 4.0]]
    finally:
        scheduler.close()
        scheduler.join(5)


class PickyEngine(AffineEngine):
    """Refuses negative values as sklearn refuses NaN: a ValueError, which means bad input."""

    def __init__(self) -> None:
        super().__init__()
        self.refused_rows: list[int] = []

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        if (inputs["x"] < 0).any():
            self.refused_rows.append(len(inputs["x"]))
            raise ValueError("Input X contains a negative value")
        return super().execute(inputs, outputs)

    def refuses_input(self, error: Exception) -> bool:
        return isinstance(error, ValueError)


def test_a_request_with_bad_values_fails_alone_with_400_and_its_batch_runs_without_it() -> None:
    engine = PickyEngine()
    scheduler = make_scheduler("max_batch_size: 32 dynamic_batching {}", [engine])
    try:

        async def burst() -> list[Any]:
            futures = [
                scheduler.submit(
                    Submission({"x": np.full((1, 2), -1.0 if i == 5 else i, np.float32)}, ["y"], 1)
                )
                for i in range(12)
            ]
            return list(await asyncio.gather(*futures, return_exceptions=True))

        results = asyncio.run(burst())
    finally:
        scheduler.close()
        scheduler.join(5)
    error = results[5]
    assert isinstance(error, ModelyardError) and error.code is Code.INVALID_ARGUMENT
    assert error.rule == "engine/input-values"
    assert "refused the request's values: ValueError: Input X contains a negative" in error.line()
    for i, result in enumerate(results):
        if i != 5:
            assert result["y"].tolist() == [[4.0 * i, 4.0 * i]], i
    assert engine.refused_rows[0] > 1 and engine.refused_rows[-1] == 1  # a batch, then alone


def test_other_engine_exceptions_stay_internal_errors() -> None:
    scheduler = make_scheduler("max_batch_size: 4", [PickyEngine()])
    try:

        async def one() -> None:
            await scheduler.submit(Submission({"z": np.ones((1, 2), np.float32)}, ["y"], 1))

        with pytest.raises(ModelyardError) as info:
            asyncio.run(one())
    finally:
        scheduler.close()
        scheduler.join(5)
    assert info.value.code is Code.INTERNAL and info.value.rule == "engine/execute"
