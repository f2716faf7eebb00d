"""Triton's generate extension on the wire: a request as one JSON object whose top-level
fields are a model's inputs (by name) or parameters, and its answers as JSON objects of
their outputs.

Wire formats only; the front door (frontdoors/generate.py) runs the call. What Triton's
HTTP front end does, and so what this module does:

- The body is one JSON object. Its members are read in order, a key given twice read
  twice (as the second time an input is given, refused in Triton's words); a key's value
  is always its first member's. ``id``, if given, must be a string: it is the request's
  id (and, as every field that is not an input, a parameter too).
- A field named as one of the model's inputs becomes that input: its value, or the
  values of a one-level array, shaped to the input's dims (the fixed dims must divide the
  count, the innermost variable dim takes what is left, the other variable dims are 1).
- Any other field is a parameter: a string, an integer, a boolean or a number; nothing
  else. ``parameters``, an object, holds more fields read the same way.
- A response is an object of ``model_name``, ``model_version``, the ``id`` when there is
  one, the response's parameters and each output, by name in sorted order: an output's
  values as a flat array, or the value alone where there is one. ``/generate_stream``
  sends each as a Server-Sent Event (``data: {...}`` and a blank line).

Where Triton answers a bad body 500 (its JSON reader's errors), modelyard answers 400
with the same words leading the line. Bounded beyond the body's size: JSON nesting
(simdjson's 1,024 levels) and the fields read (``MAX_FIELDS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import simdjson

from modelyard.errors import DETAIL_CHARS, Code, ModelyardError, ProtocolError, shown
from modelyard.protocol.tensors import json_numbers
from modelyard.types import V2_TO_NUMPY, InferResponse, OutputTensor

RULE = "protocol/generate"
WHERE = "the request body: a JSON object of the model's inputs by name, and its parameters"
# the fields a request may have, its top-level keys and its parameters' together: far more
# than a model's inputs and parameters, far fewer than a body's bytes could make
MAX_FIELDS = 1024
# a body over this takes its number inputs as flat arrays of their datatype, read as one
# buffer; under it any value Triton reads is read, value by value
SLOW_BODY_BYTES = 256 << 10
PARAMETERS = "parameters"  # the key whose object holds more fields (Triton's nested schema)
SSE_CONTENT_TYPE = b"text/event-stream; charset=utf-8"

_INT64 = (-(2**63), 2**63 - 1)
_FLOAT_MAX = {"FP32": float(np.finfo(np.float32).max)}


def refused(detail: str, rule: str = RULE) -> ProtocolError:
    """A generate body refused; ``detail`` is Triton's words, which the line leads with."""
    return ProtocolError(detail, code=Code.INVALID_ARGUMENT, rule=rule, where=WHERE, triton=True)


@dataclass(frozen=True, slots=True)
class Fields:
    """A JSON object as Triton reads it: its members in order (a key given twice listed
    twice), each key's first value, and the object of its first ``parameters`` member."""

    members: tuple[str, ...]
    first: dict[str, Any]  # a number array is kept as the parser's (read as one buffer)
    parameters: Fields | None
    body_bytes: int = 0


def read_body(body: bytes) -> Fields:
    """A generate request's body, or its refusal."""
    try:
        root = simdjson.Parser().parse(body)
    except (ValueError, RuntimeError) as exc:  # malformed, not UTF-8, too deep, too big a number
        raise refused(f"failed to parse the request JSON buffer: {exc}", "protocol/json") from None
    if type(root) is not simdjson.Object:
        raise refused("attempt to get members for non-object")
    nested = None
    count = len(root)
    if count <= MAX_FIELDS and PARAMETERS in root:
        value = root[PARAMETERS]  # the first member of that key, as the fields read it
        if type(value) is simdjson.Object:
            count += len(value)
            if count <= MAX_FIELDS:
                nested = _fields(value, None, len(body))
    if count > MAX_FIELDS:
        raise ProtocolError(
            f"generate request has {count} fields or more (top-level keys and parameters), "
            f"over the limit of {MAX_FIELDS}",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/generate-fields",
            where=WHERE,
        )
    return _fields(root, nested, len(body))


def _fields(value: Any, nested: Fields | None, body_bytes: int) -> Fields:
    members = []
    first: dict[str, Any] = {}
    for key in value:
        members.append(key)
        if key not in first:
            item = value[key]
            first[key] = item if type(item) is simdjson.Array else _plain(item)
    return Fields(tuple(members), first, nested, body_bytes)


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is simdjson.Object:
        return value.as_dict()
    if kind is simdjson.Array:
        return value.as_list()
    return value


