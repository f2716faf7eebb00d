"""An instance's data plane (``modelyard.dataplane.DataPlane``): its model server answers.

``lane`` validates a decoded request against the model's completed config and
gives the ``VersionLane`` of its shape; ``infer`` queues the request on the
version's scheduler through it and builds the response, including the
classification extension. Everything from routing to queueing is synchronous,
so a model swap cannot fall between them. A front door that recognises a
request's shape without decoding it keeps the lane and submits later requests
of that shape straight to it.
"""

from __future__ import annotations

import asyncio
import copy
import math
import queue
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from modelyard import __version__, error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.dataplane import INSTANCE_EXTENSIONS, FixedOutput, StreamResponse
from modelyard.engines.base import ModelParameters, StepTimes
from modelyard.errors import Code, ModelServerError, ModelyardError, NotResident, shown
from modelyard.modelfiles.config import ModelSpec
from modelyard.server.ensemble import ENSEMBLE
from modelyard.server.live_stats import live_stats
from modelyard.server.manager import ModelManager
from modelyard.server.model_control import ModelControl
from modelyard.server.model_version import ModelVersion
from modelyard.server.residency import Residency
from modelyard.server.scheduler import shape_key_of
from modelyard.server.scheduling import Submission
from modelyard.server.sequence_policy import SequenceFlags, one_row_per_request, sequence_flags
from modelyard.server.stats import RESPONSE_STATS
from modelyard.types import (
    PROTOCOL_PARAMETERS,
    InferRequest,
    InferResponse,
    OutputTensor,
    RequestedOutput,
)

if TYPE_CHECKING:
    from modelyard.tracing import Tracing

BLS_TIMEOUT_S = 60.0  # the longest a model's call to another model waits


