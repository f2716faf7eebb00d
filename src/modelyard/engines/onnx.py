"""ONNX Runtime engine (``model.onnx``).

Thread settings come from config parameters, named as in Triton's onnxruntime
backend: ``intra_op_thread_count`` and ``inter_op_thread_count``. The default is
one intra-op thread per model instance: on small CPU machines, parallelism
comes from instances (``instance_group.count``), and two intra-op threads per
session measured slower at batch >= 32 on 2 vCPUs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import structlog
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

from modelyard import error_rules
from modelyard.engines.base import (
    Engine,
    LoadContext,
    Signature,
    TensorSpec,
    unreadable_artifact,
)
from modelyard.errors import EngineError

log = structlog.get_logger("modelyard.engines")

_ONNX_TO_V2 = {
    "tensor(bool)": "BOOL",
    "tensor(uint8)": "UINT8",
    "tensor(uint16)": "UINT16",
    "tensor(uint32)": "UINT32",
    "tensor(uint64)": "UINT64",
    "tensor(int8)": "INT8",
    "tensor(int16)": "INT16",
    "tensor(int32)": "INT32",
    "tensor(int64)": "INT64",
    "tensor(float16)": "FP16",
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
    "tensor(string)": "BYTES",
}

_GRAPH_LEVELS = {
    -1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    0: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    1: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def _dims(shape: list[Any]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) and d > 0 else -1 for d in shape)


class OnnxRuntimeEngine(Engine):
    name = "onnxruntime"
    extra = "onnx"
    default_filenames = ("model.onnx",)
    describes_signature = True
    serves_ragged_batches = True

    def __init__(self) -> None:
        self._session: ort.InferenceSession | None = None
        self._threads = (1, 1)
        self._providers: list[str] = ["CPUExecutionProvider"]
        self._string_inputs: set[str] = set()
        self._string_outputs: set[str] = set()
        # the model file's tensors of no dimensions: inputs fed as scalars, outputs given the
        # config's dims (Triton's onnxruntime backend)
        self._scalar_inputs: set[str] = set()
        self._scalar_outputs: dict[str, tuple[int, ...]] = {}

    def load(self, ctx: LoadContext) -> Signature:
        options = ort.SessionOptions()
        intra = int(ctx.parameter("intra_op_thread_count", "1") or 1)
        inter = int(ctx.parameter("inter_op_thread_count", "1") or 1)
        options.intra_op_num_threads = intra
        options.inter_op_num_threads = inter
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        level = ctx.config.optimization.graph.level if ctx.config.HasField("optimization") else 1
        options.graph_optimization_level = _GRAPH_LEVELS.get(
            level, ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        )
        self._threads = (intra, inter)
        self._providers = choose_providers(ctx)
        # with more than one intra-op thread, the session computes on its pool as well
        self.computes_on_caller = self._providers == ["CPUExecutionProvider"] and intra == 1
        device_id = ctx.device.split(":", 1)[1] if ctx.device.startswith("cuda:") else "0"
        providers: list[Any] = [
            (p, {"device_id": device_id}) if p in _GPU_PROVIDERS else p for p in self._providers
        ]
        try:
            self._session = ort.InferenceSession(
                str(ctx.artifact), sess_options=options, providers=providers
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise unreadable_artifact(self.name, ctx, exc) from exc
        inputs = [self._spec(i) for i in self._session.get_inputs()]
        outputs = [self._spec(o) for o in self._session.get_outputs()]
        self._string_inputs = {s.name for s in inputs if s.datatype == "BYTES"}
        self._string_outputs = {s.name for s in outputs if s.datatype == "BYTES"}
        self._scalar_inputs = {s.name for s in inputs if s.dims == ()}
        configured = {entry.name: entry for entry in ctx.config.output}
        self._scalar_outputs = {
            s.name: _scalar_dims(configured.get(s.name), ctx.config.max_batch_size > 0)
            for s in outputs
            if s.dims == ()
        }
        return Signature(inputs=inputs, outputs=outputs, batched=True)

    @staticmethod
    def _spec(arg: Any) -> TensorSpec:
        datatype = _ONNX_TO_V2.get(arg.type)
        if datatype is None:
            raise EngineError.of(
                error_rules.ONNXRUNTIME, f"onnx tensor '{arg.name}' has unsupported type {arg.type}"
            )
        return TensorSpec(arg.name, datatype, _dims(arg.shape))

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        assert self._session is not None
        feed = inputs
        if self._string_inputs:
            feed = dict(inputs)
            for name in self._string_inputs:
                feed[name] = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(
                    inputs[name]
                )
        for name in self._scalar_inputs & feed.keys():
            if feed[name].size == 1:
                feed = {**feed, name: feed[name].reshape(())}
        results = self._session.run(outputs, feed)
        answer = dict(zip(outputs, results, strict=True))
        # onnxruntime answers strings as str; a BYTES tensor is bytes in the server, as
        # the next step of an ensemble (or a python model) is given it in Triton
        for name in self._string_outputs & answer.keys():
            answer[name] = _ENCODE(answer[name])
        for name in self._scalar_outputs.keys() & answer.keys():
            if answer[name].ndim == 0:
                answer[name] = answer[name].reshape(self._scalar_outputs[name])
        return answer

    def refuses_input(self, error: Exception) -> bool:
        # INVALID_ARGUMENT: a feed or a kernel refused the data (a Gather index past the
        # vocabulary); FAIL: a kernel's check failed on it (inputs that do not broadcast), unless
        # memory ran out; and BYTES inputs that are not UTF-8, which this engine decodes
        if isinstance(error, (_InvalidArgument, UnicodeDecodeError)):
            return True
        return isinstance(error, _Fail) and "allocate" not in str(error)

    def unload(self) -> None:
        self._session = None

    def describe(self) -> dict[str, Any]:
        return {
            "intra_op_threads": self._threads[0],
            "inter_op_threads": self._threads[1],
            "providers": list(self._providers),
        }


def _scalar_dims(entry: Any, batched: bool) -> tuple[int, ...]:
    """The shape a scalar output is answered in: its config dims (ones, checked at load),
    one row of them where the model batches."""
    dims: tuple[int, ...] = (1,)
    if entry is not None:
        dims = tuple(entry.reshape.shape if entry.HasField("reshape") else entry.dims)
    return (1, *dims) if batched else dims


_ENCODE = np.vectorize(lambda s: s.encode("utf-8") if isinstance(s, str) else s, otypes=[object])

_GPU_PROVIDERS = frozenset({"CUDAExecutionProvider", "TensorrtExecutionProvider"})
_InvalidArgument = ort_errors.InvalidArgument
_Fail = ort_errors.Fail

# Triton's execution accelerator names -> onnxruntime providers
_ACCELERATORS = {
    "tensorrt": "TensorrtExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
}


def requested_providers(ctx: LoadContext) -> list[str]:
    """Providers in order of preference: the ``execution_providers`` parameter, else
    Triton's ``optimization.execution_accelerators``, then (always) the CPU."""
    asked: list[str] = []
    listed = ctx.parameter("execution_providers")
    if listed:
        asked = [p.strip() for p in listed.split(",") if p.strip()]
    elif ctx.config.HasField("optimization"):
        accelerators = ctx.config.optimization.execution_accelerators
        for accelerator in [
            *accelerators.gpu_execution_accelerator,
            *accelerators.cpu_execution_accelerator,
        ]:
            name = _ACCELERATORS.get(accelerator.name.lower(), accelerator.name)
            asked.append(name)
    if ctx.device.startswith("cuda") and "CUDAExecutionProvider" not in asked:
        asked.append("CUDAExecutionProvider")
    if "CPUExecutionProvider" not in asked:
        asked.append("CPUExecutionProvider")
    return asked


def choose_providers(ctx: LoadContext) -> list[str]:
    """The requested providers that this onnxruntime has; the rest fall back loudly."""
    asked = requested_providers(ctx)
    available = set(ort.get_available_providers())
    chosen = [p for p in asked if p in available]
    missing = [p for p in asked if p not in available]
    if missing:
        log.warning(
            "execution_provider_unavailable",
            model=ctx.config.name,
            asked=asked,
            missing=missing,
            runs=chosen,
            hint="install the onnxruntime build with these providers, or change "
            f"optimization.execution_accelerators in {ctx.config.name}/config.pbtxt",
        )
    return chosen
