"""Triton's generate bodies read against a model's inputs, and its answers written."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson
import pytest

from modelyard.errors import Code, EngineError, ModelyardError
from modelyard.protocol.generate import (
    MAX_FIELDS,
    SLOW_BODY_BYTES,
    GenerateInputs,
    error_event,
    event,
    infer_inputs,
    read_body,
    response_body,
)
from modelyard.types import InferResponse, OutputTensor

# mock_llm's inputs (Triton's L0_http generate model), as its metadata gives them
MOCK_LLM: list[dict[str, Any]] = [
    {"name": "PROMPT", "datatype": "BYTES", "shape": [1, 1]},
    {"name": "STREAM", "datatype": "BOOL", "shape": [1, 1]},
    {"name": "input_ids", "datatype": "INT32", "shape": [1, -1]},
]


def _read(body: bytes | str, inputs: list[dict[str, Any]] = MOCK_LLM) -> GenerateInputs:
    raw = body.encode() if isinstance(body, str) else body
    return infer_inputs(read_body(raw), inputs)


def _refusal(body: bytes | str, inputs: list[dict[str, Any]] = MOCK_LLM) -> ModelyardError:
    with pytest.raises(ModelyardError) as raised:
        _read(body, inputs)
    assert raised.value.code is Code.INVALID_ARGUMENT
    return raised.value


def test_fields_named_as_inputs_are_inputs_and_the_others_parameters() -> None:
    given = _read(
        '{"id": "42", "PROMPT": "hello", "STREAM": true, "input_ids": [100, 200], '
        '"REPETITION": 3, "DELAY": 0.5, "label": "x", "FLAG": false}'
    )
    assert given.id == "42"
    assert given.inputs["PROMPT"].tolist() == [[b"hello"]]
    assert given.inputs["STREAM"].dtype == np.bool_ and given.inputs["STREAM"].shape == (1, 1)
    assert given.inputs["input_ids"].dtype == np.int32
    assert given.inputs["input_ids"].tolist() == [[100, 200]]
    assert given.datatypes == {"PROMPT": "BYTES", "STREAM": "BOOL", "input_ids": "INT32"}
    # as in Triton, the id is a parameter too
    assert given.parameters == {"id": "42", "REPETITION": 3, "DELAY": 0.5, "label": "x",
                                "FLAG": False}  # fmt: skip


def test_parameters_hold_more_fields_read_the_same_way() -> None:
    given = _read('{"PROMPT": ["hi"], "parameters": {"REPETITION": 2, "STREAM": false}}')
    assert given.parameters == {"REPETITION": 2}
    assert given.inputs["STREAM"].tolist() == [[False]]
    assert given.id is None


def test_an_empty_id_is_no_id() -> None:
    assert _read('{"id": "", "PROMPT": "x", "STREAM": true}').id is None


def test_a_value_is_shaped_to_the_inputs_dims() -> None:
    batched = [{"name": "x", "datatype": "FP32", "shape": [-1, 2]}]
    assert _read('{"x": [1, 2.5, 3, 4]}', batched).inputs["x"].tolist() == [[1, 2.5], [3, 4]]
    two_variable = [{"name": "x", "datatype": "INT64", "shape": [-1, 3, -1]}]
    assert _read('{"x": [1, 2, 3, 4, 5, 6]}', two_variable).inputs["x"].shape == (1, 3, 2)
    assert _read('{"x": []}', two_variable).inputs["x"].shape == (1, 3, 0)
    error = _refusal('{"x": [1, 2, 3]}', batched)
    assert error.line().startswith(
        "The schema can not convert input 'x' to tensor with proper shape; rule=protocol/generate"
    )
    fixed = [{"name": "x", "datatype": "UINT8", "shape": [2]}]
    assert "can not convert input 'x'" in _refusal('{"x": 1}', fixed).detail


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"PROMPT": 123, "STREAM": false}',
         "Unable to parse JSON bytes array: attempt to access JSON non-string as string"),
        ('{"PROMPT": "x", "STREAM": "false"}',
         "Unable to parse 'data': attempt to access JSON non-boolean as boolean"),
        # read in order: the first field's error is the one given
        ('{"PROMPT": true, "STREAM": 123}', "attempt to access JSON non-string as string"),
        ('{"STREAM": 123, "PROMPT": true}', "attempt to access JSON non-boolean as boolean"),
        ('{"PROMPT": {"USER": "x"}, "STREAM": true}', "non-string as string"),
        ('{"PROMPT": "x", "input_ids": [1, 2.5]}',
         "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"),
        ('{"PROMPT": "x", "input_ids": [[1, 2], [3]]}',
         "Unable to parse 'data': Shape does not match true shape of 'data' field"),
        ('{"PROMPT": "x", "input_ids": [2147483648]}',
         "input 'input_ids': a value is out of the range of INT32"),
        ('{"PROMPT": "x", "PARAMS": {"a": 1}}',
         "parameter 'PARAMS' has invalid type. It should be either 'int', 'bool', or 'string'."),
        ('{"PROMPT": "x", "list": [1]}', "parameter 'list' has invalid type"),
        ('{"PROMPT": "x", "none": null}', "parameter 'none' has invalid type"),
        ('{"PROMPT": "hello", "STREAM": false, "PROMPT": "duplicate"}',
         "input 'PROMPT' already exists in request"),
        ('{"PROMPT": "hello", "STREAM": false, "STREAM": true, "PROMPT": "duplicate"}',
         "input 'STREAM' already exists in request"),
        ('{"PROMPT": "x", "parameters": {"PROMPT": "y"}}', "Converting keyword: 'parameters': "
         "input 'PROMPT' already exists in request"),
        ('{"PROMPT": "x", "parameters": 1}', "Expected JSON object for keyword: 'parameters': "
         "attempt to access JSON non-object as object"),
        ('{"PROMPT": "x", "parameters": {"nested": {"twice": 1}}}',
         "Converting keyword: 'parameters': parameter 'nested' has invalid type."),
        ('{"id": 42, "PROMPT": "x"}',
         "Unable to parse 'id': attempt to access JSON non-string as string"),
    ],
)  # fmt: skip
def test_a_wrong_field_is_refused_in_tritons_words(body: str, words: str) -> None:
    error = _refusal(body)
    assert words in error.detail
    assert error.line().startswith(error.detail)  # Triton's words lead the line
    assert "rule=protocol/generate" in error.line()


def test_half_precision_has_no_json_form() -> None:
    half = [{"name": "h", "datatype": "FP16", "shape": [1]}]
    assert _refusal('{"h": 1.0}', half).detail == (
        "receiving FP16 data via JSON is not supported. Please use the binary data format for "
        "input h"
    )


def test_an_input_named_parameters_clashes_with_the_keyword() -> None:
    clash = [{"name": "parameters", "datatype": "INT32", "shape": [1]}]
    error = _refusal('{"parameters": 1}', clash)
    assert "Keyword 'parameters' for nested schema also given as input tensor name" in error.detail


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{bad", "failed to parse the request JSON buffer"),
        (b"", "failed to parse the request JSON buffer"),
        (b'{"PROMPT": "\xff"}', "failed to parse the request JSON buffer"),
        (b"[" * 2000 + b"]" * 2000, "failed to parse the request JSON buffer"),
        (b'["PROMPT"]', "attempt to get members for non-object"),
    ],
)
def test_a_body_that_is_no_json_object_is_refused(body: bytes, words: str) -> None:
    with pytest.raises(ModelyardError) as raised:
        read_body(body)
    assert raised.value.code is Code.INVALID_ARGUMENT
    assert raised.value.line().startswith(words)


def test_the_fields_a_body_may_hold_are_bounded() -> None:
    many = {f"p{i}": i for i in range(MAX_FIELDS)}
    assert len(read_body(orjson.dumps(many)).members) == MAX_FIELDS
    for body in (
        {**many, "one_more": 1},
        {"parameters": {f"p{i}": i for i in range(MAX_FIELDS)}},  # with its own key
    ):
        with pytest.raises(ModelyardError) as raised:
            read_body(orjson.dumps(body))
        assert raised.value.rule == "protocol/generate-fields"
        assert f"over the limit of {MAX_FIELDS}" in raised.value.detail


def _response(*outputs: OutputTensor, id: str | None = None, **parameters: Any) -> Any:
    response = InferResponse("m", "3", list(outputs), id=id, parameters=dict(parameters))
    return orjson.loads(response_body(response))


def test_a_response_is_its_outputs_by_name() -> None:
    text = np.array([[b"hello"]], dtype=object)
    doc = _response(
        OutputTensor("TEXT", "BYTES", text),
        OutputTensor("LOGITS", "FP32", np.array([[0.5, 1.5]], dtype=np.float32)),
        OutputTensor("EMPTY", "BYTES", np.array([])),
        id="42",
        finish="stop",
    )
    assert doc == {"EMPTY": [], "LOGITS": [0.5, 1.5], "TEXT": "hello", "finish": "stop",
                   "id": "42", "model_name": "m", "model_version": "3"}  # fmt: skip
    assert "id" not in _response(id="")


def test_bytes_that_are_not_utf8_have_no_json_form() -> None:
    with pytest.raises(ModelyardError) as raised:
        _response(OutputTensor("TEXT", "BYTES", np.array([b"\xff"], dtype=object)))
    assert raised.value.rule == "protocol/json-output"


def test_an_event_is_one_data_line_and_an_error_event_keeps_the_message_whole() -> None:
    assert event(b'{"a":1}') == b'data: {"a":1}\n\n'
    error = EngineError("An Error Occurred", code=Code.INTERNAL, rule="engine/python",
                        where="model.py")  # fmt: skip
    chunk = error_event(error)
    assert chunk.startswith(b"data: ") and chunk.endswith(b"\n\n") and chunk.count(b"\n") == 2
    doc = orjson.loads(chunk[len(b"data: ") :])
    assert doc == {"error": "An Error Occurred", "error_line": error.line()}


FLOATS: list[dict[str, Any]] = [{"name": "x", "datatype": "FP32", "shape": [-1]}]


def test_a_flat_number_array_is_read_as_one_buffer_with_triton_s_checks() -> None:
    """Numbers of the input's type: as read value by value; anything else falls back to
    that reading, and keeps its words."""
    assert _read('{"input_ids": [1, 2, 3]}').inputs["input_ids"].tolist() == [[1, 2, 3]]
    assert _read('{"x": [1, 2.5]}', FLOATS).inputs["x"].tolist() == [1.0, 2.5]
    assert "out of the range of INT32" in _refusal('{"input_ids": [1, 3000000000]}').line()
    assert "non-signed-integer" in _refusal('{"input_ids": [1, 2.5]}').line()
    nested = _refusal('{"input_ids": [[1, 2], [3, 4]]}').line()
    assert "Shape does not match true shape" in nested


def test_a_large_body_takes_its_numbers_as_flat_arrays_of_their_type() -> None:
    """A body over SLOW_BODY_BYTES is never read value by value (millions of Python objects
    on the event loop): its number inputs are read as one buffer, or refused."""
    count = (SLOW_BODY_BYTES // 2) + 10
    many = "[" + ",".join(["7"] * count) + "]"
    read = _read('{"input_ids": ' + many + "}").inputs["input_ids"]
    assert read.shape == (1, count) and read.dtype == np.int32 and int(read.sum()) == 7 * count
    mixed = "[" + ",".join(["7"] * count) + ', "x"]'
    line = _refusal('{"input_ids": ' + mixed + "}").line()
    assert f"in a body of more than {SLOW_BODY_BYTES} bytes must be a flat array" in line
    assert "rule=protocol/generate-fields" in line


def test_floats_that_are_not_finite_are_written_as_triton_writes_them() -> None:
    """NaN, Infinity, -Infinity (Triton's JSON writer), not orjson's null."""
    response = InferResponse(
        "m",
        "3",
        [
            OutputTensor("ONE", "FP32", np.array([np.nan], dtype=np.float32)),
            OutputTensor("MANY", "FP64", np.array([np.inf, -np.inf, 2.0])),
        ],
    )
    body = response_body(response)
    assert b'"MANY":[Infinity,-Infinity,2.0],"ONE":NaN' in body
    assert str(json.loads(body)["MANY"]) == "[inf, -inf, 2.0]"
