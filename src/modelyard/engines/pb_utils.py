"""``triton_python_backend_utils`` for Triton python-backend models, unchanged.

A ``model.py`` written for Triton imports ``triton_python_backend_utils as pb_utils``;
the python engine makes this module answer to that name. It gives the API Triton's
python backend documents for a model's ``execute(requests)``: ``Tensor``, the
request's inputs and requested outputs, ``InferenceResponse`` with output tensors
or a ``TritonError``, ``TritonModelException``, the config lookups, the type
conversions and ``Logger``; BLS, ``InferenceRequest(model_name=..., inputs=...,
requested_output_names=...).exec()`` (and ``async_exec``), through the server's
own schedulers; a decoupled model's ``get_response_sender()``; a sequence's
``correlation_id()`` and ``flags()``; ``load_model``, ``unload_model`` and
``is_model_ready``, a model's own calls to the repository API (a stub's child asks the
server, which checks them as it checks the load API's).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np
import structlog

from modelyard.engines.base import batch_principals, current_batch_requests
from modelyard.types import CONFIG_TO_V2, V2_TO_NUMPY, v2_datatype

_log = structlog.get_logger("modelyard.python_model")

# the server's infer for the model executing here, and whom its batch is for (set around
# its execute; an async execute's tasks inherit it, as contexts pass to tasks and threads
# asyncio starts)
_calling: ContextVar[tuple[Callable[..., Any], tuple[str, ...]] | None] = ContextVar(
    "pb_utils_calling", default=None
)
# a stub's model (alone in its process): the infer its own threads' BLS calls go through,
# for no known caller (refused where auth is on)
_process_infer: Callable[..., Any] | None = None


# a stub's model: the server's model control (kind, arguments, principals) -> answer, and
# the instance's name Triton's messages give
_process_control: Callable[[str, dict[str, Any], tuple[str, ...]], Any] | None = None
_instance_name = ""


def controlling_through(
    control: Callable[[str, dict[str, Any], tuple[str, ...]], Any] | None, instance: str = ""
) -> None:
    """The server's model control for ``load_model``, ``unload_model`` and
    ``is_model_ready`` (set before the model initializes: Triton allows them there)."""
    global _process_control, _instance_name
    _process_control, _instance_name = control, instance


# a stub's model: its version directory (Triton's get_model_dir())
_model_dir = ""
# the most a model's load_model may give, its config and file contents together
MAX_MODEL_LOAD_BYTES = 1 << 30


def serving_model_dir(model_dir: str) -> None:
    global _model_dir
    _model_dir = model_dir


def get_model_dir() -> str:
    """The model's version directory (where a Python-based backend's model keeps its own
    files, ``<repository>/<model>/<version>``), as Triton's stub gives it."""
    return _model_dir


def calling_through(infer: Callable[..., Any] | None) -> None:
    """Set (or clear, with None) the server infer a BLS call here goes through, for the
    principals of the batch executing on this thread."""
    _calling.set(None if infer is None else (infer, batch_principals(current_batch_requests())))


def serving_through(infer: Callable[..., Any] | None) -> None:
    """The infer of a model's own threads (a decoupled model's response threads): Triton's
    BLS may be called from any thread of the model while it serves (set once it has
    initialized, cleared before its finalize)."""
    global _process_infer
    _process_infer = infer


TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

# config type names -> numpy types, as python_backend's TRITON_STRING_TO_NUMPY
TRITON_STRING_TO_NUMPY: dict[str, Any] = {
    name: (np.object_ if V2_TO_NUMPY[v2] is None else V2_TO_NUMPY[v2].type)  # type: ignore[union-attr]
    for name, v2 in CONFIG_TO_V2.items()
    if v2 != "BF16"
}
# the DataType enum's numbers (model_config.proto) -> numpy types, and back
_ENUM_TO_NUMPY: dict[int, Any] = {
    1: np.bool_, 2: np.uint8, 3: np.uint16, 4: np.uint32, 5: np.uint64, 6: np.int8,
    7: np.int16, 8: np.int32, 9: np.int64, 10: np.float16, 11: np.float32, 12: np.float64,
    13: np.object_,
}  # fmt: skip


_REQUIRED: Any = object()  # an argument Triton's binding has no default for
_UNTRACED: Any = object()  # InferenceRequest's default trace: none (None is refused)


class TritonError:
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message: str, code: int = INTERNAL) -> None:
        self._message = message
        self._code = code

    def message(self) -> str:
        return self._message

    def code(self) -> int:
        return self._code