@dataclass(slots=True)
class GenerateInputs:
    """What a generate body gives an infer request: its inputs, their datatypes, its
    parameters and its id."""

    inputs: dict[str, np.ndarray]
    datatypes: dict[str, str]
    parameters: dict[str, Any]
    id: str | None


def infer_inputs(fields: Fields, model_inputs: list[dict[str, Any]]) -> GenerateInputs:
    """The body's fields as a model's inputs and parameters (``model_inputs``: the inputs of
    the model's metadata, each with its name, datatype and shape)."""
    request_id = fields.first.get("id")
    if request_id is not None and type(request_id) is not str:
        raise refused("Unable to parse 'id': attempt to access JSON non-string as string")
    by_name = {i["name"]: (i["datatype"], i["shape"]) for i in model_inputs}
    into = GenerateInputs({}, {}, {}, request_id or None)
    for name in fields.members:
        if name == PARAMETERS:
            if name in by_name:
                raise refused(
                    f"Keyword '{PARAMETERS}' for nested schema also given as input tensor name"
                )
            if fields.parameters is None:
                raise refused(
                    f"Expected JSON object for keyword: '{PARAMETERS}': attempt to access "
                    "JSON non-object as object"
                )
            try:
                for nested in fields.parameters.members:
                    _field(nested, fields.parameters, by_name, into)
            except ProtocolError as error:
                raise refused(f"Converting keyword: '{PARAMETERS}': {error.detail}") from None
        else:
            _field(name, fields, by_name, into)
    return into


def _field(
    name: str,
    fields: Fields,
    by_name: dict[str, tuple[str, list[int]]],
    into: GenerateInputs,
) -> None:
    value = fields.first[name]
    known = by_name.get(name)
    if known is None:
        into.parameters[name] = _parameter(name, value)
        return
    datatype, dims = known
    if type(value) is simdjson.Array:
        array = _numbers(name, datatype, dims, value)
        if array is None:
            if fields.body_bytes > SLOW_BODY_BYTES:
                raise refused(
                    f"input '{shown(name)}' in a body of more than {SLOW_BODY_BYTES} bytes "
                    f"must be a flat array of {datatype} numbers",
                    "protocol/generate-fields",
                )
            array = _input(name, datatype, dims, value.as_list())
    else:
        array = _input(name, datatype, dims, value)
    if name in into.inputs:
        raise refused(f"input '{shown(name)}' already exists in request")
    into.inputs[name] = array
    into.datatypes[name] = datatype


