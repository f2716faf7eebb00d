"""An infer request's JSON read with its numbers straight into arrays: the same requests,
values and refusals as reading every number as a Python object."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import orjson
import pytest

from modelyard.errors import ProtocolError
from modelyard.protocol import infer_json
from modelyard.protocol.infer_json import infer_document
from modelyard.protocol.v2_http import decode_infer_request


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read bodies of any size with simdjson, not only those past the size where it pays."""
    monkeypatch.setattr(infer_json, "_SIMDJSON_MIN_BYTES", 0)


def _refuse(detail: str) -> ProtocolError:
    return ProtocolError(detail)


def _as_lists(doc: Any) -> Any:
    """The document with its arrays back as the lists orjson reads."""
    if isinstance(doc, dict):
        return {key: _as_lists(value) for key, value in doc.items()}
    if isinstance(doc, list):
        return [_as_lists(value) for value in doc]
    if isinstance(doc, np.ndarray):
        return doc.tolist()
    return doc


def _flat(values: Any) -> list[Any]:
    if not isinstance(values, list):
        return [values]
    return [leaf for value in values for leaf in _flat(value)]


def _random_document(rng: random.Random) -> dict[str, Any]:
    """A request of a random datatype, nesting and set of other fields."""
    datatype = rng.choice(["FP32", "FP64", "FP16", "INT8", "INT32", "INT64", "UINT8", "UINT64"])
    rows, columns = rng.randint(1, 4), rng.randint(0, 5)
    if datatype.startswith("FP"):
        values: list[Any] = [
            round(rng.uniform(-1000, 1000), rng.randint(0, 6)) for _ in range(rows * columns)
        ]
        values = [int(v) if rng.random() < 0.2 else v for v in values]  # integers are numbers too
    elif datatype.startswith("UINT"):
        values = [rng.randint(0, 255) for _ in range(rows * columns)]
    else:
        values = [rng.randint(-128, 127) for _ in range(rows * columns)]
    data: Any = values
    if rng.random() < 0.5:
        data = [values[r * columns : (r + 1) * columns] for r in range(rows)]
    item: dict[str, Any] = {
        "name": "x",
        "shape": [rows, columns],
        "datatype": datatype,
        "data": data,
    }
    if rng.random() < 0.3:
        item["parameters"] = {"note": "ß", "n": [1, {"deep": True}]}
    doc: dict[str, Any] = {"inputs": [item]}
    if rng.random() < 0.5:
        doc["id"] = "request-é"
    if rng.random() < 0.5:
        doc["outputs"] = [{"name": "y", "parameters": {"binary_data": False}}]
    if rng.random() < 0.3:
        doc["parameters"] = {"priority": 1, "binary_data_output": False}
    return doc


def test_numbers_arrive_as_one_array_and_everything_else_as_orjson_reads_it(any_size: None) -> None:
    rng = random.Random(27)
    for _ in range(300):
        body = json.dumps(_random_document(rng)).encode()
        doc = infer_document(body, "inference request", _refuse)
        data = doc["inputs"][0]["data"]
        assert isinstance(data, np.ndarray) and data.ndim == 1
        expected = orjson.loads(body)
        assert data.tolist() == _flat(expected["inputs"][0]["data"])
        expected["inputs"][0]["data"] = _flat(expected["inputs"][0]["data"])
        assert _as_lists(doc) == expected


@pytest.mark.parametrize(
    ("datatype", "values", "dtype"),
    [
        ("FP32", [1, 2.5, -3e38], np.float64),
        ("INT16", [-5, 7], np.int64),
        ("UINT32", [0, 4_000_000_000], np.int64),
        ("UINT64", [0, 2**64 - 1], np.uint64),
    ],
)
def test_an_input_s_numbers_are_read_into_the_buffer_its_datatype_needs(
    datatype: str, values: list[Any], dtype: type, any_size: None
) -> None:
    body = json.dumps({"inputs": [{"name": "x", "datatype": datatype, "data": values}]}).encode()
    data = infer_document(body, "inference request", _refuse)["inputs"][0]["data"]
    assert data.dtype == np.dtype(dtype)
    assert data.tolist() == values