class TritonModelException(Exception):
    def message(self) -> str:
        return str(self)


def _argument(function: str, name: str, value: Any, kind: type | tuple[type, ...]) -> None:
    """A TypeError where Triton's binding refuses an argument's type (None included)."""
    if value is None or not isinstance(value, kind):
        raise TypeError(f"{function}(): incompatible argument {name}={type(value).__name__}")


def _text(function: str, name: str, value: Any) -> str:
    """An argument Triton's binding takes as a C++ string: a str, or bytes (pybind11 takes
    those too, as they are; here as UTF-8, so bytes that are not name nothing that
    exists). Anything else is a TypeError."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    _argument(function, name, value, str)
    return str(value)


class Tensor:
    def __init__(self, name: str, array: Any) -> None:
        name = _text("Tensor", "name", name)
        if array is None:
            raise TypeError("Tensor(): incompatible argument: a numpy array, not None")
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)
        self._name = name
        self._array = array
        self._bf16 = False  # BF16: held as float32, as the server holds it

    @classmethod
    def bf16(cls, name: str, data: np.ndarray) -> Tensor:
        """A BF16 tensor of float32 ``data`` (numpy has no bfloat16: DLPack carries it)."""
        tensor = cls(name, data)
        tensor._bf16 = True
        return tensor

    def v2_datatype(self) -> str:
        return "BF16" if self._bf16 else v2_datatype(self._array)

    def data(self) -> np.ndarray:
        """The values, as the server holds them (a BF16 tensor's as float32)."""
        return self._array

    @staticmethod
    def from_dlpack(name: str, capsule: Any) -> Tensor:
        """A tensor of an object that speaks DLPack (``__dlpack__``: torch, numpy, cupy...)
        on the CPU, or of a torch DLPack capsule."""
        if not isinstance(name, str) or name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if capsule is None:
            raise TritonModelException("Provided DLPack object is None.")
        try:
            if hasattr(capsule, "__dlpack__") and "torch" not in type(capsule).__module__:
                return Tensor(name, np.from_dlpack(capsule))
            import torch  # a capsule (or a torch tensor): torch reads it, bfloat16 too
            from torch.utils import dlpack

            values = capsule if isinstance(capsule, torch.Tensor) else dlpack.from_dlpack(capsule)
            if values.dtype == torch.bfloat16:
                return Tensor.bf16(name, values.float().numpy())
            return Tensor(name, values.numpy())
        except (ImportError, RuntimeError, TypeError, BufferError) as exc:
            raise TritonModelException(f"Tensor '{name}' from DLPack: {exc}") from exc

    def to_dlpack(self) -> Any:
        if self._bf16:
            import torch
            from torch.utils import dlpack

            values = torch.from_numpy(np.ascontiguousarray(self._array)).to(torch.bfloat16)
            return dlpack.to_dlpack(values)
        return self._array.__dlpack__()

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.to_dlpack()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        if self._bf16:
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to numpy. Use to_dlpack() and "
                "from_dlpack() instead."
            )
        return self._array

    def is_cpu(self) -> bool:
        return True

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def triton_dtype(self) -> str:
        if self._bf16:
            return "BF16"
        return "BYTES" if self._array.dtype == np.object_ else str(self._array.dtype)


# a request traced to a file: its context is its trace's id (modelyard.tracing's)
_FILE_TRACE = '{"triton_trace_id"'


class InferenceTrace:
    """A request's trace, as Triton's python backend gives it (``request.trace()``)."""

    def __init__(self, context: str | None = None) -> None:
        self._context = context or None  # what the model's own calls carry

    def get_context(self) -> str | None:
        """The request's W3C trace context as JSON (``{"traceparent": ...}``) when the
        server traces it with OpenTelemetry, else None (a request traced to a file
        carries only its trace's id, for the model's own calls)."""
        if self._context is not None and self._context.startswith(_FILE_TRACE):
            return None
        return self._context