def model_parameters(
    parameters: dict[str, Any], principals: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The parameters a model reads: the caller's own, without those of the protocol (and
    the principals the request is for, which authorise the model's own calls)."""
    return ModelParameters(
        {
            key: value
            for key, value in parameters.items()
            if key not in PROTOCOL_PARAMETERS and not key.startswith("triton_")
        },
        principals,
    )


def _bls_deadline(request: InferRequest) -> ModelServerError:
    return ModelServerError.of(
        error_rules.BLS_DEADLINE,
        f"a call to model '{request.model_name}' from another model's code took over "
        f"{BLS_TIMEOUT_S:.0f} s",
        where=f"model '{request.model_name}' (its queue and instances)",
    )


def _invalid(model: str, detail: str, where: str) -> ModelServerError:
    return ModelServerError.of(
        error_rules.INPUT_VALIDATION, f"{detail} for model '{model}'", where=where
    )


def _refused(
    detail: str, where: str, rule: str = "model-server/input-validation"
) -> ModelServerError:
    return ModelServerError(
        detail, code=Code.INVALID_ARGUMENT, rule=rule, where=where, triton=True
    )


def _listed(names: list[str]) -> str:
    """Names as Triton lists them in its errors: ``['INPUT0','INPUT1']``."""
    return "[" + ",".join(f"'{shown(n)}'" for n in names) + "]"


def _dims_text(dims: Any) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _check_input_count(
    spec: ModelSpec, name: str, given: list[str], where: str, check_names: bool = False
) -> None:
    """Triton's check of how many inputs a request gives, in its words; ``check_names``:
    also that every required one is among them (after the names are known good)."""
    required = [t.name for t in spec.inputs.values() if not t.optional]
    missing = [n for n in required if n not in given]
    if len(spec.inputs) >= len(given) >= len(required) and (check_names is False or not missing):
        return
    if len(required) == len(spec.inputs):
        expected = f"expected {len(spec.inputs)} inputs"
    else:
        expected = f"expected number of inputs between {len(required)} and {len(spec.inputs)}"
    raise _refused(
        f"{expected} but got {len(given)} inputs for model '{name}'. Got input(s) "
        f"{_listed(given)}, but missing required input(s) {_listed(missing)}. Please "
        "provide all required input(s).",
        where,
    )


def _check_inputs(
    mv: ModelVersion, request: InferRequest
) -> tuple[dict[str, np.ndarray], int, tuple[tuple[str, tuple[int, ...]], ...]]:
    """The inputs as the engine takes them, the rows, and the reshapes made.

    The checks and their words are Triton's (``InferenceRequest::PrepareForInference``),
    in its order: the number of inputs, their names, the batch, then each input's datatype
    and shape. Where several inputs are wrong, the one named is the one Triton names: it
    goes through a request's inputs last given first."""
    spec: ModelSpec = mv.spec
    name = mv.name
    where = f"GET /v2/models/{name}/config shows the expected inputs"
    inputs = request.inputs
    given = list(reversed(inputs))  # Triton's order (its map of a request's inputs)
    _check_input_count(spec, name, given, where)
    for input_name in given:
        if input_name not in spec.inputs:
            raise _refused(
                f"unexpected inference input '{shown(input_name)}' for model '{name}'", where
            )
    _check_input_count(spec, name, given, where, check_names=True)  # optional for required
    rows = 1
    if spec.batched:
        batch: int | None = None
        for input_name in given:
            shape = inputs[input_name].shape
            if len(shape) < 1:
                raise _refused(
                    f"input '{input_name}' has no shape but model requires batch dimension "
                    f"for '{name}'",
                    where,
                )
            if batch is None:
                batch = shape[0]
            elif shape[0] != batch:
                raise _refused(
                    f"input '{input_name}' batch size does not match other inputs for '{name}'",
                    where,
                )
        if batch is not None:
            if batch < 1:
                raise _refused(f"inference request batch-size must be >= 1 for '{name}'", where)
            if batch > spec.max_batch_size:
                raise _refused(
                    f"inference request batch-size must be <= {spec.max_batch_size} for "
                    f"'{name}'",
                    f"max_batch_size in {name}/config.pbtxt, or split the request",
                    "model-server/max-batch-size",
                )
            rows = batch
    prepared: dict[str, np.ndarray] = {}
    reshapes: list[tuple[str, tuple[int, ...]]] = []
    for input_name in given:
        tensor = spec.inputs[input_name]
        array = inputs[input_name]
        datatype = request.input_datatypes.get(input_name, tensor.datatype)
        if datatype != tensor.datatype:
            raise _refused(
                f"inference input '{input_name}' data-type is '{datatype}', but model "
                f"'{name}' expects '{tensor.datatype}'",
                where,
            )
        shape = array.shape
        item_shape = shape[1:] if spec.batched else shape
        if not tensor.accepts_shape(item_shape):
            expected = [-1, *tensor.dims] if spec.batched else list(tensor.dims)
            note = (
                " NOTE: Setting a non-zero max_batch_size in the model config requires a batch "
                "dimension to be prepended to each input shape. If you want to specify the "
                "full shape including the batch dim in your input dims config, try setting "
                "max_batch_size to zero. See the model configuration docs for more info on "
                "max_batch_size."
                if spec.batched
                else ""
            )
            raise _refused(
                f"unexpected shape for input '{input_name}' for model '{name}'. Expected "
                f"{_dims_text(expected)}, got {_dims_text(shape)}.{note}",
                where,
            )
        if tensor.reshape is not None:
            lead = (shape[0],) if spec.batched else ()
            array = array.reshape(lead + tensor.reshape)
            reshapes.append((input_name, array.shape))
        prepared[input_name] = array
    prepared = {n: prepared[n] for n in spec.inputs if n in prepared}  # the config's order
    return prepared, rows, tuple(reshapes)


def _by_name_and_version(mv: ModelVersion) -> tuple[str, int]:
    return mv.name, mv.version


def _fill_raw_input(mv: ModelVersion, request: InferRequest) -> None:
    """A raw binary request's one input, named, typed and shaped from the config as
    Triton's ``InferenceRequest::Normalize`` does, in its words: one batch row where the
    model batches, the one variable dim taken from the byte count, and a BYTES input only
    where it is one element (the body is that element)."""
    spec = mv.spec
    name = mv.name
    raw = request.raw_input or b""
    where = f"GET /v2/models/{name}/config shows the model's input"
    if len(spec.inputs) != 1:
        raise _refused(
            f"Raw request must only have 1 input (found 1) to be deduced but got "
            f"{len(spec.inputs)} inputs in '{name}' model configuration",
            where,
        )
    tensor = next(iter(spec.inputs.values()))
    shape = [1] if spec.batched else []
    dynamic = -1
    count = 1
    for dim in tensor.dims:
        if dim == -1:
            if dynamic != -1:
                raise _refused(
                    f"The shape of the raw input '{tensor.name}' can not be deduced because "
                    "there are more than one variable-sized dimension",
                    where,
                )
            dynamic = len(shape)
        else:
            count *= dim
        shape.append(dim)
    if tensor.datatype == "BYTES":
        if dynamic != -1 or count != 1:
            raise _refused(
                f"For BYTE datatype raw input '{tensor.name}', the model must have input "
                "shape [1]",
                where,
            )
        array = np.empty(1, dtype=object)
        array[0] = raw
        array = array.reshape(shape)
    elif tensor.datatype == "BF16":
        raise _refused(f"raw input '{tensor.name}' of BF16 is not served", where)
    else:
        itemsize = tensor.dtype.itemsize
        if dynamic != -1:
            shape[dynamic] = len(raw) // max(count * itemsize, 1)
        expected = math.prod(shape) * itemsize
        if len(raw) != expected:
            raise _refused(
                f"input byte size mismatch for input '{tensor.name}' for model '{name}'. "
                f"Expected {expected}, got {len(raw)}",
                where,
                "protocol/tensor-size",
            )
        array = np.frombuffer(raw, dtype=tensor.dtype.newbyteorder("<")).reshape(shape)
    request.inputs = {tensor.name: array}
    request.input_datatypes = {tensor.name: tensor.datatype}
    request.raw_input = None


def _requested(mv: ModelVersion, request: InferRequest) -> list[RequestedOutput]:
    spec = mv.spec
    if not request.outputs:  # none named, or an empty list: every output, as in Triton
        return [RequestedOutput(name) for name in spec.outputs]
    if len(request.outputs) > len(spec.outputs):  # the decoders refuse a name given twice
        raise _invalid(
            mv.name,
            f"{len(request.outputs)} outputs requested, and the model has {len(spec.outputs)}",
            f"GET /v2/models/{mv.name}/config shows the outputs",
        )
    for out in request.outputs:
        if out.name not in spec.outputs:
            raise _refused(
                f"unexpected inference output '{shown(out.name)}' for model '{mv.name}'",
                f"GET /v2/models/{mv.name}/config shows the outputs "
                f"({', '.join(spec.outputs)})",
            )
        if out.classification and spec.outputs[out.name].datatype in ("BYTES", "BOOL"):
            raise _invalid(
                mv.name,
                f"output '{out.name}' is {spec.outputs[out.name].datatype}; classification "
                "needs a numeric output",
                "drop the classification parameter for this output",
            )
    return request.outputs


def classify(array: np.ndarray, top_k: int, labels: list[str] | None, batched: bool) -> np.ndarray:
    """Triton's classification extension: BYTES "value:index[:label]", top k per row."""
    rows = array.reshape(array.shape[0], -1) if batched else array.reshape(1, -1)
    width = rows.shape[1]
    k = min(top_k, width)
    integer = rows.dtype.kind in "iu"
    if integer:  # largest first, ties by index, without negating (a signed minimum
        # overflows, an unsigned type wraps): sorted from the right end and read back
        order = (width - 1 - np.argsort(rows[:, ::-1], axis=1, kind="stable"))[:, ::-1][:, :k]
    else:
        order = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    # Triton writes the value with std::to_string: an integer as one, a float as %f
    out = np.empty((rows.shape[0], k), dtype=object)
    for r in range(rows.shape[0]):
        for j, index in enumerate(order[r]):
            value = rows[r, index]
            shown = str(int(value)) if integer else f"{float(value):f}"
            text = f"{shown}:{int(index)}"
            if labels and index < len(labels):
                text += f":{labels[index]}"
            out[r, j] = text.encode("utf-8")
    return out if batched else out.reshape(k)


@dataclass(slots=True, eq=False)
class VersionLane:
    """What validating a request decided, for every request of the same shape (``InferLane``).

    ``reshapes``: the inputs the config reshapes, and to what; the lane's requests all
    have the same shapes, so each input's new shape is fixed too.
    """

    manager: ModelManager
    asked_version: str | None  # as the request named it: None follows the latest
    version: ModelVersion
    rows: int
    requested: list[RequestedOutput]
    output_names: list[str]
    shape_key: tuple[Any, ...]
    reshapes: tuple[tuple[str, tuple[int, ...]], ...]
    fixed_outputs: tuple[FixedOutput, ...] | None
    # a sequence model's request: its sequence and flags (the same for every request of
    # the lane: an HTTP lane is kept under the header bytes, which carry them)
    sequence: SequenceFlags | None = None
    # the request's own parameters, for a model that reads requests (None for any other: the
    # same for every request of the lane, as the sequence flags are)
    parameters: dict[str, Any] | None = None
    model_name: str = ""
    model_version: str = ""
    residency: Residency | None = None  # the manager's, read once: it never changes

    def __post_init__(self) -> None:
        self.model_name = self.version.name
        self.model_version = str(self.version.version)
        self.residency = self.manager.residency

    @property
    def reusable(self) -> bool:
        """A sequence's request is one-off: its id and flags are its own."""
        return self.sequence is None

    def is_current(self) -> bool:
        try:
            return self.manager.resolve(self.model_name, self.asked_version) is self.version
        except ModelServerError:
            return False

    def reshaped(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The inputs with the shapes the config's reshapes give them."""
        if not self.reshapes:
            return inputs
        inputs = dict(inputs)
        for name, shape in self.reshapes:
            if name in inputs:
                inputs[name] = inputs[name].reshape(shape)
        return inputs

    def submit(
        self,
        inputs: dict[str, np.ndarray],
        priority: int = 0,
        timeout_us: int = 0,
        deadline: float | None = None,
        timing: list[int] | None = None,
        arrived_ns: int = 0,
        steps: list[StepTimes] | None = None,
        trace_context: str | None = None,
    ) -> asyncio.Future[dict[str, np.ndarray]]:
        if self.reshapes:
            inputs = self.reshaped(inputs)
        residency = self.residency
        if residency is not None:
            residency.count_request(self.model_name)
        submitted = Submission(  # by position: the fields in their order
            inputs, self.output_names, self.rows, deadline, priority, timeout_us,
            self.shape_key, timing, arrived_ns, self.parameters, self.sequence, steps,
            trace_context,
        )  # fmt: skip
        return self.version.scheduler.submit(submitted)

    def response(self, request: InferRequest, results: dict[str, np.ndarray]) -> InferResponse:
        mv = self.version
        spec = mv.spec
        outputs: list[OutputTensor] = []
        for out in self.requested:
            array = results.get(out.name)
            if array is None:  # the model left it out: so does the response, as Triton's
                continue
            tensor = spec.outputs[out.name]
            if tensor.reshape is not None and 0 not in tensor.dims:
                array = array.reshape(tensor.answered_shape(array.shape, spec.batched))
            binary = request.binary_output_default if out.binary is None else out.binary
            if out.classification:
                labels = mv.labels.get(out.name)
                array = classify(array, out.classification, labels, spec.batched)
                outputs.append(OutputTensor(out.name, "BYTES", array, binary))
                continue
            datatype = tensor.datatype
            if datatype != "BYTES" and datatype != "BF16" and array.dtype != tensor.dtype:
                array = array.astype(tensor.dtype, copy=False)
            outputs.append(OutputTensor(out.name, datatype, array, binary))
        return InferResponse(
            model_name=self.model_name,
            model_version=self.model_version,
            outputs=outputs,
            id=request.id,
            parameters=_response_parameters(mv, self.sequence, outputs),
        )


def _response_parameters(
    mv: ModelVersion, sequence: SequenceFlags | None, outputs: list[OutputTensor]
) -> dict[str, Any]:
    """What a response carries besides its outputs: its model's own parameters (Triton's
    identity backend's), and an ensemble's sequence."""
    sequence_said = _ensemble_sequence(mv, sequence) if outputs else {}
    if not mv.response_parameters:  # most models: nothing to merge
        return sequence_said
    return {**mv.response_parameters, **sequence_said}


def _ensemble_sequence(mv: ModelVersion, sequence: SequenceFlags | None) -> dict[str, Any]:
    """What an ensemble's response of a sequence's request says of its place in it, as
    Triton's ensembles answer (its steps' outputs carry the request's sequence id and
    flags; Triton writes them for a request of no sequence too, as id 0, here left out)."""
    if sequence is None or mv.backend != ENSEMBLE:
        return {}
    return {
        "sequence_id": sequence.id,
        "sequence_start": sequence.start,
        "sequence_end": sequence.end,
    }


def _fixed_outputs(
    mv: ModelVersion, request: InferRequest, requested: list[RequestedOutput], rows: int
) -> tuple[FixedOutput, ...] | None:
    spec = mv.spec
    fixed: list[FixedOutput] = []
    for out in requested:
        tensor = spec.outputs[out.name]
        if out.classification or -1 in tensor.dims or tensor.datatype in ("BYTES", "BF16"):
            return None
        shape = (rows, *tensor.dims) if spec.batched else tensor.dims
        binary = request.binary_output_default if out.binary is None else out.binary
        exact = tensor.reshape is None or math.prod(tensor.dims) == 0
        fixed.append((out.name, tensor.datatype, tensor.dtype, shape, binary, exact))
    return tuple(fixed)


def _stream_response(
    lane: VersionLane, request: InferRequest, outputs: dict[str, np.ndarray]
) -> InferResponse:
    """One response of a decoupled model, with the outputs it sent of those asked for."""
    sent = [out for out in lane.requested if out.name in outputs]
    if len(sent) == len(lane.requested):
        return lane.response(request, outputs)
    partial = copy.copy(lane)
    partial.requested = sent
    return partial.response(request, outputs)


class LocalDataPlane:
    """The data plane of an instance: its own model server answers."""

    forwards_requests = False

    def __init__(
        self,
        manager: ModelManager,
        clock: Clock = SYSTEM_CLOCK,
        server_id: str = "modelyard",
        server_version: str = __version__,
    ) -> None:
        self.manager = manager
        self.generation = manager.generation
        self.clock = clock
        self.started = clock.monotonic()
        manager.infer_from_thread = self.infer_from_thread
        # a model's own repository API calls (pb_utils.load_model...); governance sets its
        # ``authorize`` where auth is on
        self.model_control = ModelControl(manager, self.model_ready)
        manager.control_from_thread = self.model_control
        self.server_id = server_id  # the name server metadata gives (tritonserver's --id)
        self.server_version = server_version  # Triton's, when started as tritonserver
        # the front doors' tracing, where a model's own calls join their caller's trace
        self.tracing: Tracing | None = None
        # where auth is on: (principals, model) raises unless each may infer on the model;
        # a model's own calls (BLS) pass through it (governance sets it)
        self.authorize_call: Callable[[tuple[str, ...], str], None] | None = None

    # ---- health and metadata -------------------------------------------

    def server_live(self) -> bool:
        return self.manager.initialize_error is None

    def server_ready(self) -> bool:
        return self.manager.is_ready()

    def server_metadata(self) -> dict[str, Any]:
        return {
            "name": self.server_id,
            "version": self.server_version,
            "extensions": INSTANCE_EXTENSIONS,
        }

    def model_ready(self, name: str, version: str | None) -> bool:
        try:
            self.manager.resolve(name, version)
        except ModelServerError:
            return False
        return True

    def model_metadata(self, name: str, version: str | None) -> dict[str, Any]:
        mv = self.manager.resolve(name, version)
        spec = mv.spec
        lead = [-1] if spec.batched else []
        versions = [str(v.version) for v in self.manager.all_versions(name)]
        return {
            "name": name,
            "versions": sorted(versions, key=int),
            "platform": mv.config.platform or mv.backend,
            "inputs": [
                {"name": t.name, "datatype": t.datatype, "shape": lead + list(t.dims)}
                for t in spec.inputs.values()
            ],
            "outputs": [
                {"name": t.name, "datatype": t.datatype, "shape": lead + list(t.dims)}
                for t in spec.outputs.values()
            ],
        }

    def model_config(self, name: str, version: str | None) -> dict[str, Any]:
        return self.manager.resolve(name, version).config_document()

    # ---- inference ------------------------------------------------------

    async def infer(self, request: InferRequest) -> InferResponse:
        lane = await self._resident_lane(request)
        trace = request.trace
        submitted = lane.submit(
            request.inputs,
            request.priority,
            request.timeout_us,
            request.deadline,
            None if trace is None else trace.timing,
            request.arrived_ns,
            None if trace is None else trace.steps,
            # only a model that reads requests sees it
            None if trace is None or lane.parameters is None else trace.model_context(),
        )
        if request.queued is not None:
            request.queued()
        return lane.response(request, await submitted)

    async def infer_stream(self, request: InferRequest) -> AsyncIterator[StreamResponse]:
        """A request's responses as they come: a decoupled model's zero, one or many, the
        last marked final (alone, when the model sent FINAL with no response); any other
        model's one response, final."""
        lane = await self._resident_lane(request)
        version = lane.version
        scheduler = version.scheduler
        if not scheduler.decoupled:  # one response, final
            yield StreamResponse(await self.infer(request), None, True)
            return
        inputs = lane.reshaped(request.inputs)
        if lane.residency is not None:  # queued as InferLane.submit counts it
            lane.residency.count_request(lane.model_name)
        trace = request.trace
        submitted = Submission(
            inputs, lane.output_names, lane.rows, timeout_us=request.timeout_us,
            arrived_ns=request.arrived_ns, parameters=lane.parameters, sequence=lane.sequence,
            trace_context=None if trace is None or lane.parameters is None
            else trace.model_context(),
        )  # fmt: skip
        stream = scheduler.submit_stream(submitted)
        if request.queued is not None:
            request.queued()
        try:
            while True:
                item = await stream.get()
                response = None
                if item.outputs is not None:
                    response = _stream_response(lane, request, item.outputs)
                yield StreamResponse(response, item.error, item.final)
                if item.final:
                    return
        finally:
            stream.cancel()  # after FINAL: nothing left; before it: the caller has gone

    def infer_from_thread(self, request: InferRequest, stream: bool = False) -> Any:
        """``infer`` for a model's own code on an instance thread (Triton's BLS): runs on the
        event loop, through the target's scheduler, and waits for the answer here. Where auth
        is on, every principal the calling batch's requests are for must be allowed to
        infer on the model called (``authorize_call``). ``stream``: the responses of
        ``infer_stream`` as they come (a decoupled model's many), an iterator."""
        loop = self._loop_for_a_call(request)
        if stream:
            return self._stream_from_thread(request, loop)
        future = asyncio.run_coroutine_threadsafe(self._called(request), loop)
        try:
            return future.result(BLS_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise _bls_deadline(request) from None

    def _stream_from_thread(
        self, request: InferRequest, loop: asyncio.AbstractEventLoop
    ) -> Iterator[StreamResponse]:
        items: queue.Queue[StreamResponse | BaseException | None] = queue.Queue()

        async def pump() -> None:
            try:
                self._check_called(request)
                async for item in self.infer_stream(request):
                    items.put(item)
            except Exception as exc:
                items.put(exc)
            finally:
                items.put(None)

        future = asyncio.run_coroutine_threadsafe(pump(), loop)
        try:
            while True:
                try:
                    item = items.get(timeout=BLS_TIMEOUT_S)
                except queue.Empty:
                    raise _bls_deadline(request) from None
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:  # ended early (the model stopped reading): its request is cancelled
            future.cancel()

    async def _called(self, request: InferRequest) -> InferResponse:
        self._check_called(request)
        tracing = self.tracing
        if request.trace_parent is None or tracing is None or request.trace is not None:
            return await self.infer(request)
        # made with its caller's trace: its spans join the caller's (Triton's BLS tracing)
        request.trace = trace = tracing.begin_child(
            request.model_name, request.trace_parent, time.monotonic_ns()
        )
        version = ""
        try:
            response = await self.infer(request)
            version = response.model_version
            return response
        finally:
            if trace is not None:
                tracing.finish_child(trace, version, time.monotonic_ns())

    def _check_called(self, request: InferRequest) -> None:
        """Triton's stub asks whether the model called is ready before it sends the
        request, and refuses in its own words (python_backend's request_executor.cc);
        here they lead the line that says why. A model that loads on demand is not
        refused: the call waits for its load."""
        try:
            self.manager.resolve(request.model_name, request.model_version)
        except NotResident:
            return
        except ModelyardError as error:
            raise ModelServerError(
                "Failed for execute the inference request. Model "
                f"'{shown(request.model_name)}' is not ready. {error.detail}",
                code=error.code, rule=error.rule, where=error.where,
                retry_after=error.retry_after, triton=True,
            ) from error  # fmt: skip

    def _loop_for_a_call(self, request: InferRequest) -> asyncio.AbstractEventLoop:
        if self.authorize_call is not None:
            self.authorize_call(request.principals, request.model_name)
        loop = self.manager.loop
        if loop is None or not loop.is_running():
            raise ModelServerError.of(
                error_rules.BLS_NOT_RUNNING,
                "the server is not running: a model can call other models only while it serves",
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # waiting here would stop the loop that must answer
            raise ModelServerError.of(
                error_rules.BLS_FROM_EVENT_LOOP,
                "a model called another model from the event loop's thread",
            )
        return loop

    async def _resident_lane(self, request: InferRequest) -> VersionLane:
        """``lane(request)``, after its model's load where it loads on demand."""
        try:
            return self.lane(request)
        except NotResident as missing:
            await missing.resident(request.wait_deadline())
            return self.lane(request)

    def lane(self, request: InferRequest) -> VersionLane:
        """Resolve and validate ``request``: the lane of every request of its shape."""
        mv = self.manager.resolve(request.model_name, request.model_version)
        try:
            if request.raw_input is not None:
                _fill_raw_input(mv, request)
            prepared, rows, reshapes = _check_inputs(mv, request)
            requested = _requested(mv, request)
            flags = None
            if mv.sequence is not None:
                flags = sequence_flags(mv.name, request.parameters, mv.sequence)
                if mv.spec.batched and rows != 1:
                    raise one_row_per_request(mv.name)
            elif request.parameters.get("sequence_id"):  # an ensemble passes it to its steps
                flags = sequence_flags(mv.name, request.parameters)
        except ModelyardError as error:
            if error.code is Code.INVALID_ARGUMENT:  # the caller's inputs, not the server
                mv.scheduler.stats.record_bad_request()
            raise
        return VersionLane(
            self.manager,
            request.model_version,
            mv,
            rows,
            requested,
            [o.name for o in requested],
            shape_key_of(prepared),
            reshapes,
            # a reply with parameters of its own (an ensemble's sequence, a model's own) is
            # encoded each time
            None
            if mv.response_parameters or _ensemble_sequence(mv, flags)
            else _fixed_outputs(mv, request, requested, rows),
            flags,
            model_parameters(request.parameters, request.principals) if mv.takes_requests else None,
        )

    @property
    def in_flight(self) -> int:
        """Requests queued or executing, in the versions served and those retiring.

        An ensemble's request counts in the ensemble and in the step it is at.
        """
        return sum(mv.scheduler.pending for mv in self.manager.all_versions(retiring=True))

    def live_stats(self, governance: dict[str, Any] | None) -> dict[str, Any]:
        return live_stats(self, governance)

    # ---- statistics -----------------------------------------------------

    def statistics(self, name: str | None, version: str | None) -> dict[str, Any]:
        if name is not None:  # only ready versions have statistics, as in Triton
            if self.manager.repository.ambiguity(name):
                self.manager.resolve(name, version)  # raises: which one is meant
            versions = self.manager.all_versions(name)
            if not versions:
                raise ModelServerError.of(
                    error_rules.NO_STATISTICS,
                    f"requested model '{shown(name)}' is not available",
                    triton=True,
                )
            if version:
                versions = [mv for mv in versions if str(mv.version) == version]
                if not versions:
                    raise ModelServerError.of(
                        error_rules.NO_STATISTICS,
                        f"requested model version is not available for model '{shown(name)}'",
                        triton=True,
                    )
        else:
            versions = self.manager.all_versions()
        versions = sorted(versions, key=_by_name_and_version)  # Triton's order
        return {"model_stats": [self._version_stats(mv) for mv in versions]}

    @staticmethod
    def _version_stats(mv: ModelVersion) -> dict[str, Any]:
        s = mv.scheduler.stats

        def dur(count: int, ns: int) -> dict[str, int]:
            return {"count": count, "ns": ns}

        computed = s.success_count - s.cache_hit_count  # Triton: compute counts leave hits out
        with s.lock:  # an instance thread may add an index meanwhile
            responses = sorted((i, list(v)) for i, v in s.response_stats.items())

        return {
            "name": mv.name,
            "version": str(mv.version),
            "last_inference": s.last_inference_ms,
            "inference_count": s.inference_count,
            "execution_count": s.execution_count,
            "memory_bytes": mv.memory_bytes,
            "device_memory_bytes": mv.device_memory_bytes,
            "devices": list(mv.devices),
            "inference_stats": {
                "success": dur(s.success_count, s.success_ns),
                "fail": dur(s.fail_count, s.fail_ns),
                "queue": dur(s.success_count, s.queue_ns),
                "compute_input": dur(computed, s.compute_input_ns),
                "compute_infer": dur(computed, s.compute_infer_ns),
                "compute_output": dur(computed, s.compute_output_ns),
                "cache_hit": dur(s.cache_hit_count, s.cache_hit_ns),
                "cache_miss": dur(s.cache_miss_count, s.cache_miss_ns),
            },
            "batch_stats": [
                {
                    "batch_size": size,
                    "compute_input": dur(v[0], v[1]),
                    "compute_infer": dur(v[0], v[2]),
                    "compute_output": dur(v[0], v[3]),
                }
                for size, v in sorted(s.batch_stats.items())
            ],
            "response_stats": {
                str(index): {
                    name: dur(v[2 * at], v[2 * at + 1]) for at, name in enumerate(RESPONSE_STATS)
                }
                for index, v in responses
            },
        }
