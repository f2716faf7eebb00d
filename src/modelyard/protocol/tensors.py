"""Tensor bytes on the wire, shared by the HTTP and gRPC codecs.

Raw tensors are little-endian and row-major. BYTES tensors are, element by
element, a 4-byte little-endian length and the bytes. BF16 travels as the top
half of each float32 (rounded to nearest even).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import orjson

from modelyard import error_rules
from modelyard.errors import Code, ProtocolError, shown
from modelyard.types import NUMPY_TO_V2, V2_TO_NUMPY, OutputTensor, element_size, numpy_dtype

WHERE = "the request body (KServe V2 inference request)"

# numpy 1's limit (NPY_MAXDIMS); KServe V2 and Triton name none
MAX_DIMS = 32
# the product of a shape's non-zero dims: numpy refuses an array, even an empty one, whose
# size in bytes would not fit its index type; far past any body a server takes
MAX_ELEMENTS = 2**40


def bad_request(
    detail: str, rule: str = "protocol/v2-request", triton: bool = False
) -> ProtocolError:
    """``triton``: the detail is Triton's own words (the line leads with them)."""
    return ProtocolError(
        detail, code=Code.INVALID_ARGUMENT, rule=rule, where=WHERE, triton=triton
    )


def check_shape(name: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape of non-negative dims that numpy can make an array of, or a refusal."""
    if len(shape) > MAX_DIMS:
        raise bad_request(
            f"input '{shown(name)}': shape has {len(shape)} dims, over the limit of {MAX_DIMS}",
            "protocol/tensor-shape",
        )
    if math.prod(d or 1 for d in shape) > MAX_ELEMENTS:
        raise bad_request(
            f"input '{shown(name)}': shape {shown(str(list(shape)))} is over {MAX_ELEMENTS} "
            "elements",
            "protocol/tensor-shape",
        )
    return shape


SIZE_RULE = "protocol/tensor-size"


def wrong_value_count(name: str, given: int, shape: tuple[int, ...]) -> ProtocolError:
    """A tensor given as values (JSON data, gRPC contents) that its shape does not hold."""
    return bad_request(
        "Unable to parse 'data': Shape does not match true shape of 'data' field (input "
        f"'{shown(name)}': {given} values given for shape {list(shape)})",
        triton=True,
    )


def _of(name: str, model: str) -> str:
    return f"inference input '{shown(name)}'" + (f" for model '{shown(model)}'" if model else "")


def size_mismatch(name: str, model: str, expected: int, got: int) -> ProtocolError:
    """A tensor whose bytes are not what its shape and datatype take, in Triton's words."""
    return bad_request(
        f"input byte size mismatch for input '{shown(name)}'"
        + (f" for model '{shown(model)}'" if model else "")
        + f". Expected {expected}, got {got}",
        SIZE_RULE,
        triton=True,
    )


def deserialize_bytes(
    raw: bytes | memoryview, count: int, name: str, model: str = ""
) -> np.ndarray:
    """``count`` BYTES elements from Triton's layout (a little-endian uint32 length before
    each); a count or layout that is not that is refused in Triton's words."""
    items: list[bytes] = []
    view = memoryview(raw)
    offset = 0
    total = len(view)
    while offset < total:
        if offset + 4 > total:
            raise bad_request(
                f"incomplete string length indicator for {_of(name, model)}, expecting 4 "
                f"bytes but only {total - offset} bytes available. Please make sure the "
                "string length indicator is in one buffer.",
                SIZE_RULE,
                triton=True,
            )
        if len(items) == count:  # Triton stops at the first element past the shape's
            raise bad_request(
                f"unexpected number of string elements {count + 1} for {_of(name, model)}, "
                f"expecting {count}",
                SIZE_RULE,
                triton=True,
            )
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        if offset + length > total:
            raise bad_request(
                f"{_of(name, model)}: a BYTES element of {length} bytes runs past the "
                f"{total} bytes of data",
                SIZE_RULE,
            )
        items.append(bytes(view[offset : offset + length]))
        offset += length
    if len(items) != count:
        raise bad_request(
            f"expected {count} string elements for {_of(name, model)}, got {len(items)}",
            SIZE_RULE,
            triton=True,
        )
    array = np.empty(count, dtype=object)
    array[:] = items
    return array


def serialize_bytes(array: np.ndarray) -> bytes:
    parts: list[bytes] = []
    for item in array.ravel():
        data = item if isinstance(item, bytes) else str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(data)))
        parts.append(data)
    return b"".join(parts)


