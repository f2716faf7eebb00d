"""The Engine contract: load a file, execute a stacked batch, unload.

The model server owns threads, queues, timeouts and batching. An engine never
sees a request: ``execute`` gets arrays already stacked along the batch axis
(when the model batches) and returns arrays with the same number of rows.
Engines are synchronous; the server calls them from threads it owns, one
engine object per model instance, so an engine needs no locking of its own. A
version's instances load at once, each on a thread of its own (as Triton creates a
model's instances): ``load`` must not share unguarded state between engine objects.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

from numpy.typing import NDArray
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.booleans import triton_bool_value
from modelyard.errors import Code, EngineError, ModelyardError, Rule, shown


class BatchedRequest(NamedTuple):
    """One request of a stacked batch, as a model that reads requests (Triton's python
    backend) sees it: its rows, its parameters (the caller's own, and headers forwarded
    by --http/grpc-header-forward-pattern), and a sequence's correlation id and flags
    (1: sequence start, 2: sequence end; a direct strategy's padding row has 0 and 0)."""

    rows: int = 1
    parameters: dict[str, Any] | None = None
    correlation_id: int | str = 0
    flags: int = 0
    # whether its caller has gone (a gRPC call cancelled): the model's is_cancelled()
    is_cancelled: Callable[[], bool] | None = None
    # a ragged batch's: the request's shape of each ragged input (allow_ragged_batch), which
    # the batch holds flat, each request's elements after the one's before it
    ragged_shapes: dict[str, tuple[int, ...]] | None = None
    # a traced request's W3C trace context (JSON), which its model's calls carry on
    trace_context: str | None = None


class BatchOutcomes(Exception):
    """Raised by ``execute`` of an engine that takes requests when its requests' outcomes
    differ (Triton's python backend answers each request with a response of its own, some
    with an error): each request's outputs, or its error, in the batch's order."""

    def __init__(self, outcomes: list[dict[str, NDArray[Any]] | ModelyardError]) -> None:
        super().__init__(f"{len(outcomes)} requests answered each on its own")
        self.outcomes = outcomes


class ResponseTiming(NamedTuple):
    """A decoupled model's response as the model's side timed it (monotonic ns, the clock
    every process of the host shares; 0: not known)."""

    started_ns: int  # its request's execute began
    made_ns: int  # the response was made (pb_utils.InferenceResponse)
    sent_ns: int  # it was sent


class DecoupledRequest(NamedTuple):
    """One request of a decoupled model's ``execute``: its tensors and parameters, where its
    responses go (``deliver(outputs, error, final)``, from any thread), whether its
    caller has gone, and a sequence's correlation id and flags (as ``BatchedRequest``'s).
    ``timed``: ``deliver`` also takes ``timing=``, the model's own clock readings of the
    response (``ResponseTiming``, for the response statistics)."""

    inputs: dict[str, NDArray[Any]]
    outputs: list[str]
    deliver: Callable[..., None]
    is_cancelled: Callable[[], bool]
    parameters: dict[str, Any] | None = None
    correlation_id: int | str = 0
    flags: int = 0
    timed: bool = False
    trace_context: str | None = None  # a traced request's W3C trace context (JSON)
    # ``on_cancel(tell)``: ``tell()`` is called once the caller has gone (None: ask
    # ``is_cancelled``)
    on_cancel: Callable[[Callable[[], None]], None] | None = None


class ModelParameters(dict[str, Any]):
    """The parameters a model reads (a dict), and the principals its request is for: what
    authorises the model's own calls to other models (Triton's BLS)."""

    def __init__(self, parameters: dict[str, Any], principals: tuple[str, ...] = ()) -> None:
        super().__init__(parameters)
        self.principals = principals


def batch_principals(requests: list[BatchedRequest] | None) -> tuple[str, ...]:
    """The principals of the requests of a batch (their union, in order)."""
    seen: dict[str, None] = {}
    for request in requests or ():
        for principal in getattr(request.parameters, "principals", ()):
            seen[principal] = None
    return tuple(seen)


_execution = threading.local()


@contextlib.contextmanager
def batch_requests(requests: list[BatchedRequest]) -> Iterator[None]:
    """Around an engine's execute on this thread: the requests the batch stacks, in order,
    for a model that reads requests (Triton's python backend)."""
    _execution.requests = requests
    try:
        yield
    finally:
        _execution.requests = None


def current_batch_requests() -> list[BatchedRequest] | None:
    """The requests of the batch executing on this thread, where the scheduler gave them."""
    return getattr(_execution, "requests", None)


def triton_instance_name(config: Any, index: int) -> str:
    """The name Triton gives a model's ``index``-th instance: its group's name (``<model>_<n>``
    for the n-th group unless named) and its place in the group (``add_sub_0_0``)."""
    start = 0
    for number, group in enumerate(config.instance_group):
        count = max(group.count, 1) * max(len(group.gpus), 1)
        if index < start + count:
            return f"{group.name or f'{config.name}_{number}'}_{index - start}"
        start += count
    return f"{config.name}_0_{index}"


class TraceTimes(list[int]):
    """A traced request's execution times (the scheduler's: enqueued, execution start,
    compute start, compute end, execution end), and the activities its model reported
    meanwhile: ``(name, monotonic ns)``, Triton's ``TRITONSERVER_InferenceTraceReportActivity``
    (a name ending ``_START`` opens a span, ``_END`` closes it, any other is an event)."""

    __slots__ = ("activities",)

    def __init__(self) -> None:
        super().__init__()
        self.activities: list[tuple[str, int]] = []


# a traced ensemble request's step: its model, version, when it was sent and answered
# (monotonic ns), its execution's times, (a nested ensemble's) its own steps, and, where
# the trace keeps tensors, its request's inputs and its answer's outputs (else None)
StepTimes = tuple[str, str, int, int, list[int], list[Any], Any]


class TracedSteps(list[Any]):
    """A traced ensemble request's steps (``StepTimes``), as they are answered; ``tensors``:
    its trace keeps each step's tensors (Triton's TENSORS level)."""

    __slots__ = ("tensors",)

    def __init__(self, tensors: bool = False) -> None:
        super().__init__()
        self.tensors = tensors


@contextlib.contextmanager
def traced_activities(traced: list[list[tuple[str, int]]]) -> Iterator[None]:
    """Around the execute of an engine that reports activities: where each traced request
    of the batch keeps them (one list each; untraced requests have none)."""
    _execution.activities = traced
    try:
        yield
    finally:
        _execution.activities = None


def current_traced_activities() -> list[list[tuple[str, int]]]:
    """The activity lists of the traced requests of the batch executing on this thread."""
    return getattr(_execution, "activities", None) or []


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A tensor as an engine sees it: V2 datatype and full dims (-1: variable)."""

    name: str
    datatype: str
    dims: tuple[int, ...]


@dataclass(slots=True)
class Signature:
    """What an engine learned from the model file, used to complete a config.

    ``dims`` here include the batch dimension when ``batched`` is true.
    """

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    batched: bool = True
    labels: dict[str, list[str]] = field(default_factory=dict)  # output -> class labels


@dataclass(frozen=True, slots=True)
class LoadContext:
    """Everything an engine may read while loading."""

    artifact: Path  # the model file (or directory) in the version directory
    version_dir: Path
    config: mc.ModelConfig  # completed as far as the config file goes
    device: str = "cpu"  # "cpu" or "cuda:N"
    trusted: bool = False  # the operator trusts this model's pickle files
    instance_index: int = 0
    # the server's own infer, blocking, for a model that calls other models (Triton's BLS);
    # takes and gives modelyard.types.InferRequest / InferResponse (with ``stream=True``:
    # an iterator of dataplane.StreamResponse, a decoupled model's); None: not offered
    infer: Callable[..., Any] | None = None
    # the server's repository API for a model's own code (Triton's pb_utils.load_model,
    # unload_model, is_model_ready): (kind, arguments, principals, caller) -> answer,
    # blocking (server/model_control.py); None: not offered
    control: Callable[..., Any] | None = None
    # a Python-based backend's folder (Triton's runtime): its model.py (``artifact``)
    # serves this model, whose version directory holds the model's own files; None: none
    backend_dir: Path | None = None
    # False: the config is taken as written (tritonserver's --disable-auto-complete-config)
    auto_complete: bool = True
    # the first instance's only: called once ``config`` holds all the engine adds to it
    # (auto_complete_config) and before the rest of its load (initialize), which the
    # version's other instances then load beside; an engine that returns a signature (the
    # config is completed from it) never calls it, nor one that adds nothing before its end
    config_complete: Callable[[], None] | None = None

    def parameter(self, key: str, default: str | None = None) -> str | None:
        if key in self.config.parameters:
            return str(self.config.parameters[key].string_value)
        return default

    def flag(self, key: str, default: bool, rule: Rule) -> bool:
        """A boolean parameter as Triton's backends read one (``default`` when absent or
        empty); any other value is refused under ``rule``, in their words."""
        raw = self.parameter(key, "") or ""
        if not raw:
            return default
        value = triton_bool_value(raw)
        if value is None:
            raise EngineError.of(
                rule,
                f"failed to convert '{shown(raw, 40)}' to boolean value for parameter '{key}'",
                where=f"parameters in {self.config.name}/config.pbtxt",
            )
        return value


def unreadable_artifact(engine: str, ctx: LoadContext, exc: Exception) -> EngineError:
    """The error of a model file that the engine's library could not load."""
    return EngineError(
        f"{engine} could not load {ctx.artifact.name}: {exc}",
        code=Code.INVALID_ARGUMENT,
        rule=f"engine/{engine}",
        where=f"the file {ctx.artifact.name} of model '{ctx.config.name}'",
    )


