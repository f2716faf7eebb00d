"""Protocol-neutral values: data types, requests and responses.

Tensors are numpy arrays. BYTES tensors are numpy object arrays whose items are
``bytes``. BF16 has no numpy type: it travels as float32 inside the server and
is converted at the wire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# V2 datatype name -> numpy dtype (None: BYTES, held as an object array)
V2_TO_NUMPY: dict[str, np.dtype[Any] | None] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(np.float32),
    "BYTES": None,
}

NUMPY_TO_V2: dict[np.dtype[Any], str] = {
    dt: name for name, dt in V2_TO_NUMPY.items() if dt is not None and name != "BF16"
}

# Triton model_config DataType enum names (TYPE_FP32 ...) <-> V2 names (FP32 ...)
CONFIG_TO_V2 = {f"TYPE_{name}": name for name in V2_TO_NUMPY if name != "BYTES"}
CONFIG_TO_V2["TYPE_STRING"] = "BYTES"
V2_TO_CONFIG = {v: k for k, v in CONFIG_TO_V2.items()}


def numpy_dtype(datatype: str) -> np.dtype[Any]:
    dt = V2_TO_NUMPY[datatype]
    return np.dtype(object) if dt is None else dt


def v2_datatype(array: np.ndarray) -> str:
    if array.dtype == np.object_ or array.dtype.kind in "SU":
        return "BYTES"
    return NUMPY_TO_V2[array.dtype]


def element_size(datatype: str) -> int:
    """Bytes per element on the wire; 0 for BYTES (variable length)."""
    if datatype == "BYTES":
        return 0
    if datatype == "BF16":
        return 2
    dt = V2_TO_NUMPY[datatype]
    assert dt is not None
    return dt.itemsize


# request parameters the protocol itself reads: a model never sees them (as in Triton)
PROTOCOL_PARAMETERS = frozenset(
    ("sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "binary_data_output")
)


@dataclass(slots=True)
class RequestedOutput:
    name: str
    binary: bool | None = None  # None: follow the request-level default
    classification: int = 0  # top-k for the classification extension
    shared_memory: Any = None  # protocol.shared_memory.TensorSlice: written there, not sent


@dataclass(slots=True)
class InferRequest:
    model_name: str
    model_version: str | None
    inputs: dict[str, np.ndarray]
    input_datatypes: dict[str, str]
    outputs: list[RequestedOutput] | None = None  # None: every output
    id: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    binary_output_default: bool = False
    priority: int = 0
    timeout_us: int = 0
    deadline: float | None = None  # clock seconds after which the result is useless
    trace: Any = None  # tracing.RequestTrace of a sampled request
    # a model's own call (Triton's BLS) made with its request's trace: that trace context
    # (RequestTrace.model_context), which the call's spans join
    trace_parent: str | None = None
    arrived_ns: int = 0  # monotonic ns the front door first saw it (0: unknown)
    # headers a forwarded request carries on (the W3C trace context), as name -> value
    forward_headers: dict[str, str] | None = None
    # who it is for, where auth is on: its caller's principal, or for a model's own call
    # (Triton's BLS) the principals of the requests it executes; a call they may not make
    # is refused
    principals: tuple[str, ...] = ()
    # the shared memory regions its inputs were read from, held while it lives: Triton
    # refuses to unregister a region a request in flight uses
    regions: tuple[Any, ...] = ()
    # an HTTP body that is only the bytes of the model's one input (Triton's raw binary
    # request, Inference-Header-Content-Length: 0): the model's config gives its name,
    # datatype and shape (LocalDataPlane.lane)
    raw_input: bytes | None = None
    # called once the request is in its model's queue: the next request of its sequence on
    # a stream may go then (where none is called, once this one is answered)
    queued: Callable[[], None] | None = None

    def wait_deadline(self) -> float | None:
        """The monotonic second after which waiting for this request's model is useless: its
        deadline, or its timeout counted from its arrival; None when it has neither."""
        deadline = self.deadline
        if self.timeout_us and self.arrived_ns:
            by_timeout = self.arrived_ns / 1e9 + self.timeout_us / 1e6
            deadline = by_timeout if deadline is None else min(deadline, by_timeout)
        return deadline

    def binary_outputs(self) -> tuple[dict[str, bool], bool]:
        """Whether each named output was asked for as binary data, and the default."""
        default = self.binary_output_default
        if self.outputs is None:
            return {}, default
        return {o.name: default if o.binary is None else o.binary for o in self.outputs}, default

    def forwarded_parameters(self) -> dict[str, Any]:
        """The request's parameters as a client sends them on: priority and timeout in, the
        front door's own (``triton_``, binary output) out."""
        params = {k: v for k, v in self.parameters.items() if not k.startswith("triton_")}
        params.pop("binary_data_output", None)
        if self.priority and "priority" not in params:
            params["priority"] = self.priority
        if self.timeout_us and "timeout" not in params:
            params["timeout"] = self.timeout_us
        return params


@dataclass(slots=True)
class OutputTensor:
    name: str
    datatype: str
    data: np.ndarray
    binary: bool = False
    in_shared_memory: bool = False  # written into the region the request named: not sent


@dataclass(slots=True)
class InferResponse:
    model_name: str
    model_version: str
    outputs: list[OutputTensor]
    id: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
