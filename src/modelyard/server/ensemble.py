"""Ensembles (``platform: "ensemble"``): a graph of models run inside the server.

An ensemble's config names steps; each step maps ensemble tensors onto one
model's inputs (``input_map {step_input: ensemble_tensor}``) and that model's
outputs back onto ensemble tensors (``output_map {step_output: ensemble_tensor}``).

The data flow a config alone decides (each tensor written once, every input used,
every output written, no cycle) is checked with the rest of the config as the
repository is read (``modelfiles/triton_checks.py``). ``EnsembleGraph.build``
checks the rest when the ensemble loads, against the step models' completed
configs: every step model (and version) loaded, every name a step maps known,
each tensor's datatype and shape the same at both ends, batch sizes, no step fed
by different decoupled steps. A wiring error leads with Triton's words where Triton
refuses it too, then says it as ``ensemble 'X': ...; rule=model-server/ensemble``.

``EnsembleScheduler`` has the same ``submit`` as ``Scheduler``. A request runs
as one task on the event loop: a step starts as soon as its inputs exist, so
independent steps run concurrently, and each step is an ordinary ``submit`` to
its model's own scheduler, resolved through the manager at that moment (so a
step model's new version takes the next step). Batching, instances and
statistics of step models are theirs. A failing step fails the request with
that step's own error, unchanged. An output a step's model left out of its response
is left out of the ensemble's answer, and a later step runs without it where the
input it feeds is optional (Triton's placeholder tensor); one it needs fails the
request, naming the step that left it out. An optional ensemble input the request leaves
out is left out of the steps it feeds alike (Triton's null tensor). A request that asks
for some of the outputs runs only the steps they need (Triton prunes the rest so).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import threading
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.engines.base import TracedSteps, TraceTimes
from modelyard.errors import Code, ModelServerError, ModelyardError
from modelyard.modelfiles.config import ModelSpec, TensorConfig, compile_spec, read_model_config
from modelyard.server.decoupled import ResponseStream, StreamItem, decoupled_refusal
from modelyard.server.model_version import ModelVersion, _read_labels
from modelyard.server.response_cache import ResponseCache, through_cache
from modelyard.server.scheduler import unloading
from modelyard.server.scheduling import Submission, answers_once
from modelyard.server.sequence_policy import check_sequence, one_row_per_request
from modelyard.server.stats import VersionStats
from modelyard.types import V2_TO_CONFIG

ENSEMBLE = "ensemble"

# each load of an ensemble keys its cache entries apart; negative, so that no plain
# model's load (the scheduler counts those up from 1) has the same number
_LOADS = itertools.count(1)

Resolve = Callable[[str, str | None], ModelVersion]


def in_ensemble(model: str, error: ModelyardError) -> ModelyardError:
    """A step's error as the ensemble answers it. A step's refusal in Triton's words is
    named, as Triton names it, by the ensemble it failed in (clients match on that start);
    modelyard's own line, and a step model's routing error, pass as the step wrote them."""
    if not error.triton:
        return error
    named = ModelServerError(
        f"in ensemble '{model}', {error.detail}",
        code=error.code,
        rule=error.rule,
        where=error.where,
        retry_after=error.retry_after,
        triton=True,
    )
    named.layer = error.layer
    return named


def ensemble_error(model: str, detail: str, triton: str = "") -> ModelServerError:
    """An ensemble's wiring error: modelyard's ``detail``, after Triton's text for it where
    Triton refuses the same wiring."""
    said = f"ensemble '{model}': {detail}"
    return ModelServerError.of(
        error_rules.ENSEMBLE,
        f"{triton} ({said})" if triton else said,
        where=f"ensemble_scheduling in {model}/config.pbtxt",
        triton=bool(triton),
    )


@dataclass(frozen=True, slots=True)
class EnsembleStep:
    index: int  # 1-based, as a person counts the steps in config.pbtxt
    model: str
    version: str | None  # None: the highest ready version at call time
    inputs: dict[str, str]  # step model input -> ensemble tensor
    outputs: dict[str, str]  # step model output -> ensemble tensor

    def describe(self) -> str:
        return f"step {self.index} (model '{self.model}')"


@dataclass(frozen=True, slots=True)
class _Tensor:
    """One end of an ensemble tensor: who produces or consumes it, and as what."""

    owner: str
    config: TensorConfig
    batched: bool
    model: str  # the model it is a tensor of (the ensemble's own name for its inputs, outputs)


def _compatible(a: _Tensor, b: _Tensor) -> bool:
    if a.batched != b.batched or a.config.reshape is not None or b.config.reshape is not None:
        return True  # shapes differ by design there; the step checks them per request
    if len(a.config.dims) != len(b.config.dims):
        return False
    return all(x == y or -1 in (x, y) for x, y in zip(a.config.dims, b.config.dims, strict=True))


@dataclass(frozen=True, slots=True)
class EnsembleGraph:
    name: str
    steps: tuple[EnsembleStep, ...]
    batched: bool = False
    output_dims: dict[str, tuple[int, ...]] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()  # the ensemble's own inputs
    decoupled: bool = False  # a step's model is decoupled: so is the ensemble (Triton's)

    @classmethod
    def build(cls, config: mc.ModelConfig, spec: ModelSpec, resolve: Resolve) -> EnsembleGraph:
        """The validated graph of an ensemble (whose data flow its config's check took);
        raises the first wiring error found."""
        name = config.name
        raw_steps = list(config.ensemble_scheduling.step)
        producers: dict[str, _Tensor] = {
            t.name: _Tensor("the ensemble input", t, spec.batched, name)
            for t in spec.inputs.values()
        }
        consumers: list[tuple[str, _Tensor]] = []
        steps = []
        decoupled = False
        decoupled_steps: set[int] = set()
        for index, raw in enumerate(raw_steps, start=1):
            step = _step(name, index, raw)
            mv = _resolve_step(name, step, resolve)
            decoupled = decoupled or mv.scheduler.decoupled
            if mv.scheduler.decoupled:
                decoupled_steps.add(index)
            _check_step_names(name, step, mv.spec)
            # a batching ensemble may hold a non-batching step (Triton's: the tensors'
            # shapes with the batch dimension must agree, checked below)
            if spec.batched and mv.spec.batched and mv.spec.max_batch_size < spec.max_batch_size:
                raise ensemble_error(
                    name,
                    f"max_batch_size {spec.max_batch_size} is over the max_batch_size "
                    f"{mv.spec.max_batch_size} of {step.describe()}",
                    f"ensemble {name} allows maximum batch size {spec.max_batch_size}, but it "
                    f"contains model {step.model} which only allows maximum batch size to be "
                    f"{mv.spec.max_batch_size}",
                )
            for model_input, tensor in step.inputs.items():
                end = _Tensor(step.describe(), mv.spec.inputs[model_input], mv.spec.batched,
                              step.model)  # fmt: skip
                consumers.append((tensor, end))
            for model_output, tensor in step.outputs.items():
                end = _Tensor(step.describe(), mv.spec.outputs[model_output], mv.spec.batched,
                              step.model)  # fmt: skip
                producers[tensor] = end
            steps.append(step)
        for output in spec.outputs.values():
            end = _Tensor("the ensemble output", output, spec.batched, name)
            consumers.append((output.name, end))
        for tensor, consumer in consumers:
            _check_edge(name, tensor, producers[tensor], consumer)
        if decoupled_steps:
            _check_decoupled_branches(name, steps, decoupled_steps, spec)
        dims = {output.name: output.dims for output in spec.outputs.values()}
        return cls(name, tuple(steps), spec.batched, dims, tuple(spec.inputs), decoupled)

    def steps_for(self, outputs: Iterable[str]) -> list[EnsembleStep]:
        """The steps that make ``outputs`` (ensemble outputs), in order: each step one of
        whose outputs is wanted, by the ensemble or by a step that is run."""
        wanted = set(outputs)
        if wanted >= self.output_dims.keys():
            return list(self.steps)
        chosen: set[int] = set()
        grew = True
        while grew:  # at most one pass a step: each pass takes one more or ends
            grew = False
            for step in self.steps:
                if step.index not in chosen and wanted.intersection(step.outputs.values()):
                    chosen.add(step.index)
                    wanted.update(step.inputs.values())
                    grew = True
        return [step for step in self.steps if step.index in chosen]


def _step(name: str, index: int, raw: Any) -> EnsembleStep:
    if raw.model_version < -1 or raw.model_version == 0:
        raise ensemble_error(
            name, f"step {index} has model_version {raw.model_version} (use -1 or a version)"
        )
    version = None if raw.model_version == -1 else str(raw.model_version)
    return EnsembleStep(index, raw.model_name, version, dict(raw.input_map), dict(raw.output_map))


def _resolve_step(name: str, step: EnsembleStep, resolve: Resolve) -> ModelVersion:
    try:
        return resolve(step.model, step.version)
    except ModelyardError as exc:
        wanted = f"version {step.version} of model" if step.version else "model"
        triton = (
            f"ensemble '{name}' depends on '{step.model}' whose required version "
            f"{step.version} is not loaded"
            if step.version and exc.code is Code.NOT_FOUND and "version" in exc.detail
            else f"ensemble {name} contains models that are not available or ambiguous: "
            f"{step.model}"
        )
        raise ensemble_error(
            name,
            f"{step.describe()}: {wanted} '{step.model}' is not loaded ({exc.detail}); "
            "load the step models before the ensemble",
            triton,
        ) from None


def _check_step_names(name: str, step: EnsembleStep, spec: ModelSpec) -> None:
    for kind, mapped, known in (
        ("input", step.inputs, spec.inputs),
        ("output", step.outputs, spec.outputs),
    ):
        for tensor, ensemble_tensor in mapped.items():
            if tensor not in known:
                triton = (
                    f"in ensemble {name}, ensemble tensor {ensemble_tensor} is mapping to "
                    f"non-existing input {tensor} in model {step.model}"
                    if kind == "input"
                    else f"in ensemble {name}, ensemble tensor {ensemble_tensor} is mapped from "
                    f"non-existing output {tensor} in model {step.model}"
                )
                raise ensemble_error(
                    name,
                    f"{step.describe()} has no {kind} '{tensor}' (it has {', '.join(known)})",
                    triton,
                )
    missing = [t.name for t in spec.inputs.values() if not t.optional and t.name not in step.inputs]
    if missing:
        raise ensemble_error(
            name,
            f"{step.describe()} leaves input {', '.join(missing)} unmapped in input_map",
            f"in ensemble {name}, input {missing[0]} in model {step.model} is not mapped to any "
            "ensemble tensors",
        )


def _check_edge(name: str, tensor: str, producer: _Tensor, consumer: _Tensor) -> None:
    if producer.config.datatype != consumer.config.datatype:
        raise ensemble_error(
            name,
            f"tensor '{tensor}' is {producer.config.datatype} from {producer.owner} but "
            f"{consumer.config.datatype} for {consumer.owner}",
            f"in ensemble {name}, ensemble tensor {tensor}: inconsistent data type: "
            f"{_config_type(producer)} is inferred from model {producer.model} while "
            f"{_config_type(consumer)} is inferred from model {consumer.model}",
        )
    if not _compatible(producer, consumer):
        raise ensemble_error(
            name,
            f"tensor '{tensor}' has dims {list(producer.config.dims)} from {producer.owner} but "
            f"{list(consumer.config.dims)} for {consumer.owner}",
            f"in ensemble {name}, ensemble tensor {tensor}: inconsistent shape: "
            f"{_triton_shape(producer)} is inferred from model {producer.model} while "
            f"{_triton_shape(consumer)} is inferred from model {consumer.model}",
        )


def _config_type(end: _Tensor) -> str:
    return V2_TO_CONFIG.get(end.config.datatype, "TYPE_STRING")


def _triton_shape(end: _Tensor) -> str:
    """A tensor's shape as Triton writes it, the batch dimension first where it batches."""
    dims = (-1, *end.config.dims) if end.batched else end.config.dims
    return "[" + ",".join(str(d) for d in dims) + "]"


def _check_decoupled_branches(
    name: str, steps: list[EnsembleStep], decoupled: set[int], spec: ModelSpec
) -> None:
    """Triton's refusal of a step (or the ensemble's outputs) fed by tensors that come from
    different decoupled steps, or from one and not from another: their responses could
    not be paired. Each tensor carries the decoupled step it descends from (0: none)."""
    label = dict.fromkeys(spec.inputs, 0)
    waiting = list(steps)
    while waiting:
        step = next(s for s in waiting if set(s.inputs.values()) <= label.keys())
        waiting.remove(step)
        origins = {label[tensor] for tensor in step.inputs.values()}
        if len(origins) > 1:
            raise _branches(name, step.model, step.describe())
        given = step.index if step.index in decoupled else next(iter(origins), 0)
        label.update(dict.fromkeys(step.outputs.values(), given))
    if len({label.get(output, 0) for output in spec.outputs}) > 1:
        raise _branches(name, name, "its outputs")


def _branches(name: str, model: str, where: str) -> ModelServerError:
    return ensemble_error(
        name,
        f"{where} take tensors from different decoupled steps",
        f"in ensemble {name}, step of model '{model}' receives inputs originated from "
        "different decoupled models",
    )


def _batch_converted(
    dims: tuple[int, ...], batched: bool, batch: int, array: np.ndarray
) -> np.ndarray:
    """A tensor made by a batching model for a non-batching one, or the other way round, as
    Triton's ensembles convert it (``ReshapeTensorDims``): ``batch`` is the rows of the
    request that made it, 0 when that did not batch. A batching consumer of an unbatched
    tensor whose shape is its dims gets it as one row; a non-batching consumer of a 1-row
    tensor whose shape is not its dims gets it without the batch dimension. Otherwise the
    tensor goes as it is (a tensor already in the batch the model expects)."""
    if batched == (batch != 0):
        return array
    shape = array.shape
    fits = len(shape) == len(dims) and all(d in (-1, s) for d, s in zip(dims, shape, strict=False))
    if batched and fits:
        return array.reshape((1, *shape))
    if not batched and not fits and batch == 1 and array.ndim:
        return array.reshape(shape[1:])
    return array


def _prepare(
    step: EnsembleStep, spec: ModelSpec, inputs: dict[str, np.ndarray], batches: dict[str, int]
) -> int:
    """Check and reshape one step's inputs in place, as the dataplane does; return rows.

    ``batches``: the rows of the request that made each of the step's input tensors (0:
    it did not batch), by the step's input name."""
    rows = 1
    for input_name, array in inputs.items():
        tensor = spec.inputs[input_name]
        array = _batch_converted(tensor.dims, spec.batched, batches[input_name], array)
        inputs[input_name] = array
        item_shape = array.shape[1:] if spec.batched else array.shape
        if spec.batched:
            rows = array.shape[0] if array.ndim else 0
            if not 0 < rows <= spec.max_batch_size:
                raise ModelServerError.of(
                    error_rules.ENSEMBLE,
                    f"{step.describe()} got {rows} rows of '{input_name}' (max_batch_size "
                    f"{spec.max_batch_size})",
                    where=f"max_batch_size in {step.model}/config.pbtxt",
                )
        if not tensor.accepts_shape(tuple(item_shape)):
            raise ModelServerError.of(
                error_rules.ENSEMBLE,
                f"{step.describe()} got '{input_name}' with shape {list(array.shape)}, "
                f"expected {[-1, *tensor.dims] if spec.batched else list(tensor.dims)}",
                where=f"the producer of '{step.inputs[input_name]}' or {step.model}/config.pbtxt",
            )
        if tensor.reshape is not None:
            lead = (array.shape[0],) if spec.batched else ()
            inputs[input_name] = array.reshape(lead + tensor.reshape)
    return rows


def _finish_outputs(spec: ModelSpec, results: dict[str, np.ndarray]) -> None:
    """Give step outputs their configured dtype and dims before the next step sees them."""
    for output_name, array in results.items():
        tensor = spec.outputs.get(output_name)
        if tensor is None:
            continue
        if tensor.reshape is not None and 0 not in tensor.dims:
            array = array.reshape(tensor.answered_shape(array.shape, spec.batched))
        if tensor.datatype not in ("BYTES", "BF16") and array.dtype != tensor.dtype:
            array = array.astype(tensor.dtype, copy=False)
        results[output_name] = array


@dataclass(eq=False)
class _Flow:
    """The tensors of one path through an ensemble over a decoupled step: the request's
    (the first flow), or one response of a decoupled step and what came of it (a flow of
    its own, whose lookups reach the flow it came from)."""

    own: dict[str, np.ndarray]
    tensors: ChainMap[str, np.ndarray]
    batches: ChainMap[str, int]
    left_out: ChainMap[str, str]
    started: set[int]  # the indices of the steps this flow has run or runs
    running: int = 0  # its plain steps not yet answered
    open: int = 0  # its decoupled steps whose responses have not ended
    answered: bool = False
    parent: _Flow | None = None
    children: list[_Flow] = field(default_factory=list)

    @classmethod
    def first(cls, inputs: dict[str, np.ndarray], graph: EnsembleGraph, rows: int) -> _Flow:
        own = dict(inputs)
        left_out = {
            name: "the request left out (an optional input of the ensemble)"
            for name in graph.inputs
            if name not in inputs
        }
        batches = dict.fromkeys(inputs, rows if graph.batched else 0)
        return cls(own, ChainMap(own), ChainMap(batches), ChainMap(left_out), set())

    def fork(self, step: EnsembleStep) -> _Flow:
        """A flow for one response of ``step``."""
        own: dict[str, np.ndarray] = {}
        child = _Flow(
            own, self.tensors.new_child(own), self.batches.new_child(),
            self.left_out.new_child(), set(self.started), parent=self,
        )  # fmt: skip
        self.children.append(child)
        return child

    def prune(self, steps: int) -> None:
        """Let go of this flow, and of the flows it came from, once nothing more can come
        of them (every step started, none running, no flow after them): a decoupled step's
        responses are held only while they can still go on."""
        flow: _Flow | None = self
        while (
            flow is not None and flow.parent is not None and flow.running == 0
            and flow.open == 0 and not flow.children and len(flow.started) == steps
        ):  # fmt: skip
            flow.parent.children.remove(flow)
            flow = flow.parent

    def record(
        self, step: EnsembleStep, spec: ModelSpec, rows: int, results: dict[str, np.ndarray]
    ) -> None:
        for model_output, tensor in step.outputs.items():
            if model_output not in results:
                self.left_out[tensor] = (
                    f"output '{model_output}' of {step.describe()} left out of its response"
                )
                continue
            self.own[tensor] = results[model_output]
            self.batches[tensor] = rows if spec.batched else 0


class EnsembleScheduler:
    """Runs ensemble requests; same ``submit``, ``close``, ``join``, ``pending``, ``stats``."""

    def __init__(
        self, graph: EnsembleGraph, version: int, resolve: Resolve, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.model = graph.name
        self.version = version
        self.graph = graph
        # answers through submit_stream where a step's model is decoupled (Triton's)
        self.decoupled = graph.decoupled
        self.stats = VersionStats()
        self._resolve = resolve
        self._clock = clock
        self._closed = False
        self._in_flight = 0
        self._idle = threading.Condition()
        # the server's response cache where the ensemble's config enables it (the manager
        # sets it): a repeated request is answered whole, its steps never run (Triton's
        # top-level cache); each load of the ensemble keys its own entries
        self.cache: ResponseCache | None = None
        self._generation = -next(_LOADS)

    @property
    def pending(self) -> int:
        return self._in_flight

    queued = 0  # its requests wait in its steps' queues (Triton's count for an ensemble)

    def submit(self, request: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        """Start one request; must be called from the event loop thread. Its deadline,
        priority and timeout go to each step, its parameters to each step whose model reads
        requests and its sequence to each step whose model is a sequence model, as Triton's
        ensembles pass them on."""
        if self._closed:
            raise unloading(self.model, self.version)
        if self.decoupled:
            raise decoupled_refusal(self.model)
        if self.cache is not None and request.sequence is None:  # answered from it, or run
            return through_cache(
                self.cache, request, self._generation, self.stats, self._clock,
                lambda: self._started(request), self.model, self.version,
            )  # fmt: skip
        return self._started(request)

    def submit_stream(self, request: Submission) -> ResponseStream:
        """Start one request of an ensemble over a decoupled model; its responses arrive
        on the returned stream (event loop thread)."""
        if not self.decoupled:
            raise answers_once(self.model)
        if self._closed:
            raise unloading(self.model, self.version)
        stream = ResponseStream(self.model)
        with self._idle:
            self._in_flight += 1
        task = asyncio.get_running_loop().create_task(self._run_stream(request, stream))
        task.add_done_callback(self._done)
        return stream

    async def _run_stream(self, request: Submission, stream: ResponseStream) -> None:
        """As Triton's ensembles run a decoupled step: each of its responses goes on
        through the steps after it with that response's tensors (a flow of its own, which
        sees the tensors of the flow it came from), and a flow that has made ensemble
        outputs and has no step left running is one response of the ensemble. The last
        response is FINAL alone, once every step's responses have ended."""
        clock = self._clock
        start_ns = clock.monotonic_ns()
        events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        tasks: set[asyncio.Task[None]] = set()
        streams: set[ResponseStream] = set()  # the steps' streams not yet ended
        active = 0  # steps running, in every flow: plain ones and open streams

        async def answered(flow: _Flow, step: EnsembleStep, spec: ModelSpec, rows: int,
                           future: asyncio.Future[dict[str, np.ndarray]]) -> None:  # fmt: skip
            try:
                events.put_nowait(("done", flow, step, spec, rows, await future))
            except Exception as exc:
                events.put_nowait(("error", exc))

        async def responses(flow: _Flow, step: EnsembleStep, spec: ModelSpec, rows: int,
                            step_stream: ResponseStream) -> None:  # fmt: skip
            while True:
                item = await step_stream.get()
                if item.error is not None:
                    events.put_nowait(("error", item.error))
                    return
                if item.outputs is not None:
                    events.put_nowait(("response", flow, step, spec, rows, dict(item.outputs)))
                if item.final:
                    streams.discard(step_stream)
                    events.put_nowait(("closed", flow))
                    return

        def launch(flow: _Flow) -> None:
            nonlocal active
            for step in self.graph.steps:
                if step.index in flow.started or not all(
                    t in flow.tensors or t in flow.left_out for t in step.inputs.values()
                ):
                    continue
                flow.started.add(step.index)
                mv, step_request, rows = self._step_request(
                    step, flow.tensors, flow.batches, request, flow.left_out
                )
                if mv.scheduler.decoupled:
                    step_stream = mv.scheduler.submit_stream(step_request)
                    streams.add(step_stream)
                    flow.open += 1
                    work = responses(flow, step, mv.spec, rows, step_stream)
                else:
                    flow.running += 1
                    work = answered(flow, step, mv.spec, rows, mv.scheduler.submit(step_request))
                active += 1
                task = asyncio.get_running_loop().create_task(work)
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        def settle(flow: _Flow) -> None:
            """Start what the flow (and the flows it led to) can run; answer it when done."""
            launch(flow)
            made = [name for name in request.outputs if name in flow.own]
            if flow.running == 0 and made and not flow.answered:
                flow.answered = True
                graph = self.graph
                stream.put(StreamItem({
                    name: _batch_converted(graph.output_dims[name], graph.batched,
                                           flow.batches[name], flow.tensors[name])
                    for name in request.outputs if name in flow.tensors
                }, None, False))  # fmt: skip
            for child in list(flow.children):
                settle(child)
            flow.prune(len(self.graph.steps))

        try:
            root = _Flow.first(request.inputs, self.graph, request.rows)
            settle(root)
            while active and not stream.cancelled:
                event = await events.get()
                if event[0] == "error":
                    raise event[1]
                active -= 1 if event[0] in ("done", "closed") else 0
                if event[0] == "closed":
                    event[1].open -= 1
                    event[1].prune(len(self.graph.steps))
                    continue
                _, flow, step, spec, rows, results = event
                _finish_outputs(spec, results)
                if event[0] == "done":
                    flow.running -= 1
                else:
                    flow = flow.fork(step)
                flow.record(step, spec, rows, results)
                settle(flow)
        except Exception as exc:
            elapsed_ns = clock.monotonic_ns() - start_ns
            self.stats.record_failure("OTHER", elapsed_ns)
            self.stats.record_failure("OTHER", elapsed_ns)
            error = in_ensemble(self.model, exc) if isinstance(exc, ModelyardError) else exc
            if not isinstance(error, ModelyardError):
                error = ensemble_error(self.model, f"{type(exc).__name__}: {exc}")
            stream.put(StreamItem(None, error, True))
            return
        finally:
            for step_stream in streams:
                step_stream.cancel()
            for task in list(tasks):
                task.cancel()
        end_ns = clock.monotonic_ns()
        self.stats.record_execution(
            [start_ns], start_ns, request.rows, 0, end_ns - start_ns, 0, end_ns,
            int(clock.wall() * 1000),
        )  # fmt: skip
        stream.put(StreamItem(None, None, True))

    def _started(self, request: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        with self._idle:
            self._in_flight += 1
        task = asyncio.get_running_loop().create_task(self._run(request))
        task.add_done_callback(self._done)
        return task

    async def _run(self, request: Submission) -> dict[str, np.ndarray]:
        inputs, outputs, rows = request.inputs, request.outputs, request.rows
        clock = self._clock
        start_ns = clock.monotonic_ns()
        tensors = dict(inputs)
        # the rows of the request that made each tensor, 0 where it did not batch
        batches = dict.fromkeys(inputs, rows if self.graph.batched else 0)
        # tensors a step's model left out of its response, and which output of which step;
        # an optional ensemble input the request left out is one too (Triton's null tensor)
        left_out = {
            name: "the request left out (an optional input of the ensemble)"
            for name in self.graph.inputs
            if name not in inputs
        }
        waiting = self.graph.steps_for(outputs)
        running: dict[asyncio.Future[dict[str, np.ndarray]], tuple[EnsembleStep, ModelSpec, int]]
        running = {}
        traced = request.steps  # a traced request: each step's times, as it is answered
        keeps_tensors = getattr(traced, "tensors", False)
        sent: dict[asyncio.Future[dict[str, np.ndarray]], tuple[str, int, list[int], Any, Any]]
        sent = {}
        try:
            while waiting or running:
                for step in [
                    s for s in waiting
                    if all(t in tensors or t in left_out for t in s.inputs.values())
                ]:  # fmt: skip
                    waiting.remove(step)
                    step_timing: list[int] | None = None if traced is None else TraceTimes()
                    # a nested ensemble's own steps
                    inner = None if traced is None else TracedSteps(keeps_tensors)
                    # before: a step may execute as it is sent
                    sent_ns = 0 if traced is None else clock.monotonic_ns()
                    future, spec, step_rows, version, step_inputs = self._submit_step(
                        step, tensors, batches, request, left_out, step_timing, inner
                    )
                    running[future] = (step, spec, step_rows)
                    if step_timing is not None and inner is not None:
                        kept = step_inputs if keeps_tensors else None
                        sent[future] = (version, sent_ns, step_timing, inner, kept)
                if not running:  # a graph checked at load never comes here
                    missing = {t for s in waiting for t in s.inputs.values() if t not in tensors}
                    raise ensemble_error(self.model, f"no step makes {', '.join(sorted(missing))}")
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    step, spec, step_rows = running.pop(future)
                    results = dict(future.result())  # a step's error: below
                    if traced is not None:
                        version, sent_ns, step_timing, inner, kept = sent.pop(future)
                        answered_ns = clock.monotonic_ns()
                        step_tensors = None if kept is None else (kept, dict(results))
                        traced.append((step.model, version, sent_ns, answered_ns, step_timing,
                                       inner, step_tensors))  # fmt: skip
                    _finish_outputs(spec, results)
                    for model_output, tensor in step.outputs.items():
                        if model_output not in results:
                            left_out[tensor] = (
                                f"output '{model_output}' of {step.describe()} left out of its "
                                "response"
                            )
                            continue
                        tensors[tensor] = results[model_output]
                        batches[tensor] = step_rows if spec.batched else 0
        except Exception as exc:
            # as Triton counts an ensemble's failed request: its failure as the ensemble
            # answers it, and again as the ensemble's request ends; both reason OTHER
            elapsed_ns = clock.monotonic_ns() - start_ns
            self.stats.record_failure("OTHER", elapsed_ns)
            self.stats.record_failure("OTHER", elapsed_ns)
            if isinstance(exc, ModelyardError):
                named = in_ensemble(self.model, exc)
                if named is not exc:
                    raise named from exc
            raise
        finally:
            for future in running:
                if not future.done():
                    future.cancel()  # a step scheduler skips answers to cancelled futures
                elif not future.cancelled():
                    future.exception()  # retrieved: the first step error is the answer
        end_ns = clock.monotonic_ns()
        self.stats.record_execution(
            [start_ns], start_ns, rows, 0, end_ns - start_ns, 0, end_ns, int(clock.wall() * 1000)
        )
        graph = self.graph
        return {
            name: _batch_converted(
                graph.output_dims[name], graph.batched, batches[name], tensors[name]
            )
            for name in outputs
            if name in tensors  # one its step left out: left out, as Triton's
        }

    def _submit_step(
        self,
        step: EnsembleStep,
        tensors: dict[str, np.ndarray],
        batches: dict[str, int],
        request: Submission,
        left_out: dict[str, str],
        timing: list[int] | None = None,
        steps: list[Any] | None = None,
    ) -> tuple[asyncio.Future[dict[str, np.ndarray]], ModelSpec, int, str, dict[str, Any]]:
        """The step's answer to come, its model's spec, its rows, version and inputs."""
        # resolve and submit back to back on the loop: a swap cannot fall between them
        mv, step_request, rows = self._step_request(
            step, tensors, batches, request, left_out, timing, steps
        )
        if mv.scheduler.decoupled:
            raise decoupled_refusal(mv.name)
        future = mv.scheduler.submit(step_request)
        return future, mv.spec, rows, str(mv.version), step_request.inputs

    def _step_request(
        self,
        step: EnsembleStep,
        tensors: Mapping[str, np.ndarray],
        batches: Mapping[str, int],
        request: Submission,
        left_out: Mapping[str, str],
        timing: list[int] | None = None,
        steps: list[Any] | None = None,
    ) -> tuple[ModelVersion, Submission, int]:
        """The step's model and its request, its inputs checked and converted."""
        mv = self._resolve(step.model, step.version)
        given = {i: t for i, t in step.inputs.items() if t in tensors}
        for model_input, tensor in step.inputs.items():
            if model_input not in given and not mv.spec.inputs[model_input].optional:
                raise ensemble_error(
                    self.model,
                    f"{step.describe()} needs input '{model_input}' (tensor '{tensor}'), "
                    f"which {left_out[tensor]}",
                )
        inputs = {model_input: tensors[tensor] for model_input, tensor in given.items()}
        made_by = {model_input: batches[tensor] for model_input, tensor in given.items()}
        rows = _prepare(step, mv.spec, inputs, made_by)
        sequence = request.sequence
        if sequence is not None and mv.sequence is not None:  # the step's own checks
            check_sequence(mv.name, sequence, mv.sequence)
            if mv.spec.batched and rows != 1:
                raise one_row_per_request(mv.name)
        step_request = Submission(
            inputs, list(step.outputs), rows, request.deadline, request.priority,
            request.timeout_us, parameters=request.parameters if mv.takes_requests else None,
            sequence=sequence, timing=timing, steps=steps,
        )  # fmt: skip
        return mv, step_request, rows

    def _done(self, task: asyncio.Task[Any]) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def close(self) -> None:
        """Stop taking requests; the ones already running finish."""
        self._closed = True

    def join(self, timeout: float | None = None) -> None:
        """Wait (off the event loop) until running requests finish."""
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout)


def load_ensemble_version(
    model_dir: Path,
    version: int,
    base_config: mc.ModelConfig,
    resolve: Resolve,
    *,
    clock: Clock = SYSTEM_CLOCK,
    name: str | None = None,
) -> ModelVersion:
    """Validate an ensemble against the loaded step models; runs on the event loop thread.

    ``name``: the name it is served under (its directory's unless namespaced)."""
    name = name or model_dir.name
    config = copy.deepcopy(base_config)
    if not config.platform:
        config.platform = ENSEMBLE
    if config.instance_group or config.model_warmup:
        raise ensemble_error(name, "an ensemble has no instances or warm-up of its own")
    if config.batch_input or config.batch_output:
        raise ensemble_error(
            name, "an ensemble batches nothing of its own: its steps' configs name batch_input "
            "and batch_output"
        )  # fmt: skip
    spec = compile_spec(config, f"{name}/config.pbtxt")
    graph = EnsembleGraph.build(config, spec, resolve)
    # as Triton's ValidateEnsembleConfig: decoupled where a step is (its config says so, and
    # a stream writes its responses as they come)
    config.model_transaction_policy.decoupled = graph.decoupled
    version_loaded = ModelVersion(
        name=name,
        version=version,
        config=config,
        spec=spec,
        backend=ENSEMBLE,
        scheduler=EnsembleScheduler(graph, version, resolve, clock=clock),
        engines=[],
        labels=_labels(config, _read_labels(model_dir, config, None), graph, resolve),
    )
    version_loaded.takes_requests = True  # its requests' parameters go on to its steps
    return version_loaded


def _labels(
    config: mc.ModelConfig, own: dict[str, list[str]], graph: EnsembleGraph, resolve: Resolve
) -> dict[str, list[str]]:
    """An output's labels: the ensemble's own label file, or, as Triton completes them at
    load, those of the step output that produces it (a nested ensemble's, in turn)."""
    labels = dict(own)
    outputs = {output.name for output in config.output} - set(labels)
    for step in graph.steps:
        for model_output, tensor in step.outputs.items():
            if tensor in outputs:
                found = resolve(step.model, step.version).labels.get(model_output)
                if found:
                    labels[tensor] = found
    return labels


def reached_models(config: mc.ModelConfig) -> list[str]:
    """The other models a request to this config's model can reach: its ensemble steps.

    Read whatever the backend says, so a config cannot hide steps behind one; a model
    that calls other models from its own code (BLS) would list them here too.
    """
    return sorted({step.model_name for step in config.ensemble_scheduling.step} - {config.name})


def step_models(model_dir: Path, config_name: str | None = None) -> list[str]:
    """The models an ensemble's config names as steps; [] for any other model."""
    try:
        config = read_model_config(model_dir, config_name)
    except ModelyardError:
        return []  # the load reports the error
    if config.platform != ENSEMBLE:
        return []
    return [step.model_name for step in config.ensemble_scheduling.step]


def load_order(
    names: Iterable[str],
    model_dir: Callable[[str], Path | None],
    config_name: str | None = None,
    step_key: Callable[[str, Path], str] | None = None,
) -> list[str]:
    """``names`` with every ensemble after the models its steps use (cycles keep their order).

    ``step_key``: the name a step's model is served under, from the ensemble's directory
    (namespaced repositories); None: the step's own name.
    """
    ordered = list(names)
    deps = {}
    for name in ordered:
        path = model_dir(name)
        steps = step_models(path, config_name) if path else []
        keys = [step_key(step, path) for step in steps] if step_key and path else steps
        deps[name] = [key for key in keys if key in ordered]
    placed: list[str] = []
    visiting: set[str] = set()

    def place(name: str) -> None:
        if name in placed or name in visiting:
            return
        visiting.add(name)
        for dep in deps[name]:
            place(dep)
        visiting.discard(name)
        placed.append(name)

    for name in ordered:
        place(name)
    return placed