class InferenceRequest:
    """The request a model's ``execute`` gets (its inputs, the outputs asked for)."""

    def __init__(
        self,
        request_id: str = "",
        correlation_id: int | str = 0,
        inputs: list[Tensor] = _REQUIRED,
        requested_output_names: list[str] = _REQUIRED,
        model_name: str = _REQUIRED,
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: Any = None,
        trace: InferenceTrace = _UNTRACED,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        """Triton's arguments, checked as its binding checks them: a None where a value is
        needed (or a value of another type) is a TypeError."""
        given = {"inputs": inputs, "requested_output_names": requested_output_names,
                 "model_name": model_name}  # fmt: skip
        for name, value in given.items():
            if value is _REQUIRED:
                raise TypeError(f"InferenceRequest(): missing required argument '{name}'")
        request_id = _text("InferenceRequest", "request_id", request_id)
        _argument("InferenceRequest", "inputs", inputs, (list, tuple))
        _argument("InferenceRequest", "requested_output_names", requested_output_names,
                  (list, tuple))  # fmt: skip
        model_name = _text("InferenceRequest", "model_name", model_name)
        numbers = {"model_version": model_version, "flags": flags, "timeout": timeout}
        for number, value in numbers.items():
            _argument("InferenceRequest", number, value, int)
        requested_output_names = [
            _text("InferenceRequest", "requested_output_names[]", output)
            for output in requested_output_names
        ]
        for tensor in inputs:
            if tensor is None:
                raise TritonModelException("Input tensor of an InferenceRequest is None.")
            _argument("InferenceRequest", "inputs[]", tensor, Tensor)
        if trace is _UNTRACED:
            trace = InferenceTrace()
        _argument("InferenceRequest", "trace", trace, InferenceTrace)
        if correlation_id is None:
            raise TypeError("InferenceRequest(): incompatible argument correlation_id=None")
        if not isinstance(correlation_id, int | str):
            raise TritonModelException("Correlation ID must be integer or string")
        for key, value in (parameters or {}).items():
            if not isinstance(key, str):
                raise TritonModelException(
                    f"Expect parameters keys to have type str, found type {type(key)}"
                )
            if not isinstance(value, bool | int | str):
                raise TritonModelException(
                    f"Expect parameters values to have type bool/int/str, found type {type(value)}"
                )
        self._set(request_id, correlation_id, inputs, requested_output_names, model_name,
                  model_version, flags, timeout, parameters)  # fmt: skip
        self._trace = trace

    @classmethod
    def received(
        cls,
        model_name: str,
        inputs: list[Tensor],
        requested_output_names: list[str],
        correlation_id: int | str = 0,
        parameters: dict[str, Any] | None = None,
        flags: int = 0,
        trace_context: str | None = None,
    ) -> InferenceRequest:
        """A request the server hands the model's ``execute``: taken as the server checked
        it (a caller's parameters may be of any type the protocol carries, doubles too)."""
        request = cls.__new__(cls)
        request._set("", correlation_id, inputs, requested_output_names, model_name, -1, flags,
                     0, parameters)  # fmt: skip
        request._trace = InferenceTrace(trace_context)
        return request

    def _set(
        self,
        request_id: str,
        correlation_id: int | str,
        inputs: list[Tensor],
        requested_output_names: list[str],
        model_name: str,
        model_version: int,
        flags: int,
        timeout: int,
        parameters: dict[str, Any] | None,
    ) -> None:
        self._inputs = list(inputs)
        self._requested = list(requested_output_names)
        self._id = request_id
        self._correlation_id = correlation_id
        self._parameters = dict(parameters or {})
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._sender: InferenceResponseSender | None = None
        self.sender_taken = False  # the model asked for its response sender
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._is_cancelled: Callable[[], bool] = lambda: False

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def requested_output_names(self) -> list[str]:
        return self._requested

    def request_id(self) -> str:
        return self._id

    def correlation_id(self) -> int | str:
        return self._correlation_id

    def trace(self) -> InferenceTrace:
        """Its trace: a BLS request made with ``trace=request.trace()`` joins it."""
        return self._trace

    def parameters(self) -> str:
        return json.dumps(self._parameters)

    def flags(self) -> int:
        """TRITONSERVER_REQUEST_FLAG_SEQUENCE_START (1) and _END (2) of a sequence's request."""
        return self._flags

    def is_cancelled(self) -> bool:
        return self._is_cancelled()

    def set_release_flags(self, flags: int) -> None:
        """TRITONSERVER_REQUEST_RELEASE_RESCHEDULE gives the request back to the scheduler
        once ``execute`` returns, to run again (a sequence model with ``iterative_sequence``;
        any other answers it with an error); its response from this execute is None."""
        _argument("set_release_flags", "flags", flags, int)
        if flags < 0 or flags > 0xFFFFFFFF:
            raise TypeError(f"set_release_flags(): flags must be a uint32, got {flags}")
        self._release_flags = flags

    def release_flags(self) -> int:
        return self._release_flags

    @property
    def rescheduled(self) -> bool:
        return self._release_flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE

    def attach_sender(
        self, sender: InferenceResponseSender, is_cancelled: Callable[[], bool] | None = None
    ) -> None:
        """The request's response sender (and what says its caller has gone, if given)."""
        self._sender = sender
        if is_cancelled is not None:
            self._is_cancelled = is_cancelled

    def watch_cancellation(self, is_cancelled: Callable[[], bool]) -> None:
        """What ``is_cancelled()`` asks: whether the request's caller has gone."""
        self._is_cancelled = is_cancelled

    def model_name(self) -> str:
        return self._model_name

    def exec(self, decoupled: bool = False) -> Any:
        """BLS: run this request on another model of the server, through its scheduler
        (batched with that model's other requests); an error comes back in the response."""
        from modelyard.errors import ModelyardError
        from modelyard.types import InferRequest, RequestedOutput

        called = _calling.get()
        infer, principals = called if called is not None else (_process_infer, ())
        if infer is None:  # initialize, finalize, or no server to call
            raise TritonModelException("BLS is only supported during the 'execute' function.")
        arrays = {tensor.name(): tensor.data() for tensor in self._inputs}
        request = InferRequest(
            self._model_name,
            str(self._model_version) if self._model_version >= 0 else None,
            arrays,
            {tensor.name(): tensor.v2_datatype() for tensor in self._inputs},
            outputs=[RequestedOutput(name) for name in self._requested] or None,
            id=self._id or None,
            parameters=self._call_parameters(),
            principals=principals,  # whom it is for
            trace_parent=self._trace._context,
        )
        if decoupled:  # its responses as they come: an iterator
            return _responses(infer, request)
        try:
            response = infer(request)
        except ModelyardError as error:
            return InferenceResponse(error=_bls_error(error))
        return _bls_response(response)

    def _call_parameters(self) -> dict[str, Any]:
        """The parameters a BLS call carries: the request's own, and its sequence."""
        parameters = dict(self._parameters)
        if self._correlation_id:
            parameters["sequence_id"] = self._correlation_id
            parameters["sequence_start"] = bool(
                self._flags & TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
            )
            parameters["sequence_end"] = bool(self._flags & TRITONSERVER_REQUEST_FLAG_SEQUENCE_END)
        return parameters

    async def async_exec(self, decoupled: bool = False) -> Any:
        """``exec`` off the model's event loop (in a copy of this context: the same infer,
        for the same callers); a decoupled model's responses all come before it returns."""
        if not decoupled:
            return await asyncio.to_thread(self.exec)
        responses = await asyncio.to_thread(lambda: list(self.exec(decoupled=True)))
        return iter(responses)

    def get_response_sender(self) -> InferenceResponseSender:
        if self._sender is None:
            raise TritonModelException(
                "this request has no response sender: only the requests a model's execute "
                "gets send their responses"
            )
        self.sender_taken = True
        return self._sender


class InferenceResponseSender:
    """A model's way to answer a request from any thread, during ``execute`` or after it:
    a decoupled model's zero, one or many responses, and the FINAL flag (alone or with the
    last response) once it is done; a model that is not decoupled sends one response, and
    FINAL with it or after it, as Triton's python backend allows."""

    def __init__(
        self,
        deliver: Callable[[InferenceResponse | None, bool], None],
        is_cancelled: Callable[[], bool] = lambda: False,
        decoupled: bool = True,
    ) -> None:
        self._deliver = deliver
        self._is_cancelled = is_cancelled
        self._decoupled = decoupled
        self._lock = threading.Lock()
        self._closed = False
        self._sent = 0  # sends so far (FINAL alone counts), as Triton counts them

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        if response is not None and not isinstance(response, InferenceResponse):
            raise TritonModelException(
                f"Unable to send response: a {type(response).__name__} is not an InferenceResponse."
            )
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        with self._lock:
            if not self._decoupled and response is not None and self._sent > 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one "
                    "response."
                )
            if not self._decoupled and response is None and final and self._sent == 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final "
                    "before sending a response."
                )
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            self._closed = final
            self._sent += 1
            self._deliver(response, final)

    def is_cancelled(self) -> bool:
        """Whether the caller has gone: what the model sends now is dropped."""
        return self._is_cancelled()

    def close_with(self, last: Callable[[], None]) -> None:
        """Run ``last`` (an error as the request's FINAL) unless FINAL was sent already."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            last()


class InferenceResponse:
    def __init__(
        self,
        output_tensors: list[Tensor] = (),  # type: ignore[assignment]
        error: TritonError | None = None,
        parameters: Any = None,
    ) -> None:
        _argument("InferenceResponse", "output_tensors", output_tensors, (list, tuple))
        if error is not None:
            _argument("InferenceResponse", "error", error, TritonError)
        for tensor in output_tensors:
            if tensor is None:
                raise TritonModelException("Output tensor of an InferenceResponse is None.")
            _argument("InferenceResponse", "output_tensors[]", tensor, Tensor)
        self._outputs = list(output_tensors)
        self._error = error
        # when its outputs were made: the end of its compute and the start of its output
        # in the response statistics (a decoupled model's)
        self._made_ns = time.monotonic_ns()

    def output_tensors(self) -> list[Tensor]:
        return self._outputs

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error


def _bls_error(error: Any) -> TritonError:
    code = TritonError.INVALID_ARG if error.code == "invalid_argument" else (
        TritonError.NOT_FOUND if error.code == "not_found" else TritonError.INTERNAL
    )  # fmt: skip
    return TritonError(error.line(), code)


def _bls_response(response: Any) -> InferenceResponse:
    return InferenceResponse(
        output_tensors=[Tensor(output.name, output.data) for output in response.outputs]
    )


def _responses(infer: Callable[..., Any], request: Any) -> Iterator[InferenceResponse]:
    """A decoupled model's responses to a BLS call, as Triton's ResponseIterator gives
    them: each response (an error as a response's), and an empty one for a FINAL sent
    alone."""
    from modelyard.errors import ModelyardError

    try:
        for item in infer(request, stream=True):
            if item.error is not None:
                yield InferenceResponse(error=_bls_error(item.error))
            elif item.response is not None:
                yield _bls_response(item.response)
            else:
                yield InferenceResponse()
    except ModelyardError as error:
        yield InferenceResponse(error=_bls_error(error))


def get_input_tensor_by_name(request: InferenceRequest, name: str) -> Tensor | None:
    return next((t for t in request.inputs() if t.name() == name), None)


def get_output_tensor_by_name(response: InferenceResponse, name: str) -> Tensor | None:
    return next((t for t in response.output_tensors() if t.name() == name), None)


def get_input_config_by_name(model_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((i for i in model_config.get("input", []) if i.get("name") == name), None)


def get_output_config_by_name(model_config: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((o for o in model_config.get("output", []) if o.get("name") == name), None)


def using_decoupled_model_transaction_policy(model_config: dict[str, Any]) -> bool:
    """Whether the config says ``model_transaction_policy { decoupled: true }``."""
    policy = model_config.get("model_transaction_policy")
    return bool(policy.get("decoupled", False)) if isinstance(policy, dict) else False


def triton_to_numpy_type(data_type: int) -> Any:
    """The numpy type of a DataType enum number (``11`` -> ``numpy.float32``); None if
    unknown."""
    return _ENUM_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type: Any) -> int | None:
    """The DataType enum number of a numpy type (``numpy.bytes_`` is TYPE_STRING, 13)."""
    if data_type == np.bytes_:
        return 13
    return next((n for n, np_type in _ENUM_TO_NUMPY.items() if np_type == data_type), None)


def serialize_byte_tensor(input_tensor: np.ndarray) -> np.ndarray | None:
    """A BYTES tensor in Triton's wire layout (a little-endian uint32 length before each
    element), as a uint8 array; None for an empty tensor."""
    if input_tensor.size == 0:
        return None
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type != np.bytes_:
        raise TritonModelException("cannot serialize bytes tensor: invalid datatype")
    parts: list[bytes] = []
    for item in input_tensor.flatten(order="C"):
        data = item if isinstance(item, bytes) else str(item).encode("utf-8")
        parts.append(len(data).to_bytes(4, "little"))
        parts.append(data)
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor: bytes) -> np.ndarray:
    """The elements of a BYTES tensor in Triton's wire layout, as a 1-D object array."""
    items: list[bytes] = []
    offset = 0
    view = memoryview(encoded_tensor)
    while offset < len(view):
        length = int.from_bytes(view[offset : offset + 4], "little")
        offset += 4
        items.append(bytes(view[offset : offset + length]))
        offset += length
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def triton_string_to_numpy(triton_type_string: str) -> Any:
    """``TYPE_FP32`` -> ``numpy.float32``; ``TYPE_STRING`` -> ``numpy.object_``."""
    datatype = CONFIG_TO_V2.get(triton_type_string)
    if datatype is None:
        raise TritonModelException(f"unknown Triton type '{triton_type_string}'")
    dtype = V2_TO_NUMPY[datatype]
    return np.object_ if dtype is None else dtype.type