@pytest.mark.parametrize(
    "values",
    [[1.0, True], [1.0, "2"], [1.0, None], [1.0, {"a": 1}], [[1.5], [2.5, False]]],
)
def test_an_array_holding_anything_but_numbers_is_left_a_list_and_refused_as_before(
    values: list[Any], any_size: None
) -> None:
    body = json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": [len(_flat(values))], "datatype": "FP32", "data": values}
            ]
        }
    ).encode()
    assert infer_document(body, "inference request", _refuse)["inputs"][0]["data"] == values
    with pytest.raises(ProtocolError) as info:
        decode_infer_request(body, None, "m", None)
    assert "data is not valid FP32" in info.value.detail


@pytest.mark.parametrize(
    ("datatype", "values", "says"),
    [
        ("FP32", [3.5e38], "a value is out of the range of FP32"),
        ("FP16", [-70000], "a value is out of the range of FP16"),
        ("INT8", [128], "data is not valid INT8"),
        ("UINT8", [-1], "data is not valid UINT8"),
        ("INT32", [1.5], "data is not valid INT32"),  # a float among integers: a list
    ],
)
def test_values_out_of_a_datatype_s_range_are_refused_in_the_same_words(
    datatype: str, values: list[Any], says: str, any_size: None
) -> None:
    body = json.dumps(
        {"inputs": [{"name": "x", "shape": [len(values)], "datatype": datatype, "data": values}]}
    ).encode()
    with pytest.raises(ProtocolError) as info:
        decode_infer_request(body, None, "m", None)
    assert says in info.value.detail


def test_values_that_fit_keep_their_values_in_the_datatype_s_array(any_size: None) -> None:
    body = json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [[0.1, -2], [3e38, 7]]}
            ]
        }
    ).encode()
    array = decode_infer_request(body, None, "m", None).inputs["x"]
    assert array.dtype == np.float32 and array.shape == (2, 2)
    assert array.tolist() == np.asarray([[0.1, -2], [3e38, 7]], np.float32).tolist()


def test_a_key_given_twice_keeps_its_last_value_as_orjson_does(any_size: None) -> None:
    body = b'{"inputs": [{"name": "x", "datatype": "FP32", "data": [1.0], "data": [2.0, 3.0]}]}'
    doc = infer_document(body, "inference request", _refuse)
    assert _as_lists(doc) == orjson.loads(body)
    body = b'{"id": "a", "inputs": [{"name": "x", "datatype": "FP32", "data": [1.0]}], "id": "b"}'
    assert infer_document(body, "inference request", _refuse)["id"] == "b"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"inputs": [', "malformed JSON in inference request"),
        (b'{"inputs": [NaN]}', "malformed JSON in inference request"),
        (b'{"a": "\xff"}', "malformed JSON in inference request"),
        (b"[1, 2]", "inference request must be a JSON object"),
        (b'{"a": 1} trailing', "malformed JSON in inference request"),
    ],
)
def test_what_is_not_a_json_object_is_refused_in_orjson_s_words(
    body: bytes, says: str, any_size: None
) -> None:
    with pytest.raises(ProtocolError) as info:
        infer_document(body, "inference request", _refuse)
    assert says in info.value.detail
    assert infer_json.read(body) is None


def test_a_small_body_is_read_by_orjson_and_a_large_one_into_arrays() -> None:
    def body(count: int) -> bytes:
        item = {"name": "x", "datatype": "FP32", "data": [0.123456789] * count}
        return json.dumps({"inputs": [item]}).encode()

    small, large = body(8), body(200)
    assert len(small) < infer_json._SIMDJSON_MIN_BYTES <= len(large)
    assert infer_json.read(small) == orjson.loads(small)
    data = infer_json.read(large)["inputs"][0]["data"]  # type: ignore[index]
    assert isinstance(data, np.ndarray) and data.tolist() == [0.123456789] * 200


