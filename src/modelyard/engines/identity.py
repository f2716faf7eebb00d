"""Triton's identity backend (``backend: "identity"``): OUTPUTn is INPUTn.

Triton ships it with its server and its QA models use it where only the server's part
of a request matters (the ``nop_*`` steps of its ensembles, ``identity_*`` models). It
has no model file. As Triton's: inputs and outputs pair up by index (``INPUT<n>`` and
``OUTPUT<n>`` with the same datatype and shape, checked at load); an optional input a
request leaves out gives zeros of its shape (-1 taken as 1); the ``execute_delay_ms``
parameter sleeps before each execution (``instance_wise_delay_multiplier``: times the
instance's index), ``creation_delay_sec`` before the load finishes. As Triton's, every
response carries the parameters ``param0`` to ``param3`` (a string, an integer, a boolean
and a double), the counter ``input_byte_size_counter`` (per model and version) counts the
bytes of each input a requested output copies, and at the verbose log level each request's
input is logged with its ``byte_size`` (a BF16 element is 2 bytes, a BYTES element its
length and 4). With
``enable_custom_tracing: "true"`` it reports, as Triton's does, custom trace activities of
each traced request (a ``CUSTOM_ACTIVITY`` span of 100 ms, a ``CUSTOM_SINGLE_ACTIVITY``
event, then ``nested_span_count`` spans ``CUSTOM_ACTIVITY<n>`` each inside the one before,
100 ms apart, the event in every ``single_activity_frequency``-th). Triton's backend
answers each request of a batch with its own inputs, so an input with
``allow_ragged_batch`` comes back in each request's own shape: here the batch's flat run of
it is its output's (``ragged_outputs``), which the server takes apart per request.
"""

from __future__ import annotations

import math
import time
from types import MappingProxyType
from typing import Any

import numpy as np
import structlog
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.engines.base import (
    Engine,
    LoadContext,
    Signature,
    current_batch_requests,
    current_traced_activities,
)
from modelyard.engines.python_metrics import COUNTER, MODEL_METRICS
from modelyard.errors import EngineError
from modelyard.logging import SETTINGS
from modelyard.types import CONFIG_TO_V2, numpy_dtype

log = structlog.get_logger("modelyard.engines")

# the largest delays a config may ask for: a test model's, never a stall
_MAX_DELAY_MS = 600_000
_MAX_CREATION_DELAY_S = 600
_MAX_NESTED_SPANS = 100  # each 100 ms of a traced request's execution
_ACTIVITY_S = 0.1
# what Triton's identity backend attaches to every response
RESPONSE_PARAMETERS = MappingProxyType(
    {"param0": "an example string parameter", "param1": 42, "param2": False, "param3": 123.123}
)
BYTE_SIZE_COUNTER = "input_byte_size_counter"
_BYTE_SIZE_HELP = "Cumulative input byte size of all requests received by the model"


def _refuse(ctx: LoadContext, detail: str) -> EngineError:
    return EngineError.of(
        error_rules.IDENTITY, detail, where=f"input and output in {ctx.config.name}/config.pbtxt"
    )


def _shape(entry: Any) -> tuple[int, ...]:
    return tuple(entry.reshape.shape) if entry.HasField("reshape") else tuple(entry.dims)


def _int_parameter(ctx: LoadContext, key: str, ceiling: int) -> int:
    raw = ctx.parameter(key, "0") or "0"
    try:
        value = int(raw)
    except ValueError:
        raise EngineError.of(
            error_rules.IDENTITY,
            f"parameter '{key}' must be an integer, got '{raw[:40]}'",
            where=f"parameters in {ctx.config.name}/config.pbtxt",
        ) from None
    return min(max(value, 0), ceiling)