class ModelConfig:
    """What a model's ``auto_complete_config(auto_complete_model_config)`` reads and fills:
    the config as a dict (proto field names). Each setter checks what it is given as
    Triton's python backend does, in its words (a ValueError the load reports)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config

    @property
    def _name(self) -> str:
        return str(self._config.get("name", ""))

    def as_dict(self) -> dict[str, Any]:
        return self._config

    def max_batch_size(self) -> int:
        return int(self._config.get("max_batch_size", 0))

    def set_max_batch_size(self, max_batch_size: int) -> None:
        current = self.max_batch_size()
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in auto-complete-config "
                f"function for model '{self._name}' specified max_batch_size {max_batch_size}"
            )
        self._config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{self._name}' tries to set "
                    "scheduling_choice as 'dynamic_batching'"
                )
        self._config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, transaction_policy_dict: dict[str, Any]) -> None:
        """Set ``model_transaction_policy`` (``{"decoupled": bool}``), refused where the
        config already says otherwise."""
        if not isinstance(transaction_policy_dict, dict) or set(transaction_policy_dict) - {
            "decoupled"
        }:
            raise ValueError(
                "model transaction property in auto-complete-config function for model "
                f"'{self._name}' contains property other than 'decoupled'."
            )
        policy = self._config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != wanted:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name}', which is already set to '{policy['decoupled']}'."
                )
            policy["decoupled"] = wanted

    def add_input(self, input: dict[str, Any]) -> None:
        self._add("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output: dict[str, Any]) -> None:
        self._add("output", output, ("name", "data_type", "dims"))

    def _add(self, kind: str, tensor: dict[str, Any], properties: tuple[str, ...]) -> None:
        """A tensor added as Triton's python backend adds it: its properties checked, and
        one the config names already completed where it is silent, or refused where it
        says otherwise."""
        if not isinstance(tensor, dict):
            raise ValueError(f"{kind} in auto-complete-config function for model "
                             f"'{self._name}' must be a dict")  # fmt: skip
        said = (
            f"{kind} '{tensor.get('name')}' in auto-complete-config function for model "
            f"'{self._name}'"
        )
        if any(key not in properties for key in tensor):
            allowed = ", ".join(f"'{p}'" for p in properties[:-1])
            raise ValueError(
                f"{said} contains property other than {allowed} and '{properties[-1]}'."
            )
        if "name" not in tensor:
            raise ValueError(f"{kind} in auto-complete-config function for model "
                             f"'{self._name}' is missing 'name' property.")  # fmt: skip
        for key in ("data_type", "dims"):
            if key not in tensor:
                raise ValueError(f"{said} is missing '{key}' property.")
        entries = self._config.setdefault(kind, [])
        for entry in entries:
            if entry.get("name") != tensor["name"]:
                continue
            current = entry.get("data_type", "TYPE_INVALID")
            if current != "TYPE_INVALID" and current != tensor["data_type"]:
                raise ValueError(
                    f"unable to load model '{self._name}', configuration expects datatype "
                    f"{current} for {kind} '{tensor['name']}', model provides "
                    f"{tensor['data_type']}"
                )
            if entry.get("dims") and list(entry["dims"]) != list(tensor["dims"]):
                raise ValueError(
                    f"model '{self._name}', tensor '{tensor['name']}': the model expects dims "
                    f"{tensor['dims']} but the model configuration specifies dims "
                    f"{list(entry['dims'])}"
                )
            if "optional" in entry and "optional" in tensor and (
                entry["optional"] != tensor["optional"]
            ):
                raise ValueError(
                    f"model '{self._name}', tensor '{tensor['name']}': the model expects "
                    f"optional {tensor['optional']} but the model configuration specifies "
                    f"optional {entry['optional']}"
                )
            entry["data_type"], entry["dims"] = tensor["data_type"], tensor["dims"]
            if "optional" in tensor:
                entry["optional"] = tensor["optional"]
            return
        entries.append(dict(tensor))


class LogLevel(enum.Enum):
    """Triton's ``pb_utils.Logger.LogLevel`` (an enum: a plain int is refused)."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