class Engine(ABC):
    #: engine name as used in the backend field of config.pbtxt
    name: ClassVar[str]
    #: the extra that installs this engine's dependency: pip install 'modelyard[<extra>]'
    extra: ClassVar[str]
    #: file names tried, in order, when config.pbtxt names no default_model_filename
    default_filenames: ClassVar[tuple[str, ...]]
    #: whether load() fills input and output specs from the model file
    describes_signature: ClassVar[bool] = False
    #: whether execute() computes on the thread that calls it, so that thread's CPU time is
    #: the execution's cost (False: it may wait on other threads or a device)
    computes_on_caller: bool = False
    #: whether execute() may run on the event loop's thread (False: it may wait on the loop)
    runs_on_loop: bool = True
    #: whether execute() takes Triton's ragged batches (server/ragged.py): an input with
    #: allow_ragged_batch as every request's elements one after another (one flat tensor),
    #: the config's batch_input tensors beside the inputs, and each batch_output flat
    serves_ragged_batches: ClassVar[bool] = False
    #: whether execute() takes a batch's ragged inputs (flat, each request's shape in its
    #: BatchedRequest.ragged_shapes) but no batch_input or batch_output: a model that reads
    #: requests sees each request's tensor in its own shape, as Triton's python backend does
    serves_ragged_inputs: ClassVar[bool] = False
    #: whether execute() reports trace activities of its batch's traced requests
    #: (``current_traced_activities``); set by load()
    reports_activities: bool = False
    #: whether execute() reads its batch's requests' rows (``current_batch_requests``: each
    #: request's rows and ragged shapes, no parameters), as a backend that logs each does
    reads_request_rows: ClassVar[bool] = False
    #: the parameters every response of the model carries (Triton's identity backend's)
    response_parameters: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    #: outputs execute() itself returns flat over a ragged batch, each request's part shaped
    #: as its part of the named input (output -> input); set by load()
    ragged_outputs: Mapping[str, str] = MappingProxyType({})

    @abstractmethod
    def load(self, ctx: LoadContext) -> Signature | None:
        """Load the model; return what the file says of its tensors, if it says anything."""

    @abstractmethod
    def execute(
        self, inputs: dict[str, NDArray[Any]], outputs: list[str]
    ) -> dict[str, NDArray[Any]]:
        """Run one stacked batch; return the named outputs, rows in = rows out."""

    def refuses_input(self, error: Exception) -> bool:
        """Whether an exception from ``execute`` says the inputs' values were bad (NaN into
        a model that takes none, a token id past the vocabulary), not that the engine failed.

        The server answers such a request 400 / INVALID_ARGUMENT with the engine's message,
        and executes the other requests of its batch again without it.
        """
        return False

    def unload(self) -> None:  # noqa: B027 - most engines only drop references
        """Release the engine's resources. Called once; the object is not reused."""

    def describe(self) -> dict[str, Any]:
        """Facts worth showing in the repository index (threads, providers ...)."""
        return {}