def test_a_body_over_the_reused_parser_s_size_is_read_by_a_parser_of_its_own(
    any_size: None,
) -> None:
    values = [0.5] * (infer_json._REUSED_PARSER_MAX_BYTES // 4)
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP64", "data": values}]}).encode()
    assert len(body) > infer_json._REUSED_PARSER_MAX_BYTES
    data = infer_document(body, "inference request", _refuse)["inputs"][0]["data"]
    assert data.size == len(values) and float(data.sum()) == 0.5 * len(values)
    small = b'{"inputs": [{"name": "x", "datatype": "FP32", "data": [1.5]}]}'
    assert infer_document(small, "inference request", _refuse)["inputs"][0]["data"].tolist() == [
        1.5
    ]


def test_a_document_still_held_from_the_shared_parser_does_not_stop_the_next_read(
    any_size: None,
) -> None:
    body = b'{"inputs": [{"name": "x", "datatype": "FP32", "data": [1.5, 2.5]}]}'
    held = infer_json._PARSERS.parser.parse(body)  # a proxy the parser may not outlive
    for _ in range(2):  # read by orjson, then by a fresh parser
        doc = infer_document(body, "inference request", _refuse)
        assert _as_lists(doc) == orjson.loads(body)
    assert isinstance(
        infer_document(body, "inference request", _refuse)["inputs"][0]["data"], np.ndarray
    )
    del held


def test_an_object_of_many_keys_is_read_by_orjson(any_size: None) -> None:
    """A proxy looks a key up by reading the keys before it: 50,000 of them would cost
    more than a second where orjson takes milliseconds."""
    many = {f"k{i}": i for i in range(50_000)}
    item = {"name": "x", "datatype": "FP32", "data": [1.5, 2.5]}
    for doc in ({"inputs": [item], **many}, {"inputs": [{**item, **many}]}):
        body = json.dumps(doc).encode()
        assert infer_json._with_arrays(body) is None
        assert infer_json.read(body) == orjson.loads(body)
    small = json.dumps({"inputs": [item], "id": "a"}).encode()
    assert isinstance(infer_json.read(small)["inputs"][0]["data"], np.ndarray)  # type: ignore[index]


def test_an_array_outlives_the_next_read_of_the_shared_parser(any_size: None) -> None:
    """Requests wait in a batch while later ones are read: their arrays own their values."""
    first = infer_json.read(b'{"inputs": [{"name": "x", "datatype": "FP32", "data": [1.5, 2.5]}]}')
    assert first is not None
    for _ in range(3):
        infer_json.read(b'{"inputs": [{"name": "x", "datatype": "FP32", "data": [9.0, 9.0, 9.0]}]}')
    assert first["inputs"][0]["data"].tolist() == [1.5, 2.5]


@pytest.mark.parametrize("size", ["small", "any"])
def test_a_list_after_a_value_is_flattened_by_either_reader(
    size: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """simdjson's buffer flattens [1.5, [2.5, 3.5]]; the list path reads it the same way, so a
    request's answer does not depend on its body's size."""
    if size == "any":
        monkeypatch.setattr(infer_json, "_SIMDJSON_MIN_BYTES", 0)
    item = {"name": "x", "shape": [3], "datatype": "FP32", "data": [1.5, [2.5, [3.5]]]}
    array = decode_infer_request(json.dumps({"inputs": [item]}).encode(), None, "m", None)
    assert array.inputs["x"].tolist() == [1.5, 2.5, 3.5]
    item["data"] = [1.5, [2.5, "3.5"]]
    with pytest.raises(ProtocolError, match="data is not valid FP32"):
        decode_infer_request(json.dumps({"inputs": [item]}).encode(), None, "m", None)


def test_data_nested_past_the_parsers_depth_is_a_json_refusal(any_size: None) -> None:
    data = "[" * 5000 + "1.5" + "]" * 5000
    body = b'{"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": ' + (
        data.encode() + b"}]}"
    )
    with pytest.raises(ProtocolError) as info:
        decode_infer_request(body, None, "m", None)
    assert "malformed JSON in inference request" in info.value.detail
    assert "rule=protocol/json" in info.value.line()
    assert infer_json.read(body) is None