def _caller() -> str:
    """``file.py:LINE`` of the model's line that logs, as Triton's log line names it."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


class Logger:
    """Triton's python-backend logger: messages become structured log events of the
    server's log, whose settings decide whether each is written (VERBOSE is a debug
    event: ``log_verbose_level`` 1 and up); a stub's child forwards them to the server
    (``engines/stub_logs.py``)."""

    LogLevel = LogLevel
    INFO, WARNING = LogLevel.INFO, LogLevel.WARNING
    ERROR, VERBOSE = LogLevel.ERROR, LogLevel.VERBOSE

    @staticmethod
    def log(message: str, level: Any = LogLevel.INFO) -> None:
        _argument("log", "message", message, str)
        _argument("log", "level", level, LogLevel)
        {LogLevel.INFO: _log.info, LogLevel.WARNING: _log.warning, LogLevel.ERROR: _log.error}.get(
            level, _log.debug
        )("python_model_log", message=message, source=_caller(), triton=message)

    @staticmethod
    def log_info(message: str) -> None:
        Logger.log(message, LogLevel.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        Logger.log(message, LogLevel.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        Logger.log(message, LogLevel.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        Logger.log(message, LogLevel.VERBOSE)


# ---- custom metrics ------------------------------------------------------------------

# a stub's model: how its metric calls reach the server's store (engines/python_metrics.py);
# ``ask`` waits for the answer, ``("ok", value)`` or ``("error", line)``, ``tell`` does not
_metric_ask: Callable[[str, tuple[Any, ...]], tuple[str, Any]] | None = None
_metric_tell: Callable[[str, tuple[Any, ...]], None] | None = None

_CLEARED = (
    "Invalid metric operation as the corresponding 'MetricFamily' has been deleted. The "
    "'MetricFamily' object should be deleted AFTER its corresponding 'Metric' objects have "
    "been deleted."
)


def metrics_through(
    ask: Callable[[str, tuple[Any, ...]], tuple[str, Any]] | None,
    tell: Callable[[str, tuple[Any, ...]], None] | None,
) -> None:
    """Set (or clear) how this process's metric calls reach the server."""
    global _metric_ask, _metric_tell
    _metric_ask, _metric_tell = ask, tell