def _parameter(name: str, value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool:
        return value
    if kind is int:
        return value if _INT64[0] <= value <= _INT64[1] else float(value)
    if kind is float:
        return value
    raise refused(
        f"parameter '{shown(name)}' has invalid type. It should be either 'int', 'bool', or "
        "'string'."
    )


_BUFFERS = {"i": np.int64, "u": np.uint64, "d": np.float64}


def _numbers(name: str, datatype: str, dims: list[int], value: Any) -> np.ndarray | None:
    """A flat array of numbers that are all of the input's datatype, read as one buffer
    (a body's millions of numbers would each be a Python object, on the event loop);
    None: anything else, which the value by value reading reads in Triton's words."""
    dtype = V2_TO_NUMPY.get(datatype)
    if dtype is None or datatype in ("BOOL", "FP16", "BF16", "BYTES"):
        return None
    kind = "d" if dtype.kind == "f" else dtype.kind
    try:
        flat = np.frombuffer(value.as_buffer(of_type=kind), _BUFFERS[kind])
    except (TypeError, ValueError):  # an element of another type, or nested arrays
        return None
    if len(flat) != len(value):
        return None
    if flat.size and dtype.kind in "iu":
        limits = np.iinfo(dtype)
        if flat.min() < limits.min or flat.max() > limits.max:
            return None
    largest = _FLOAT_MAX.get(datatype)
    if flat.size and largest is not None and np.abs(flat).max() > largest:
        return None
    return flat.astype(dtype).reshape(_shape(name, dims, len(flat)))


def _leaves(value: Any) -> list[Any]:
    """An input's values in order, nested arrays flattened (Triton reads them so)."""
    if type(value) is not list:
        return [value]
    flat: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack.extend(reversed(item))
        else:
            flat.append(item)
    return flat


def _shape(name: str, dims: list[int], count: int) -> list[int]:
    """The input's dims with its variable ones filled in for ``count`` values: the fixed dims
    must divide the count, the innermost variable dim takes what is left, the others are 1."""
    shape = [1 if dim == -1 else dim for dim in dims]
    fixed = 1
    for dim in shape:
        fixed *= dim
    if fixed == 0:  # a shape of no elements holds no values but none
        if count == 0:
            return shape
    elif count % fixed == 0:
        variable = [i for i, dim in enumerate(dims) if dim == -1]
        if variable:
            shape[variable[-1]] = count // fixed
            return shape
        if count == fixed:
            return shape
    raise refused(f"The schema can not convert input '{shown(name)}' to tensor with proper shape")


def _input(name: str, datatype: str, dims: list[int], value: Any) -> np.ndarray:
    """An input's value as Triton reads it, in its order and words: BYTES' strings first,
    then the shape, then each value's type."""
    leaves = _leaves(value)
    if datatype == "BYTES":
        for leaf in leaves:
            if type(leaf) is not str:
                raise refused(
                    "Unable to parse JSON bytes array: attempt to access JSON non-string as string"
                )
    count = len(value) if type(value) is list else 1
    shape = _shape(name, dims, count)
    if datatype in ("FP16", "BF16"):
        raise refused(
            f"receiving {datatype} data via JSON is not supported. Please use the binary data "
            f"format for input {shown(name)}"
        )
    for index, leaf in enumerate(leaves):
        if index >= count:
            break
        wrong = _wrong_type(datatype, leaf)
        if wrong is not None:
            raise refused(f"Unable to parse 'data': {wrong}")
    if len(leaves) != count:
        raise refused("Unable to parse 'data': Shape does not match true shape of 'data' field")
    if datatype == "BYTES":
        array = np.empty(count, dtype=object)
        array[:] = [leaf.encode("utf-8") for leaf in leaves]
        return array.reshape(shape)
    dtype = V2_TO_NUMPY[datatype]
    assert dtype is not None
    if leaves and dtype.kind in "iu":
        limits = np.iinfo(dtype)
        if min(leaves) < limits.min or max(leaves) > limits.max:
            raise refused(f"input '{shown(name)}': a value is out of the range of {datatype}")
    largest = _FLOAT_MAX.get(datatype)
    if leaves and largest is not None and max(abs(leaf) for leaf in leaves) > largest:
        raise refused(f"input '{shown(name)}': a value is out of the range of {datatype}")
    return np.array(leaves, dtype=dtype).reshape(shape)


def _wrong_type(datatype: str, value: Any) -> str | None:
    """What Triton's JSON reader says of a value that is not of ``datatype``; None: it is."""
    kind = type(value)
    if datatype == "BOOL":
        return None if kind is bool else "attempt to access JSON non-boolean as boolean"
    if datatype.startswith("UINT"):
        if kind is int and value >= 0:
            return None
        return "attempt to access JSON non-unsigned-integer as unsigned-integer"
    if datatype.startswith("INT"):
        if kind is int and _INT64[0] <= value <= _INT64[1]:
            return None
        return "attempt to access JSON non-signed-integer as signed-integer"
    if datatype in ("FP32", "FP64"):
        if kind is int or kind is float:
            return None
        return "attempt to access JSON non-number as double"
    return None  # BYTES: read as strings already


def response_body(response: InferResponse) -> bytes:
    """A response as one JSON object (``/generate``'s body, a ``/generate_stream`` event's
    data)."""
    doc: dict[str, Any] = {}
    for tensor in response.outputs:
        doc[tensor.name] = _output(tensor)
    for key, value in response.parameters.items():
        doc[key] = value  # over an output of the same name: Triton keeps the parameter
    if response.id:
        doc["id"] = response.id
    doc["model_name"] = response.model_name
    doc["model_version"] = response.model_version
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


def _output(tensor: OutputTensor) -> Any:
    data = tensor.data
    values: Any
    if tensor.datatype == "BYTES":
        values = [_text(tensor.name, v) for v in data.ravel()]
        return values[0] if data.size == 1 else values
    text = json_numbers(np.ascontiguousarray(data).ravel())
    return orjson.Fragment(text[1:-1] if data.size == 1 else text)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, bytes):
        return str(value)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(
            f"output '{shown(name)}' holds bytes that are not UTF-8, which a generate "
            "response (JSON) cannot carry",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/json-output",
            where=f"the model's output '{shown(name)}': use POST .../infer and ask for it as "
            "binary data",
        ) from None


def event(data: bytes) -> bytes:
    """One Server-Sent Event carrying ``data`` (JSON: one line)."""
    return b"data: " + data + b"\n\n"


def error_event(error: ModelyardError) -> bytes:
    """An error in a stream of responses, as Triton sends it (``{"error": message}``, the
    message whole: clients compare it so), with modelyard's error line beside it."""
    message = shown(error.detail, DETAIL_CHARS)
    return event(orjson.dumps({"error": message, "error_line": error.line()}))
