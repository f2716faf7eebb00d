"""Every V2 data type through the HTTP codec, as JSON and as binary tensors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from modelyard.errors import ProtocolError
from modelyard.protocol.v2_http import decode_infer_request, encode_infer_response
from modelyard.types import V2_TO_NUMPY, InferResponse, OutputTensor

SAMPLES: dict[str, list[object]] = {
    "BOOL": [True, False, True, True],
    "UINT8": [0, 1, 200, 255],
    "UINT16": [0, 1, 60000, 65535],
    "UINT32": [0, 1, 4_000_000_000, 7],
    "UINT64": [0, 1, 2**63, 9],
    "INT8": [-128, -1, 0, 127],
    "INT16": [-32768, -1, 0, 32767],
    "INT32": [-(2**31), -1, 0, 2**31 - 1],
    "INT64": [-(2**63), -1, 0, 2**63 - 1],
    "FP16": [0.5, -1.5, 2.0, 65504.0],
    "FP32": [0.25, -1.5, 3.0e38, 1e-3],
    "FP64": [0.1, -2.5, 1e300, -1e-300],
    "BF16": [1.0, -2.0, 0.5, 256.0],  # exactly representable in bfloat16
    "BYTES": ["a", "größe", "", "日本"],
}


def _json_request(datatype: str) -> bytes:
    return json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": [2, 2], "datatype": datatype, "data": SAMPLES[datatype]}
            ]
        }
    ).encode()


@pytest.mark.parametrize("datatype", list(V2_TO_NUMPY))
def test_json_and_binary_round_trip(datatype: str) -> None:
    request = decode_infer_request(_json_request(datatype), None, "m", None)
    array = request.inputs["x"]
    assert array.shape == (2, 2)
    assert request.input_datatypes["x"] == datatype
    response = InferResponse("m", "1", [OutputTensor("y", datatype, array, binary=True)])
    body, header_length = encode_infer_response(response)
    assert header_length is not None
    header = json.loads(body[:header_length])
    size = header["outputs"][0]["parameters"]["binary_data_size"]
    binary_request = json.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "shape": [2, 2],
                    "datatype": datatype,
                    "parameters": {"binary_data_size": size},
                }
            ]
        }
    ).encode()
    again = decode_infer_request(
        binary_request + body[header_length:], len(binary_request), "m", None
    )
    if datatype == "BYTES":
        expected = [s.encode() for s in SAMPLES["BYTES"]]
        assert list(again.inputs["x"].ravel()) == expected
    else:
        np.testing.assert_array_equal(again.inputs["x"], array)
        np.testing.assert_array_equal(
            array.ravel(), np.asarray(SAMPLES[datatype]).astype(array.dtype)
        )
    as_json, none = encode_infer_response(
        InferResponse("m", "1", [OutputTensor("y", datatype, array, binary=False)])
    )
    assert none is None
    data = json.loads(as_json)["outputs"][0]["data"]
    assert len(data) == 4


@pytest.mark.parametrize(
    ("datatype", "values"),
    [
        ("INT8", [1000, 0, 0, 0]),
        ("UINT8", [-1, 0, 0, 0]),
        ("BOOL", [1, 0, 0, 0]),
        ("INT32", ["1", 0, 0, 0]),
        ("BYTES", [1, 2, 3, 4]),
    ],
)
def test_values_that_do_not_fit_the_datatype_are_refused(
    datatype: str, values: list[object]
) -> None:
    body = json.dumps(
        {"inputs": [{"name": "x", "shape": [2, 2], "datatype": datatype, "data": values}]}
    ).encode()
    with pytest.raises(ProtocolError) as refused:
        decode_infer_request(body, None, "m", None)
    assert "input 'x'" in refused.value.line()


NOT_FINITE = [float("nan"), float("inf"), float("-inf"), 1.0]


@pytest.mark.parametrize("datatype", ["FP16", "FP32", "FP64"])
def test_floats_that_are_not_finite_are_written_as_triton_writes_them(datatype: str) -> None:
    """Triton's JSON writer (rapidjson with kWriteNanAndInfFlag) writes NaN, Infinity and
    -Infinity, which Python's json reads back (Triton's qa/L0_nan_inf); orjson alone would
    write null, a value lost."""
    array = np.array(NOT_FINITE, dtype=V2_TO_NUMPY[datatype])
    body, _ = encode_infer_response(
        InferResponse("m", "1", [OutputTensor("y", datatype, array, binary=False)])
    )
    assert b'"data":[NaN,Infinity,-Infinity,1.0]' in body
    data = json.loads(body)["outputs"][0]["data"]
    np.testing.assert_array_equal(np.array(data, dtype=array.dtype), array)


def test_a_fixed_json_reply_writes_floats_that_are_not_finite_as_triton() -> None:
    from modelyard.protocol.v2_http import JsonReply

    reply = JsonReply.make(
        "m", "1", None, (("y", "FP32", np.dtype(np.float32), (4,), False, True),)
    )
    assert reply is not None
    answered = reply.answer({"y": np.array(NOT_FINITE, dtype=np.float32)}, None)
    assert answered is not None
    assert b'"data":[NaN,Infinity,-Infinity,1.0]' in answered[0]
    data = json.loads(answered[0])["outputs"][0]["data"]
    assert str(data) == "[nan, inf, -inf, 1.0]"