class IdentityEngine(Engine):
    name = "identity"
    extra = "all"
    default_filenames = ()
    serves_ragged_batches = True
    response_parameters = RESPONSE_PARAMETERS
    reads_request_rows = True  # its verbose log says each request's inputs

    def __init__(self) -> None:
        self._pairs: dict[str, str] = {}  # output -> input
        self._optional: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {}  # by output
        self._batched = False
        self._stacked: tuple[str, ...] = ()  # the inputs batched by rows
        self._delay_s = 0.0
        self._nested_spans = 0
        self._single_every = 1
        self._model = ""
        # input -> its datatype and an element's bytes as Triton counts them (0: BYTES)
        self._elements: dict[str, tuple[str, int]] = {}
        self._counter: int | None = None  # the input_byte_size_counter series' handle

    def load(self, ctx: LoadContext) -> Signature | None:
        config = ctx.config
        if len(config.input) != len(config.output):
            raise _refuse(ctx, "model configuration must have equal input/output pairs")
        inputs: dict[str, tuple[str, tuple[int, ...], bool]] = {}
        ragged = {entry.name for entry in config.input if entry.allow_ragged_batch}
        flat: dict[str, str] = {}
        outputs: dict[str, tuple[str, tuple[int, ...]]] = {}
        for entry, output in zip(config.input, config.output, strict=True):
            if not entry.name.startswith("INPUT"):
                raise _refuse(
                    ctx, f"expected input name to follow INPUT<index> pattern, got '{entry.name}'"
                )
            if not output.name.startswith("OUTPUT"):
                raise _refuse(
                    ctx,
                    f"expected output name to follow OUTPUT<index> pattern, got '{output.name}'",
                )
            datatype = mc.DataType.Name(entry.data_type)
            inputs[entry.name[5:]] = (datatype, _shape(entry), entry.optional)
            v2 = CONFIG_TO_V2.get(datatype, "FP32")
            size = 2 if v2 == "BF16" else 0 if v2 == "BYTES" else numpy_dtype(v2).itemsize
            self._elements[entry.name] = (v2, size)
            outputs[output.name[6:]] = (mc.DataType.Name(output.data_type), _shape(output))
        for index, (datatype, shape) in outputs.items():
            if index not in inputs:
                raise _refuse(ctx, "expected input and output indices to match")
            in_type, in_shape, optional = inputs[index]
            if in_type != datatype:
                raise _refuse(
                    ctx,
                    f"expected input and output datatype to match, got {in_type} and {datatype}",
                )
            if in_shape != shape:
                raise _refuse(
                    ctx,
                    f"expected input and output shape to match, got {list(in_shape)} and "
                    f"{list(shape)}",
                )
            self._pairs[f"OUTPUT{index}"] = f"INPUT{index}"
            if f"INPUT{index}" in ragged:
                flat[f"OUTPUT{index}"] = f"INPUT{index}"
            if optional:
                dtype = numpy_dtype(CONFIG_TO_V2.get(in_type, "FP32"))
                self._optional[f"OUTPUT{index}"] = (dtype, tuple(d if d > 0 else 1 for d in shape))
        self.ragged_outputs = flat
        self._batched = config.max_batch_size > 0
        # a ragged input reaches execute() flat: its length counts elements, not rows
        self._stacked = tuple(e.name for e in config.input if e.name not in ragged)
        required = [e.name for e in config.input if e.name not in ragged and not e.optional]
        if ragged and self._optional and not required:
            raise _refuse(
                ctx,
                f"ragged input '{min(ragged)}' and optional inputs with no required input "
                "batched by rows: a ragged batch that leaves an optional input out has no "
                "rows to give its zeros; make an input that is not ragged required",
            )
        delay_ms = _int_parameter(ctx, "execute_delay_ms", _MAX_DELAY_MS)
        multiplier = _int_parameter(ctx, "instance_wise_delay_multiplier", 1_000)
        if multiplier > 0:
            delay_ms *= max(multiplier * ctx.instance_index, 1)
        self._delay_s = min(delay_ms, _MAX_DELAY_MS) / 1000
        creation_delay = _int_parameter(ctx, "creation_delay_sec", _MAX_CREATION_DELAY_S)
        if ctx.parameter("enable_custom_tracing", "") == "true":
            self.reports_activities = True
            self.runs_on_loop = False  # a traced request's activities take their time
            self._nested_spans = _int_parameter(ctx, "nested_span_count", _MAX_NESTED_SPANS)
            frequency = 1  # Triton's default
            if ctx.parameter("single_activity_frequency", ""):
                frequency = _int_parameter(ctx, "single_activity_frequency", 1_000)
            if frequency < 1:
                raise EngineError.of(
                    error_rules.IDENTITY,
                    "parameter 'single_activity_frequency' must be 1 or more",
                    where=f"parameters in {ctx.config.name}/config.pbtxt",
                )
            self._single_every = frequency
        if creation_delay:
            time.sleep(creation_delay)
        self._model = config.name
        family = MODEL_METRICS.call(self, "family", (BYTE_SIZE_COUNTER, _BYTE_SIZE_HELP, COUNTER))
        labels = {"model": config.name, "version": ctx.version_dir.name}
        self._counter = MODEL_METRICS.call(self, "metric", (family, labels, None))
        return None

    def unload(self) -> None:
        MODEL_METRICS.drop_owner(self)

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        if self._delay_s:
            time.sleep(self._delay_s)
        if self.reports_activities:
            for activities in current_traced_activities():
                self._report_activities(activities)
        rows = 0
        if self._batched:
            stacked = (inputs.get(name) for name in self._stacked)
            rows = next((len(a) for a in stacked if a is not None and a.ndim), 1)
        results: dict[str, np.ndarray] = {}
        copied = 0
        for output in outputs:
            source = inputs.get(self._pairs.get(output, ""))
            if source is not None:
                results[output] = source
                copied += self._byte_size(self._pairs[output], source)
            elif output in self._optional:
                dtype, shape = self._optional[output]
                full = (rows, *shape) if self._batched else shape
                fill = b"" if dtype == np.object_ else 0
                results[output] = np.full(full, fill, dtype=dtype)
        if self._counter is not None and copied:
            MODEL_METRICS.call(self, "increment", (self._counter, copied))
        if SETTINGS.verbose:
            self._log_requests(inputs, outputs)
        return results

    def _byte_size(self, name: str, array: np.ndarray) -> int:
        """An input's bytes as Triton's backend API counts them."""
        size = self._elements.get(name, ("", array.itemsize))[1]
        if size:
            return array.size * size
        return sum(4 + len(x if isinstance(x, bytes) else str(x).encode()) for x in array.flat)

    def _log_requests(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> None:
        """Each request's inputs that a requested output copies, as Triton's backend logs
        them: the request's part of the batch (of a ragged input, its own elements)."""
        taken = dict.fromkeys(inputs, 0)  # how far into each input the requests before went
        for index, request in enumerate(current_batch_requests() or ()):
            shapes = request.ragged_shapes or {}
            for output in outputs:
                name = self._pairs.get(output, "")
                array = inputs.get(name)
                if array is None:
                    continue
                if name in shapes:
                    count = math.prod(shapes[name])
                    part = array[taken[name] : taken[name] + count].reshape(shapes[name])
                elif self._batched:
                    count = request.rows
                    part = array[taken[name] : taken[name] + count]
                else:
                    count, part = 0, array
                taken[name] += count
                datatype = self._elements.get(name, ("", 0))[0]
                shape = ",".join(str(d) for d in part.shape)
                said = (
                    f"input {name}: datatype = {datatype}, shape = [{shape}], "
                    f"byte_size = {self._byte_size(name, part)}, buffer_count = 1"
                )
                log.debug("identity_input", model=self._model, request=index, triton=said)

    def _report_activities(self, activities: list[tuple[str, int]]) -> None:
        """Triton's identity backend's custom activities of one traced request."""

        def report(name: str) -> None:
            activities.append((name, time.monotonic_ns()))

        report("CUSTOM_ACTIVITY_START")
        time.sleep(_ACTIVITY_S)
        report("CUSTOM_ACTIVITY_END")
        report("CUSTOM_SINGLE_ACTIVITY")
        for count in range(self._nested_spans):
            report(f"CUSTOM_ACTIVITY{count}_START")
            time.sleep(_ACTIVITY_S)
            if count % self._single_every == 0:
                report("CUSTOM_SINGLE_ACTIVITY")
        for count in reversed(range(self._nested_spans)):
            report(f"CUSTOM_ACTIVITY{count}_END")
