"""An inference request's JSON, read with each input's numbers straight into an array.

``orjson.loads`` makes a Python object of every number of an input's ``data``, which the
decoder then type-checks, range-checks and copies into numpy: for the 256 floats of one
MLP row that was 17 µs of a request's ~85 µs on the event loop. simdjson's parser exports
a number array as one buffer instead (``Array.as_buffer``), refusing any element that is
not a number of the asked type (a boolean, a string, null), so the request's other fields
become Python objects and its numbers do not (7 µs).

Whatever this reader does not take as it expects (a body that is not an object, a
duplicate key, a number array it cannot export) is read by orjson instead, so refusals
keep orjson's words and the decoder's checks. So is a body under 2 KiB: there simdjson's
fixed cost, with the caches as cold as a serving loop leaves them, outweighed what its
few numbers save (64 floats: 1 µs more).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import orjson
import simdjson

from modelyard.protocol.json_body import json_object

# an input's datatype -> the buffer its JSON numbers are read into
_BUFFER_TYPES: dict[str, Literal["d", "i", "u"]] = {
    "FP16": "d",
    "FP32": "d",
    "FP64": "d",
    "BF16": "d",
    "INT8": "i",
    "INT16": "i",
    "INT32": "i",
    "INT64": "i",
    "UINT8": "i",
    "UINT16": "i",
    "UINT32": "i",
    "UINT64": "u",
}
_BUFFER_DTYPES = {"d": np.dtype(np.float64), "i": np.dtype(np.int64), "u": np.dtype(np.uint64)}
# a parser keeps buffers as large as the largest document it read: larger bodies get their own
_REUSED_PARSER_MAX_BYTES = 1 << 20
_SIMDJSON_MIN_BYTES = 2048  # smaller bodies: orjson (see above)
# A proxy finds a key by reading the object's keys in turn, so reading every key of an
# object costs the square of their number: a request's objects have a handful, and one with
# more than this is read by orjson, whose cost only grows with its size
_MAX_KEYS = 32
_Object = simdjson.Object
_Array = simdjson.Array


class _Parsers(threading.local):
    def __init__(self) -> None:
        self.parser = simdjson.Parser()


_PARSERS = _Parsers()


def infer_document(text: bytes, what: str, refuse: Callable[[str], Exception]) -> dict[str, Any]:
    """``text`` parsed as ``json_object`` parses it, except that an input's ``data`` of
    numbers may be a one-dimensional numpy array (float64, int64 or uint64, by the input's
    datatype) of its values in order, nested lists flattened."""
    doc = _with_arrays(text)
    return doc if doc is not None else json_object(text, what, refuse)


def read(text: bytes) -> dict[str, Any] | None:
    """``infer_document``'s reading of ``text``, or None where it would refuse it."""
    doc = _with_arrays(text)
    if doc is not None:
        return doc
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return parsed if type(parsed) is dict else None


def _with_arrays(text: bytes) -> dict[str, Any] | None:
    if type(text) is not bytes or len(text) < _SIMDJSON_MIN_BYTES:
        return None
    reused = len(text) <= _REUSED_PARSER_MAX_BYTES
    try:
        root = (_PARSERS.parser if reused else simdjson.Parser()).parse(text)
    except ValueError:  # orjson says what is wrong
        return None
    except RuntimeError:  # a proxy of the last document lives on: the next gets a new parser
        _PARSERS.parser = simdjson.Parser()
        return None
    if type(root) is not _Object:
        return None
    try:
        return _document(root)
    except Exception:  # whatever the proxies raise: orjson reads it, or says what is wrong
        return None


def _document(root: Any) -> dict[str, Any] | None:
    if len(root) > _MAX_KEYS:
        return None
    doc: dict[str, Any] = {}
    for key in root:
        value = root[key]
        if key == "inputs" and type(value) is _Array:
            inputs = []
            for item in value:
                if type(item) is _Object:
                    parsed = _input(item)
                    if parsed is None:
                        return None
                    inputs.append(parsed)
                else:
                    inputs.append(_plain(item))
            doc[key] = inputs
        else:
            doc[key] = _plain(value)
    # a key given twice: the proxy finds its first value, a dict keeps its last
    return doc if len(doc) == len(root) else None


def _input(item: Any) -> dict[str, Any] | None:
    if len(item) > _MAX_KEYS:
        return None
    datatype = item.get("datatype")
    buffer_type = _BUFFER_TYPES.get(datatype) if type(datatype) is str else None
    parsed: dict[str, Any] = {}
    for key in item:
        value = item[key]
        if key == "data" and buffer_type is not None and type(value) is _Array:
            try:
                value = np.frombuffer(
                    value.as_buffer(of_type=buffer_type), _BUFFER_DTYPES[buffer_type]
                )
            except TypeError:  # an element of another type: the decoder says which
                value = value.as_list()
        else:
            value = _plain(value)
        parsed[key] = value
    return parsed if len(parsed) == len(item) else None


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is _Object:
        return value.as_dict()
    if kind is _Array:
        return value.as_list()
    return value
