"""KServe V2 inference requests and responses over HTTP: JSON and binary tensors.

The binary tensor extension: when the header ``Inference-Header-Content-Length``
is present, the body is that many bytes of JSON followed by raw tensors in the
order of the inputs whose ``parameters.binary_data_size`` is set, in the byte
layout of ``modelyard.protocol.tensors``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from modelyard.dataplane import FixedOutput
from modelyard.errors import ProtocolError, shown
from modelyard.protocol.infer_json import infer_document
from modelyard.protocol.shared_memory import (
    SystemSharedMemory,
    disabled,
    names_region,
    read_region_input,
)
from modelyard.protocol.tensors import bad_request as _bad
from modelyard.protocol.tensors import (
    check_shape,
    decode_input,
    decode_raw_tensor,
    encode_raw_tensor,
    from_values,
    json_numbers,
    wire_tensor,
    wrong_value_count,
)
from modelyard.types import V2_TO_NUMPY, InferRequest, InferResponse, OutputTensor, RequestedOutput

HEADER_LENGTH = "inference-header-content-length"


def _flatten(data: list[Any]) -> list[Any]:
    """The values of nested lists in order, as Triton reads them (and simdjson's buffer)."""
    flat: list[Any] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        else:
            flat.append(item)
    return flat


def _decode_json(name: str, datatype: str, shape: tuple[int, ...], data: Any) -> np.ndarray:
    if type(data) is np.ndarray:  # numbers read straight into an array (infer_json)
        return _decode_numbers(name, datatype, shape, data)
    if not isinstance(data, list):
        data = [data]
    flat = _flatten(data) if data and type(data[0]) is list else data
    # the values' types in one C-level pass: a generator over them cost 19 µs for 256 values
    types = set(map(type, flat))
    if list in types:  # a list after a value, [1.5, [2.5]]: flattened all the same
        flat = _flatten(data)
        types = set(map(type, flat))
    count = math.prod(shape)
    if len(flat) != count:
        raise wrong_value_count(name, len(flat), shape)
    if datatype == "BYTES":
        if not types <= _STR:
            raise _bad(f"input '{shown(name)}': BYTES data must be strings")
        array = np.empty(count, dtype=object)
        array[:] = [v.encode("utf-8") for v in flat]
        return array.reshape(shape)
    dtype = V2_TO_NUMPY[datatype]
    assert dtype is not None
    if datatype == "BOOL":
        if not types <= _BOOL:
            raise _invalid_data(name, datatype)
        return np.asarray(flat, dtype=dtype).reshape(shape)
    limits = _INT_LIMITS.get(datatype)
    if limits is not None:
        # integers only, and in range: numpy would otherwise wrap 1000 into an INT8
        if flat and (not types <= _INT or min(flat) < limits[0] or max(flat) > limits[1]):
            raise _invalid_data(name, datatype)
        return np.array(flat, dtype=dtype).reshape(shape)
    if not types <= _NUMBER:
        raise _invalid_data(name, datatype)
    # orjson parses only finite doubles; one past a narrower type's range would become inf
    largest = _FLOAT_MAX.get(datatype)
    if largest is not None and flat and (min(flat) < -largest or max(flat) > largest):
        raise _bad(f"input '{shown(name)}': a value is out of the range of {datatype}")
    return np.asarray(flat, dtype=dtype).reshape(shape)


def _decode_numbers(
    name: str, datatype: str, shape: tuple[int, ...], values: np.ndarray
) -> np.ndarray:
    """The checks of ``_decode_json`` on values already in a float64 or (u)int64 array."""
    count = math.prod(shape)
    if values.size != count:
        raise wrong_value_count(name, values.size, shape)
    dtype = V2_TO_NUMPY[datatype]
    assert dtype is not None
    if values.size:
        limits = _INT_LIMITS.get(datatype)
        if limits is not None:
            if values.min() < limits[0] or values.max() > limits[1]:
                raise _invalid_data(name, datatype)
        else:
            largest = _FLOAT_MAX.get(datatype)
            if largest is not None and np.abs(values).max() > largest:
                raise _bad(f"input '{shown(name)}': a value is out of the range of {datatype}")
    return values.astype(dtype, copy=False).reshape(shape)


_STR = frozenset((str,))
_BOOL = frozenset((bool,))
_INT = frozenset((int,))
_NUMBER = frozenset((int, float))
# an integer datatype's lowest and highest value, read once
_INT_LIMITS = {
    name: (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    for name, dtype in V2_TO_NUMPY.items()
    if dtype is not None and dtype.kind in "iu"
}
_FLOAT_MAX = {
    t: float(np.finfo(np.float16 if t == "FP16" else np.float32).max)
    for t in ("FP16", "FP32", "BF16")
}


def _bad_json(detail: str) -> ProtocolError:
    return _bad(detail, "protocol/json")


def _invalid_data(name: str, datatype: str) -> ProtocolError:
    return _bad(f"input '{shown(name)}': data is not valid {datatype}")


def _shape(name: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    ):
        raise _bad(f"input '{shown(name)}': shape must be a list of non-negative integers")
    return check_shape(name, tuple(value))


# one binary input of a layout: name, datatype, shape, bytes, and, for datatypes
# whose wire bytes are the array's bytes, the numpy dtype
_Tensor = tuple[str, str, tuple[int, ...], int, np.dtype[Any] | None]


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class _RequestOptions:
    """A layout's request fields other than its inputs, and the two the queue reads of
    every request."""

    options: dict[str, Any]  # as InferRequest keywords
    priority: int = field(init=False)
    timeout_us: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "priority", self.options["priority"])
        object.__setattr__(self, "timeout_us", self.options["timeout_us"])


@dataclass(frozen=True, slots=True, eq=False)
class BinaryLayout(_RequestOptions):
    """What one JSON header says when every input travels as binary data.

    Clients repeat the same header bytes for every request of a given shape
    (tritonclient, perf_analyzer, wrk scripts), so the header is parsed and
    checked once and later requests only slice their tensors out of the body.
    """

    tensors: tuple[_Tensor, ...]
    binary_size: int

    def fits(self, body: bytes, header_length: int) -> bool:
        """Whether a body with this header carries exactly the binary data it declares."""
        return self.binary_size == len(body) - header_length

    def inputs(self, body: bytes, header_length: int, model: str = "") -> dict[str, np.ndarray]:
        """The request's input arrays: views of the body where the datatype allows
        (``model``: named where a BYTES tensor is refused)."""
        offset = header_length
        inputs: dict[str, np.ndarray] = {}
        for name, datatype, shape, size, dtype in self.tensors:
            if dtype is None:  # BYTES, BF16: converted, not viewed
                raw = memoryview(body)[offset : offset + size]
                inputs[name] = decode_raw_tensor(name, datatype, shape, raw, model)
            else:  # sizes were checked against shapes when the layout was made
                inputs[name] = np.ndarray(shape, dtype, body, offset)
            offset += size
        return inputs

    def request(
        self, body: bytes, header_length: int, model: str, version: str | None
    ) -> InferRequest:
        return InferRequest(
            model, version, self.inputs(body, header_length, model), **self.options
        )

    def arrays(
        self, body: bytes, header_length: int | None, doc: dict[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """The inputs of a request whose body has this layout (``doc`` is unused)."""
        assert header_length is not None
        return self.inputs(body, header_length)


@dataclass(frozen=True, slots=True, eq=False)
class JsonLayout(_RequestOptions):
    """What a JSON request says besides its inputs' values: their names, datatypes and
    shapes, and its other fields. Clients repeat it for every request of a shape, as they
    repeat a binary header, so it is checked once; a later request with the same
    ``json_layout_key`` has only its values read (``_decode_json``: their count, types and
    range)."""

    tensors: tuple[tuple[str, str, tuple[int, ...]], ...]  # name, datatype, shape

    def fits(self, body: bytes, header_length: int) -> bool:
        """A JSON request's layout fits no body with binary data."""
        return False

    def arrays(
        self, body: bytes, header_length: int | None, doc: dict[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """The inputs of ``doc``, a document with this layout's key (``body`` is unused)."""
        assert doc is not None
        items = doc["inputs"]
        return {
            name: _decode_json(name, datatype, shape, items[index]["data"])
            for index, (name, datatype, shape) in enumerate(self.tensors)
        }


def json_layout_key(doc: dict[str, Any]) -> bytes | None:
    """The request's JSON without its inputs' values and its id, when every input carries
    its values as JSON: requests with the same key differ in nothing else. None also when
    the key would be longer than a layout is kept for."""
    inputs = doc.get("inputs")
    if type(inputs) is not list:
        return None
    shapes = []
    for item in inputs:
        if type(item) is not dict or "data" not in item:
            return None
        shapes.append({key: value for key, value in item.items() if key != "data"})
    rest = {key: value for key, value in doc.items() if key != "inputs" and key != "id"}
    key = orjson.dumps((shapes, rest))
    return key if len(key) <= _LAYOUT_HEADER_MAX else None


# datatypes whose wire bytes are the array's bytes (little-endian)
_PLAIN_DTYPES = {
    name: dtype.newbyteorder("<")
    for name, dtype in V2_TO_NUMPY.items()
    if dtype is not None and name != "BF16"
}


def _layout_tensor(name: str, datatype: str, shape: tuple[int, ...], size: int) -> _Tensor:
    return name, datatype, shape, size, _PLAIN_DTYPES.get(datatype)


_LAYOUT_HEADER_MAX = 4096


class BinaryLayouts:
    """The layouts of binary requests by their JSON header's bytes, kept by the front door
    that decodes them; bounded, because headers come from callers. A layout depends on
    the header alone: it never goes stale."""

    MAX = 1024

    def __init__(self) -> None:
        self._known: dict[bytes, BinaryLayout] = {}

    def __len__(self) -> int:
        return len(self._known)

    def find(self, body: bytes, header_length: int | None) -> BinaryLayout | None:
        """The layout of a request whose header came before, if its binary data fits it."""
        if header_length is None or not 0 <= header_length <= _LAYOUT_HEADER_MAX:
            return None
        layout = self._known.get(body[:header_length])
        if layout is not None and layout.fits(body, header_length):
            return layout
        return None

    def keep(self, header: bytes, layout: BinaryLayout) -> None:
        if len(header) <= _LAYOUT_HEADER_MAX:
            if len(self._known) >= self.MAX:
                self._known.clear()
            self._known[bytes(header)] = layout


def decode_infer_request(
    body: bytes,
    header_length: int | None,
    model: str,
    version: str | None,
    shared_memory: SystemSharedMemory | None = None,
) -> InferRequest:
    return decode_with_layout(body, header_length, model, version, shared_memory)[0]


def decode_with_layout(
    body: bytes,
    header_length: int | None,
    model: str,
    version: str | None,
    shared_memory: SystemSharedMemory | None = None,
    doc: dict[str, Any] | None = None,
    layouts: BinaryLayouts | None = None,
) -> tuple[InferRequest, BinaryLayout | JsonLayout | None]:
    """The request, and its layout when every input travels as binary data, or every
    input as JSON values.

    ``shared_memory``: the regions tensors may name (None: a tensor naming one is refused).
    A request that names a region leaves no layout: the region may be gone by the next.
    ``doc``: the body of a request without binary data, read already (``infer_json.read``).
    ``layouts``: where the layouts of binary headers seen before are kept (None: nowhere).
    """
    if header_length is None:
        header, binary = body, memoryview(b"")
        if doc is None:
            doc = infer_document(header, "inference request", _bad_json)
    else:
        known = _known_binary_request(body, header_length, model, version, layouts)
        if known is not None:
            return known
        header, binary = _split_body(body, header_length)
        doc = infer_document(header, "inference request", _bad_json)
    raw_inputs = doc.get("inputs")
    if not isinstance(raw_inputs, list):  # an empty list is the model's to refuse
        raise _bad("inference request needs an 'inputs' list")
    inputs: dict[str, np.ndarray] = {}
    datatypes: dict[str, str] = {}
    binary_inputs: list[tuple[str, str, tuple[int, ...], int]] = []
    json_tensors: list[tuple[str, str, tuple[int, ...]]] = []
    held: list[Any] = []  # the regions inputs are read from, which the request holds
    in_shared_memory = _decode_inputs(
        raw_inputs, binary, model, shared_memory, inputs, datatypes, binary_inputs,
        json_tensors, held,
    )  # fmt: skip
    params = _request_parameters(doc)
    outputs = _decode_outputs(doc.get("outputs"), shared_memory)
    if outputs is not None and any(out.shared_memory for out in outputs):
        in_shared_memory = True
    options = _request_options(doc, params, datatypes, outputs)
    if header_length is not None and len(binary_inputs) == len(inputs) and not in_shared_memory:
        layout = _binary_layout(binary_inputs, len(binary), options)
        if layouts is not None:
            layouts.keep(header, layout)
        return layout.request(body, header_length, model, version), layout
    json_layout = None
    if header_length is None and len(json_tensors) == len(inputs) and not in_shared_memory:
        json_layout = JsonLayout(tuple(json_tensors), options=options)
    request = InferRequest(model, version, inputs, **options)
    request.regions = tuple(held)
    return request, json_layout


def _known_binary_request(
    body: bytes,
    header_length: int,
    model: str,
    version: str | None,
    layouts: BinaryLayouts | None,
) -> tuple[InferRequest, BinaryLayout | None] | None:
    """The request whose header came before, with its layout, or Triton's raw binary
    request (``header_length`` 0: the body is the one input); None for any other."""
    layout = None if layouts is None else layouts.find(body, header_length)
    if layout is not None:
        return layout.request(body, header_length, model, version), layout
    if header_length == 0:
        request = InferRequest(model, version, {}, {}, binary_output_default=True)
        request.raw_input = bytes(body)
        return request, None
    return None


def _split_body(body: bytes, header_length: int) -> tuple[bytes, memoryview]:
    """A binary request's JSON header and the binary data after it."""
    if header_length < 0 or header_length > len(body):
        raise _bad(
            f"Inference-Header-Content-Length {header_length} is outside the body "
            f"of {len(body)} bytes"
        )
    return body[:header_length], memoryview(body)[header_length:]


def _decode_inputs(
    raw_inputs: list[Any],
    binary: memoryview,
    model: str,
    shared_memory: SystemSharedMemory | None,
    inputs: dict[str, np.ndarray],
    datatypes: dict[str, str],
    binary_inputs: list[tuple[str, str, tuple[int, ...], int]],
    json_tensors: list[tuple[str, str, tuple[int, ...]]],
    held: list[Any],
) -> bool:
    """Each input of ``raw_inputs`` read into ``inputs`` and ``datatypes``; those sent as
    binary data noted in ``binary_inputs``, those sent as JSON values in ``json_tensors``,
    the regions read in ``held``. Whether an input is in shared memory."""
    in_shared_memory = False
    shared_bytes = 0  # read from shared memory so far
    offset = 0
    # a tensor whose bytes its shape does not take is refused once every input is read, as
    # Triton refuses it after the other checks (and for the last such input given)
    wrong_size: ProtocolError | None = None
    for item in raw_inputs:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _bad("each input needs a 'name'")
        name = item["name"]
        if name in inputs:
            raise _bad(f"input '{shown(name)}' is given twice")
        datatype = item.get("datatype")
        if not isinstance(datatype, str) or datatype not in V2_TO_NUMPY:
            raise _bad(f"input '{shown(name)}': unknown datatype {shown(repr(datatype), 40)}")
        shape = _shape(name, item.get("shape"))
        params = item.get("parameters") or {}
        size = params.get("binary_data_size") if isinstance(params, dict) else None
        if names_region(params):
            in_shared_memory = True
            if size is not None or "data" in item:
                raise _bad(
                    f"input '{shown(name)}': Input must set only one of the following fields: "
                    "'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in "
                    "'parameters'"
                )
            spent, error = read_region_input(
                shared_memory, name, datatype, shape, params, shared_bytes, model, inputs, held
            )
            wrong_size = error or wrong_size
            shared_bytes += spent
        elif size is not None:
            wrong_size = _read_binary_input(
                name, datatype, shape, size, binary, offset, model, inputs, wrong_size
            )
            binary_inputs.append((name, datatype, shape, size))
            offset += size
        elif "data" in item:
            inputs[name] = _decode_json(name, datatype, shape, item["data"])
            json_tensors.append((name, datatype, shape))
        else:
            raise _bad(f"input '{shown(name)}' has neither 'data' nor binary_data_size")
        datatypes[name] = datatype
    if offset != len(binary):
        raise _bad(f"{len(binary) - offset} bytes of binary data belong to no input")
    if wrong_size is not None:
        raise wrong_size
    return in_shared_memory


def _read_binary_input(
    name: str,
    datatype: str,
    shape: tuple[int, ...],
    size: Any,
    binary: memoryview,
    offset: int,
    model: str,
    inputs: dict[str, np.ndarray],
    wrong_size: ProtocolError | None,
) -> ProtocolError | None:
    """An input's ``size`` bytes of binary data from ``offset`` read into ``inputs``; the
    size error to raise once every input is read, this input's or else ``wrong_size``."""
    if (
        type(size) is not int  # not a bool either
        or size < 0
        or offset + size > len(binary)
    ):
        raise _bad(
            f"input '{shown(name)}': binary_data_size {shown(repr(size), 40)} runs past "
            f"the {len(binary)} bytes of binary data"
        )
    raw = binary[offset : offset + size]
    return decode_input(inputs, name, datatype, shape, raw, model) or wrong_size


def _request_parameters(doc: dict[str, Any]) -> dict[str, Any]:
    """The request's 'parameters', none of them Triton's own."""
    params = doc.get("parameters") or {}
    if not isinstance(params, dict):
        raise _bad("'parameters' must be an object")
    if params and any(key.startswith("triton_") for key in params):
        raise _bad(
            "parameter keys starting with 'triton_' are reserved for Triton usage and should "
            "not be specified"
        )
    return params


def _request_options(
    doc: dict[str, Any],
    params: dict[str, Any],
    datatypes: dict[str, str],
    outputs: list[RequestedOutput] | None,
) -> dict[str, Any]:
    """The request's fields other than its inputs, as ``InferRequest`` keywords."""
    request_id = doc.get("id")
    timeout = params.get("timeout", 0)
    priority = params.get("priority", 0)
    if type(timeout) is not int or timeout < 0 or type(priority) is not int or priority < 0:
        raise _bad("'timeout' and 'priority' parameters must be non-negative integers")
    binary_output = params.get("binary_data_output", False)
    if not isinstance(binary_output, bool):
        raise _bad("the 'binary_data_output' parameter must be true or false")
    return {
        "input_datatypes": datatypes,
        "outputs": outputs,
        "id": request_id if isinstance(request_id, str) else None,
        "parameters": params,
        "binary_output_default": binary_output,
        "priority": priority,
        "timeout_us": timeout,
    }


def _binary_layout(
    binary_inputs: list[tuple[str, str, tuple[int, ...], int]],
    binary_size: int,
    options: dict[str, Any],
) -> BinaryLayout:
    """The layout of a request whose inputs all travel as binary data."""
    tensors = tuple(_layout_tensor(*item) for item in binary_inputs)
    return BinaryLayout(tensors, binary_size, options=options)


def _decode_outputs(
    raw: Any, shared_memory: SystemSharedMemory | None
) -> list[RequestedOutput] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise _bad("'outputs' must be a list")
    outputs = []
    names: set[str] = set()
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _bad("each requested output needs a 'name'")
        name = item["name"]
        if name in names:  # or a model's one output, asked for 20,000 times, runs as many
            raise _bad(f"output '{shown(name)}' is requested twice")
        names.add(name)
        params = item.get("parameters") or {}
        if not isinstance(params, dict):
            raise _bad(f"output '{shown(name)}': 'parameters' must be an object")
        binary = params.get("binary_data")
        if binary is not None and not isinstance(binary, bool):
            raise _bad(f"output '{shown(name)}': binary_data must be true or false")
        classification = params.get("classification", 0)
        if type(classification) is not int or classification < 0:  # not a bool either
            raise _bad(f"output '{shown(name)}': classification must be a non-negative integer")
        if names_region(params):
            outputs.append(_output_in_shared_memory(name, params, binary, shared_memory))
            continue
        outputs.append(RequestedOutput(name, binary, classification))
    return outputs


def _output_in_shared_memory(
    name: str, params: dict[str, Any], binary: Any, shared_memory: SystemSharedMemory | None
) -> RequestedOutput:
    """A requested output the server writes into a region (Triton's checks, in its words)."""
    if "classification" in params:
        raise _bad(
            f"output '{shown(name)}': Output can't set both 'shared_memory_region' and "
            "'classification'"
        )
    if binary:
        raise _bad(
            f"output '{shown(name)}': Output can't set both 'shared_memory_region' and "
            "'binary_data'"
        )
    if shared_memory is None:
        raise disabled(name)
    return RequestedOutput(name, False, 0, shared_memory.tensor_slice(name, params))


def _json_data(tensor: OutputTensor) -> Any:
    if tensor.datatype == "BYTES":
        return [_json_text(tensor.name, v) for v in tensor.data.ravel()]
    return orjson.Fragment(json_numbers(np.ascontiguousarray(tensor.data).ravel()))


def _json_text(name: str, value: Any) -> str:
    """A BYTES element as a JSON string; bytes that are not UTF-8 have no JSON form (Triton
    writes them raw, which its clients then fail to read)."""
    if not isinstance(value, bytes):
        return str(value)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(
            f"output '{shown(name)}' holds bytes that are not UTF-8, which a JSON reply "
            "cannot carry; ask for it as binary data",
            "protocol/json-output",
        ) from None


# an output of a fixed reply: name, numpy dtype, shape, element count, and whether the
# array must have that very shape (else only its element count must match)
_ReplyOutput = tuple[str, np.dtype[Any], tuple[int, ...], int, bool]


def _fitted(array: np.ndarray | None, output: _ReplyOutput) -> np.ndarray | None:
    """The engine's array in the reply's dtype, or None when its shape (or, for an output
    the config reshapes, its size) is not the one the reply was made for, or the engine
    left the output out."""
    _, dtype, shape, count, exact = output
    if array is None or ((array.shape != shape) if exact else (array.size != count)):
        return None
    if array.dtype is not dtype and array.dtype != dtype:  # `is`: the usual, cheap
        array = array.astype(dtype)
    return array


def _reply_header(head: bytes, request_id: str | None, tail: bytes) -> bytes:
    """A response's JSON as ``encode_infer_response`` writes it: ``head`` (its model and
    version), the id when there is one, and ``tail``."""
    if request_id is None:
        return head + tail
    return b"".join((head, b',"id":', orjson.dumps(request_id), tail))


def _reply_head(model_name: str, model_version: str) -> bytes:
    return orjson.dumps({"model_name": model_name, "model_version": model_version})[:-1]


def _binary_http_headers(header_length: int, size: int) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", b"application/octet-stream"),
        (b"inference-header-content-length", str(header_length).encode()),
        (b"content-length", str(header_length + size).encode()),
    ]


@dataclass(frozen=True, slots=True, eq=False)
class BinaryReply:
    """The response to every request of one layout whose outputs all travel as binary data.

    Its JSON header (model, version, id, each output's name, datatype, shape and size) is
    the same every time but for the id, so it is encoded once; a response is that header
    and the outputs' bytes. The header and the HTTP headers, content length included, are
    kept made for the id the lane was made with; a request with another id has its own
    made.
    """

    request_id: str | None  # the id ``header`` and ``http_headers`` hold
    head: bytes  # the header up to the id
    tail: bytes  # the header after the id
    size: int  # the outputs' bytes
    outputs: tuple[_ReplyOutput, ...]
    header: bytes
    http_headers: list[tuple[bytes, bytes]]
    sized: bool = True  # the HTTP headers hold the content length

    @classmethod
    def make(
        cls,
        model_name: str,
        model_version: str,
        request_id: str | None,
        outputs: tuple[FixedOutput, ...],
    ) -> BinaryReply | None:
        """The reply, or None when an output travels as JSON."""
        entries = []
        reply_outputs = []
        size = 0
        for name, datatype, dtype, shape, binary, exact in outputs:
            if not binary:
                return None
            count = math.prod(shape)
            nbytes = count * dtype.itemsize
            entries.append(
                {
                    "name": name,
                    "datatype": datatype,
                    "shape": list(shape),
                    "parameters": {"binary_data_size": nbytes},
                }
            )
            reply_outputs.append((name, dtype, shape, count, exact))
            size += nbytes
        head = _reply_head(model_name, model_version)
        tail = b"," + orjson.dumps({"outputs": entries})[1:]
        header = _reply_header(head, request_id, tail)
        return cls(
            request_id,
            head,
            tail,
            size,
            tuple(reply_outputs),
            header,
            _binary_http_headers(len(header), size),
        )

    def answer(
        self, results: dict[str, np.ndarray], request_id: str | None
    ) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
        """The response body and its HTTP headers, or None when an array is not what the
        header says."""
        header, http_headers = self.header, self.http_headers
        if request_id != self.request_id:
            header = _reply_header(self.head, request_id, self.tail)
            http_headers = _binary_http_headers(len(header), self.size)
        parts = [header]
        for output in self.outputs:
            array = _fitted(results.get(output[0]), output)
            if array is None:
                return None
            parts.append(array.tobytes())
        return b"".join(parts), http_headers


@dataclass(frozen=True, slots=True, eq=False)
class JsonReply:
    """The response to every request of one lane whose outputs all travel as JSON.

    All of it but the id and the outputs' values (model, version, each output's name,
    datatype and shape) is the same every time, so it is encoded once, in the bytes
    ``encode_infer_response`` makes of it; a response joins those pieces, the id and the
    values. The first piece is kept made for the id the lane was made with.
    """

    request_id: str | None  # the id ``pieces[0]`` holds
    head: bytes  # the response up to the id
    first_tail: bytes  # the first piece after the id
    # the text before each output's values, and after the last
    pieces: tuple[bytes, ...]
    outputs: tuple[_ReplyOutput, ...]
    http_headers: list[tuple[bytes, bytes]]
    sized: bool = False  # the length is each response's own

    @classmethod
    def make(
        cls,
        model_name: str,
        model_version: str,
        request_id: str | None,
        outputs: tuple[FixedOutput, ...],
    ) -> JsonReply | None:
        """The reply, or None when an output travels as binary data."""
        text = b',"outputs":['
        pieces = []
        reply_outputs = []
        for index, (name, datatype, dtype, shape, binary, exact) in enumerate(outputs):
            if binary:
                return None
            entry = orjson.dumps({"name": name, "datatype": datatype, "shape": list(shape)})
            pieces.append(text + (b"," if index else b"") + entry[:-1] + b',"data":')
            text = b"}"
            reply_outputs.append((name, dtype, shape, math.prod(shape), exact))
        pieces.append(text + b"]}")
        head = _reply_head(model_name, model_version)
        first_tail = pieces[0]
        pieces[0] = _reply_header(head, request_id, first_tail)
        return cls(
            request_id,
            head,
            first_tail,
            tuple(pieces),
            tuple(reply_outputs),
            [(b"content-type", b"application/json")],
        )

    def answer(
        self, results: dict[str, np.ndarray], request_id: str | None
    ) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
        """The response body and its HTTP headers, or None when an array is not what the
        reply says."""
        pieces = self.pieces
        parts: list[bytes] = []
        for piece, output in zip(pieces, self.outputs, strict=False):
            array = _fitted(results.get(output[0]), output)
            if array is None:
                return None
            values = np.ascontiguousarray(array).ravel()
            parts += (piece, json_numbers(values))
        parts.append(pieces[-1])
        if request_id != self.request_id:
            parts[0] = _reply_header(self.head, request_id, self.first_tail)
        return b"".join(parts), self.http_headers


def encode_infer_response(response: InferResponse) -> tuple[bytes, int | None]:
    """The body, and the JSON header length when binary tensors follow it."""
    outputs = []
    blobs: list[bytes] = []
    for tensor in response.outputs:
        entry: dict[str, Any] = {
            "name": tensor.name,
            "datatype": tensor.datatype,
            "shape": list(tensor.data.shape),
        }
        if tensor.in_shared_memory:  # the client reads it from there
            pass
        elif tensor.binary:
            blob = encode_raw_tensor(tensor)
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = _json_data(tensor)
        outputs.append(entry)
    doc: dict[str, Any] = {
        "model_name": response.model_name,
        "model_version": response.model_version,
    }
    if response.id is not None:
        doc["id"] = response.id
    if response.parameters:
        doc["parameters"] = response.parameters
    doc["outputs"] = outputs
    header = orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)
    if not blobs:
        return header, None
    return header + b"".join(blobs), len(header)


# ---- the client's direction: a request out, its response back -----------------------


def encode_infer_request(request: InferRequest) -> tuple[bytes, int]:
    """The body of a binary-tensor V2 request, and the length of its JSON header."""
    inputs = []
    blobs = []
    for name, value in request.inputs.items():
        datatype, array, raw = wire_tensor(name, value, request.input_datatypes)
        inputs.append(
            {
                "name": name,
                "datatype": datatype,
                "shape": list(array.shape),
                "parameters": {"binary_data_size": len(raw)},
            }
        )
        blobs.append(raw)
    params = request.forwarded_parameters()
    params["binary_data_output"] = True
    doc: dict[str, Any] = {"inputs": inputs, "parameters": params}
    if request.id is not None:
        doc["id"] = request.id
    if request.outputs is not None:
        outputs = []
        for out in request.outputs:
            out_params: dict[str, Any] = {"binary_data": True}
            if out.classification:
                out_params["classification"] = out.classification
            outputs.append({"name": out.name, "parameters": out_params})
        doc["outputs"] = outputs
    header = orjson.dumps(doc)
    return header + b"".join(blobs), len(header)


def decode_infer_response(
    body: bytes, header_length: int | None, request: InferRequest
) -> InferResponse:
    """The response to ``request``; each output's ``binary`` is what the request asked."""
    view = memoryview(body)
    header = view[:header_length] if header_length is not None else view
    doc = orjson.loads(header)
    offset = header_length or 0
    flags, default = request.binary_outputs()
    outputs = []
    for out in doc.get("outputs") or ():
        name = out["name"]
        datatype = out["datatype"]
        shape = out["shape"]
        size = (out.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            data = decode_raw_tensor(name, datatype, tuple(shape), view[offset : offset + size])
            offset += size
        else:
            data = from_values(datatype, shape, out.get("data") or [])
        outputs.append(OutputTensor(name, datatype, data, flags.get(name, default)))
    return InferResponse(
        model_name=doc.get("model_name", request.model_name),
        model_version=str(doc.get("model_version", "")),
        outputs=outputs,
        id=doc.get("id"),
        parameters=doc.get("parameters") or {},
    )