def _metric_call(prefix: str, operation: str, *args: Any) -> Any:
    if _metric_ask is None:
        raise TritonModelException(
            f"{prefix}custom metrics are served to python models that run in a process of "
            "their own (a model.py written for Triton's python backend)"
        )
    status, value = _metric_ask(operation, args)
    if status != "ok":
        raise TritonModelException(f"{prefix}{value}")
    return value


def _metric_drop(handle: int) -> None:
    """A handle the model no longer holds (from ``__del__``: never raises)."""
    tell = _metric_tell
    if tell is not None:
        with contextlib.suppress(Exception):
            tell("drop", (handle,))


def _as_float(function: str, value: Any) -> float:
    """A metric's value as Triton's binding takes it (a float, or what converts to one)."""
    try:
        if isinstance(value, str | bytes):
            raise TypeError(value)
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{function}(): incompatible argument value={type(value).__name__}"
        ) from None


class MetricKind(enum.Enum):
    """Triton's ``MetricKind``: ``pb_utils.MetricFamily.COUNTER``, ``GAUGE``, ``HISTOGRAM``."""

    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


class _SeriesHandle:
    """One label set of a family, shared by the ``Metric`` objects made for it; cleared
    when its family is deleted."""

    __slots__ = ("cleared", "handle")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.cleared = False