def bf16_to_fp32(raw: bytes | memoryview, count: int) -> np.ndarray:
    halves = np.frombuffer(raw, dtype="<u2", count=count).astype(np.uint32)
    return (halves << 16).view(np.float32)


def fp32_to_bf16(array: np.ndarray) -> bytes:
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
    return rounded.astype("<u2").tobytes()


def expected_bytes(datatype: str, shape: tuple[int, ...]) -> int | None:
    """The bytes a tensor of this datatype and shape takes in the binary layout; None for
    BYTES (each element carries its own length)."""
    if datatype == "BYTES":
        return None
    return math.prod(shape) * element_size(datatype)


def decode_raw_tensor(
    name: str, datatype: str, shape: tuple[int, ...], raw: bytes | memoryview, model: str = ""
) -> np.ndarray:
    """One input tensor from its raw bytes; the array shares memory with ``raw``.
    ``model``: the model the request names, for Triton's words when the size is wrong."""
    count = math.prod(shape)
    if datatype == "BYTES":
        return deserialize_bytes(raw, count, name, model).reshape(shape)
    expected = count * element_size(datatype)
    if len(raw) != expected:
        raise size_mismatch(name, model, expected, len(raw))
    if datatype == "BF16":
        return bf16_to_fp32(raw, count).reshape(shape)
    dtype = V2_TO_NUMPY[datatype]
    assert dtype is not None
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(shape)


UNREAD = np.empty(0)  # in place of a tensor of the wrong size: its request is refused


def decode_input(
    inputs: dict[str, np.ndarray],
    name: str,
    datatype: str,
    shape: tuple[int, ...],
    raw: bytes | memoryview,
    model: str,
) -> ProtocolError | None:
    """Decode one input into ``inputs``; its size error, if it has one, which the request
    raises once every input is read (as Triton refuses it after the other checks)."""
    try:
        inputs[name] = decode_raw_tensor(name, datatype, shape, raw, model)
    except ProtocolError as error:
        if error.rule != SIZE_RULE:
            raise
        inputs[name] = UNREAD
        return error
    return None


def json_numbers(values: np.ndarray) -> bytes:
    """A flat numeric array as a JSON array. orjson writes a float that is not finite as
    ``null``; Triton's writer (rapidjson's ``kWriteNanAndInfFlag``) as ``NaN``,
    ``Infinity``, ``-Infinity``, which Python's json and Triton's clients read back."""
    text = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)
    if b"n" not in text:  # no number is written with an "n": only null is
        return text
    words = [
        b"NaN" if math.isnan(v) else b"Infinity" if v > 0 else b"-Infinity"
        for v in values[~np.isfinite(values)].tolist()
    ]
    pieces = text.split(b"null")
    return pieces[0] + b"".join(w + p for w, p in zip(words, pieces[1:], strict=True))


def encode_raw_tensor(tensor: OutputTensor) -> bytes:
    if tensor.datatype == "BYTES":
        return serialize_bytes(tensor.data)
    if tensor.datatype == "BF16":
        return fp32_to_bf16(tensor.data)
    return np.ascontiguousarray(tensor.data).tobytes()


def wire_tensor(name: str, value: Any, datatypes: dict[str, str]) -> tuple[str, np.ndarray, bytes]:
    """A caller's input as it travels: its datatype (``datatypes`` or the array's), the
    array, and its bytes in the binary layout above."""
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    datatype = datatypes.get(name)
    if datatype is None:
        if array.dtype.kind in "OSU":
            datatype = "BYTES"
        else:
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            datatype = NUMPY_TO_V2.get(array.dtype)
            if datatype is None:
                raise ProtocolError.of(
                    error_rules.INPUT_DTYPE,
                    f"input '{name}' has numpy dtype {array.dtype}, which no V2 datatype holds",
                )
    if datatype == "BYTES":
        raw = serialize_bytes(array)
    elif datatype == "BF16":
        raw = fp32_to_bf16(array)
    else:
        raw = np.ascontiguousarray(array).tobytes()
    return datatype, array, raw


def from_values(datatype: str, shape: list[int], data: Any) -> np.ndarray:
    """An answer's tensor from its values as a list (JSON data, typed gRPC contents)."""
    if datatype == "BYTES":
        array = np.empty(len(data), dtype=object)
        array[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in data]
        return array.reshape(shape)
    return np.asarray(data, dtype=numpy_dtype(datatype)).reshape(shape)
