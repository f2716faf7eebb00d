"""Load generation in worker processes, over tritonclient's asyncio clients.

Each worker process runs one event loop and one client. Closed loop: N tasks,
each sending its next request when the previous one returns. Open loop: a
Poisson arrival schedule at a fixed rate; latency is measured from the
*scheduled* send time, so a server that falls behind cannot hide its queueing
by slowing the generator down (coordinated omission).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import random
import re
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from modelyard.types import numpy_dtype

_RULE = re.compile(r"rule=([^;\s]+)")


@dataclass(frozen=True, slots=True)
class Target:
    url: str  # host:port
    protocol: str  # "http" | "grpc"
    model: str
    version: str = ""
    rows: int = 1


@dataclass(frozen=True, slots=True)
class Step:
    mode: str  # "closed" | "open"
    level: float  # concurrency (closed) or requests/s (open), for this worker
    duration: float
    seed: int = 0


@dataclass(slots=True)
class StepResult:
    latencies: list[float] = field(default_factory=list)  # seconds, successes only
    errors: dict[str, int] = field(default_factory=dict)  # rule (or status) -> count
    examples: dict[str, str] = field(default_factory=dict)  # rule -> its first error line
    sent: int = 0
    elapsed: float = 0.0
    max_lag: float = 0.0  # open loop: how late the generator sent, at worst


def error_key(exc: BaseException) -> str:
    message = str(exc)
    match = _RULE.search(message)
    if match:
        return match.group(1)
    status = getattr(exc, "status", None)
    code = status() if callable(status) else None
    return f"{type(exc).__name__}:{code}" if code else type(exc).__name__


def example_tensors(metadata: dict[str, Any], rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs of the model's declared shapes (-1 dims become 1)."""
    rng = np.random.default_rng(seed)
    batched = bool(metadata["inputs"]) and metadata["inputs"][0]["shape"][:1] == [-1]
    arrays = {}
    for spec in metadata["inputs"]:
        dims = [int(d) for d in spec["shape"]]
        if batched:
            dims = [rows, *dims[1:]]
        shape = [d if d > 0 else 1 for d in dims]
        datatype = spec["datatype"]
        if datatype == "BYTES":
            array = np.array([b"modelyard"] * int(np.prod(shape)), dtype=object).reshape(shape)
        elif datatype == "BOOL":
            array = rng.random(shape) > 0.5
        else:
            array = (rng.random(shape) * 4).astype(numpy_dtype(datatype))
        arrays[spec["name"]] = array
    return arrays


class _Client:
    def __init__(self, target: Target) -> None:
        self.target = target
        if target.protocol == "grpc":
            import tritonclient.grpc as proto
            import tritonclient.grpc.aio as aio
        else:
            import tritonclient.http as proto
            import tritonclient.http.aio as aio
        self._proto = proto
        self.client = aio.InferenceServerClient(target.url)
        self.inputs: list[Any] = []

    async def prepare(self, seed: int) -> None:
        if self.target.protocol == "grpc":
            metadata = await self.client.get_model_metadata(
                self.target.model, self.target.version, as_json=True
            )
        else:
            metadata = await self.client.get_model_metadata(self.target.model, self.target.version)
        for name, array in example_tensors(metadata, self.target.rows, seed).items():
            datatype = next(i["datatype"] for i in metadata["inputs"] if i["name"] == name)
            item = self._proto.InferInput(name, list(array.shape), datatype)
            if self.target.protocol == "grpc":
                item.set_data_from_numpy(array)
            else:
                item.set_data_from_numpy(array, binary_data=True)
            self.inputs.append(item)

    async def infer(self) -> None:
        await self.client.infer(self.target.model, self.inputs, model_version=self.target.version)

    async def close(self) -> None:
        await self.client.close()


async def _send(client: _Client, result: StepResult, since: float) -> None:
    """One request: its latency from ``since``, or its error, goes into ``result``."""
    try:
        await client.infer()
    except Exception as exc:
        key = error_key(exc)
        result.errors[key] = result.errors.get(key, 0) + 1
        if key not in result.examples:
            result.examples[key] = str(exc)[:1000]
        return
    result.latencies.append(time.perf_counter() - since)


async def _closed_loop(client: _Client, step: Step, result: StepResult) -> None:
    end = time.perf_counter() + step.duration

    async def user() -> None:
        while True:
            start = time.perf_counter()
            if start >= end:
                return
            result.sent += 1
            await _send(client, result, start)

    await asyncio.gather(*(user() for _ in range(max(1, int(step.level)))))


async def _open_loop(client: _Client, step: Step, result: StepResult) -> None:
    rng = random.Random(step.seed)
    start = time.perf_counter()
    end = start + step.duration
    scheduled = start
    tasks: set[asyncio.Task[None]] = set()
    while True:
        scheduled += rng.expovariate(step.level) if step.level > 0 else step.duration
        if scheduled >= end:
            break
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            result.max_lag = max(result.max_lag, -delay)
        result.sent += 1
        task = asyncio.create_task(_send(client, result, scheduled))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)


async def _run_steps(target: Target, conn: Connection, seed: int) -> None:
    client = _Client(target)
    try:
        await client.prepare(seed)
        conn.send(("ready", None))
        while True:
            command, step = await asyncio.get_running_loop().run_in_executor(None, conn.recv)
            if command == "stop":
                return
            result = StepResult()
            started = time.perf_counter()
            if step.mode == "closed":
                await _closed_loop(client, step, result)
            else:
                await _open_loop(client, step, result)
            result.elapsed = time.perf_counter() - started
            conn.send(("result", result))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        await client.close()


def _worker_main(target: Target, conn: Connection, seed: int) -> None:
    try:
        import uvloop

        uvloop.run(_run_steps(target, conn, seed))
    except ImportError:
        asyncio.run(_run_steps(target, conn, seed))


class WorkerPool:
    """P load processes that run the same step together and report raw samples."""

    def __init__(self, target: Target, processes: int) -> None:
        ctx = mp.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs = []
        for index in range(processes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, args=(target, child, index), daemon=True)
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            kind, payload = conn.recv()
            if kind != "ready":
                self.close()
                raise RuntimeError(f"load worker failed to start: {payload}")

    @property
    def size(self) -> int:
        return len(self._conns)

    def start(self, steps: list[Step]) -> None:
        """Run one step per worker (their shares of the level) at the same time."""
        for conn, step in zip(self._conns, steps, strict=True):
            conn.send(("run", step))

    def collect(self) -> StepResult:
        merged = StepResult()
        for conn in self._conns:
            kind, payload = conn.recv()
            if kind != "result":
                raise RuntimeError(f"load worker failed: {payload}")
            merged.latencies.extend(payload.latencies)
            merged.sent += payload.sent
            merged.elapsed = max(merged.elapsed, payload.elapsed)
            merged.max_lag = max(merged.max_lag, payload.max_lag)
            for key, count in payload.errors.items():
                merged.errors[key] = merged.errors.get(key, 0) + count
            for key, line in payload.examples.items():
                merged.examples.setdefault(key, line)
        return merged

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(BrokenPipeError, OSError):
                conn.send(("stop", None))
        for proc in self._procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