class Metric:
    """A series of a ``MetricFamily`` (made by ``family.Metric(labels, buckets)``)."""

    def __init__(self, series: _SeriesHandle) -> None:
        self._series = series

    def _operate(self, prefix: str, operation: str, value: Any) -> Any:
        if self._series.cleared:
            raise TritonModelException(prefix + _CLEARED)
        return _metric_call(prefix, operation, self._series.handle, value)

    def increment(self, value: float) -> None:
        number = _as_float("increment", value)
        self._operate("Failed to increment metric value: ", "increment", number)

    def set(self, value: float) -> None:
        number = _as_float("set", value)
        self._operate("Failed to set metric value: ", "set", number)

    def observe(self, value: float) -> None:
        number = _as_float("observe", value)
        self._operate("Failed to observe metric value: ", "observe", number)

    def value(self) -> float:
        return float(self._operate("Failed to get metric value: ", "value", None))


class MetricFamily:
    """Triton's ``pb_utils.MetricFamily(name, description, kind)``: a family of the model's
    own metrics on the server's /metrics. Its ``Metric`` objects live as long as it does."""

    COUNTER = MetricKind.COUNTER
    GAUGE = MetricKind.GAUGE
    HISTOGRAM = MetricKind.HISTOGRAM

    def __init__(self, name: str = _REQUIRED, description: str = _REQUIRED,
                 kind: MetricKind = _REQUIRED) -> None:  # fmt: skip
        self._handle: int | None = None
        self._series: dict[str, _SeriesHandle] = {}
        self._series_lock = threading.Lock()  # two threads making one label set: one handle
        _argument("MetricFamily", "name", name, str)
        _argument("MetricFamily", "description", description, str)
        _argument("MetricFamily", "kind", kind, MetricKind)
        self._kind = kind
        self._handle = _metric_call(
            "Error when creating MetricFamily: ", "family", name, description, kind.value
        )

    def Metric(self, labels: dict[str, str] | None = None,
               buckets: list[float] | None = None) -> Metric:  # fmt: skip
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise TritonModelException("Failed to create metric. Buckets must be a list.")
            if self._kind is not MetricKind.HISTOGRAM:
                raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        elif self._kind is MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        labels = labels or {}
        try:
            key = json.dumps(labels, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise TritonModelException(f"Failed to create metric. {exc}") from None
        with self._series_lock:
            series = self._series.get(key)
            if series is None:  # one handle per label set: it lives while the family does
                handle = _metric_call(
                    "Error when creating Metric: ", "metric", self._handle, labels, buckets
                )
                series = self._series[key] = _SeriesHandle(handle)
        return Metric(series)

    def __del__(self) -> None:
        for series in self._series.values():
            series.cleared = True
            _metric_drop(series.handle)
        if self._handle is not None:
            _metric_drop(self._handle)
# -- the repository API from a model (python_backend's ModelLoader) ----------------------


def _control(kind: str, arguments: dict[str, Any], failed: str) -> Any:
    """Ask the server; its refusal as python_backend words it: ``failed`` (``Failed to
    load model: ``), then the request's, then the server's line."""
    from modelyard.errors import ModelyardError

    control = _process_control
    if control is None:
        raise TritonModelException(f"{failed}the model runs where no server answers it")
    # whom the batch it executes is for (none in initialize or the model's own threads)
    principals = batch_principals(current_batch_requests())
    try:
        return control(kind, arguments, principals)
    except ModelyardError as error:
        raise TritonModelException(
            f"{failed}Failed to process the request for model '{_instance_name}', message: "
            f"{error.line()}"
        ) from None


def load_model(model_name: str, config: str = "", files: dict[str, bytes] | None = None) -> None:
    """Load (or reload) ``model_name``, as the load API does: ``config`` a JSON config
    override, ``files`` its ``file:<version>/<name>`` parameters (their contents)."""
    _argument("load_model", "model_name", model_name, str)
    _argument("load_model", "config", config, str)
    if files is not None and not isinstance(files, dict):
        raise TritonModelException(
            f"failed to load model '{model_name}', files should be a dictionary of file paths "
            "and file contents"
        )
    for key, content in (files or {}).items():
        if not isinstance(key, str) or not isinstance(content, bytes):
            raise TritonModelException(
                f"failed to load model '{model_name}', files should be a dictionary of file "
                f"paths (str) and file contents (bytes), not {type(key).__name__}: "
                f"{type(content).__name__}"
            )
    size = len(config) + sum(len(content) for content in (files or {}).values())
    if size > MAX_MODEL_LOAD_BYTES:  # refused before it crosses to the server
        raise TritonModelException(
            f"failed to load model '{model_name}': its config and files are {size} bytes, "
            f"more than the {MAX_MODEL_LOAD_BYTES} a model's load may give"
        )
    _control("load", {"name": model_name, "config": config, "files": dict(files or {})},
             "Failed to load model: ")  # fmt: skip


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Unload ``model_name`` (and, with ``unload_dependents``, the models its ensemble
    calls), as the unload API does."""
    _argument("unload_model", "model_name", model_name, str)
    _argument("unload_model", "unload_dependents", unload_dependents, bool)
    _control("unload", {"name": model_name, "unload_dependents": unload_dependents},
             "Failed to unload model: ")  # fmt: skip


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """Whether ``model_name`` (its version ``model_version``, or its latest) is ready."""
    _argument("is_model_ready", "model_name", model_name, str)
    _argument("is_model_ready", "model_version", model_version, str)
    return bool(_control("ready", {"name": model_name, "version": model_version},
                         "Failed to check model readiness: "))  # fmt: skip
