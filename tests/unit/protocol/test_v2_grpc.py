"""The gRPC codec and error mapping, without a server."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2 as pb

from modelyard.errors import Code, ModelServerError, ProtocolError
from modelyard.frontdoors.grpc import status_code, trailing_metadata
from modelyard.protocol.status import STATUS
from modelyard.protocol.v2_grpc import (
    TYPED_CONTENTS,
    decode_infer_request,
    encode_infer_response,
)
from modelyard.types import InferResponse, OutputTensor
from tests.support.datatypes import NUMERIC


def client_request(arrays: dict[str, tuple[str, np.ndarray]]) -> pb.ModelInferRequest:
    """The message tritonclient.grpc sends for these inputs (raw contents)."""
    request = pb.ModelInferRequest(model_name="m", id="r1")
    for name, (datatype, array) in arrays.items():
        item = grpcclient.InferInput(name, list(array.shape), datatype)
        item.set_data_from_numpy(array)
        request.inputs.append(item._get_tensor())
        request.raw_input_contents.append(item._get_content())
    return request


def test_raw_inputs_of_every_datatype_decode_to_the_arrays_sent() -> None:
    text = np.array([[b"a", b"", "größe".encode()]], dtype=object)
    sent = {f"in_{dt}": (dt, array) for dt, array in NUMERIC.items()}
    sent["in_BYTES"] = ("BYTES", text)
    request = decode_infer_request(client_request(sent))
    assert request.id == "r1" and request.model_version is None
    for name, (datatype, array) in sent.items():
        assert request.input_datatypes[name] == datatype
        np.testing.assert_array_equal(request.inputs[name], array)
        assert request.inputs[name].dtype == array.dtype


def test_bf16_travels_as_the_top_half_of_fp32() -> None:
    values = np.array([[1.0, -2.5, 3.140625]], dtype=np.float32)  # exact in BF16
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="x", datatype="BF16", shape=[1, 3])
    request.raw_input_contents.append((values.view(np.uint32) >> 16).astype("<u2").tobytes())
    decoded = decode_infer_request(request).inputs["x"]
    np.testing.assert_array_equal(decoded, values)
    response = encode_infer_response(
        InferResponse("m", "1", [OutputTensor("y", "BF16", decoded, binary=True)])
    )
    np.testing.assert_array_equal(grpcclient.InferResult(response).as_numpy("y"), values)


@pytest.mark.parametrize("datatype", [dt for dt in NUMERIC if dt != "FP16"])
def test_typed_contents_decode_like_raw_ones(datatype: str) -> None:
    array = NUMERIC[datatype]
    request = pb.ModelInferRequest(model_name="m")
    tensor = request.inputs.add(name="x", datatype=datatype, shape=list(array.shape))
    getattr(tensor.contents, TYPED_CONTENTS[datatype]).extend(array.ravel().tolist())
    decoded = decode_infer_request(request).inputs["x"]
    np.testing.assert_array_equal(decoded, array)
    assert decoded.dtype == array.dtype


def _invalid(request: pb.ModelInferRequest) -> str:
    with pytest.raises(ProtocolError) as bad:
        decode_infer_request(request)
    assert bad.value.code is Code.INVALID_ARGUMENT
    return bad.value.detail


def test_malformed_messages_are_invalid_arguments() -> None:
    request = pb.ModelInferRequest(model_name="m")
    tensor = request.inputs.add(name="x", datatype="INT8", shape=[2])
    tensor.contents.int_contents.extend([1, 300])
    assert _invalid(request) == "input 'x': data is not valid INT8"

    request.raw_input_contents.append(b"\x01\x02")
    assert "has both contents and raw_input_contents" in _invalid(request)

    request.raw_input_contents.append(b"")
    assert _invalid(request).startswith("2 raw_input_contents for 1 inputs")

    fp16 = pb.ModelInferRequest(model_name="m")
    fp16.inputs.add(name="h", datatype="FP16", shape=[1]).contents.fp32_contents.append(1.0)
    assert _invalid(fp16) == "input 'h': FP16 data must be sent in raw_input_contents"

    truncated = client_request({"s": ("BYTES", np.array([b"abcd"], dtype=object))})
    truncated.raw_input_contents[0] = truncated.raw_input_contents[0][:-1]
    assert "runs past the 7 bytes of data" in _invalid(truncated)


def test_outputs_are_raw_unless_every_output_asks_for_typed_contents() -> None:
    label = np.array([[3], [1]], dtype=np.int64)
    text = np.array([b"x", b"yz"], dtype=object)
    outputs = [OutputTensor("label", "INT64", label, True), OutputTensor("t", "BYTES", text, True)]
    raw = encode_infer_response(InferResponse("m", "2", outputs, id="q"))
    assert raw.id == "q" and raw.model_version == "2" and len(raw.raw_output_contents) == 2
    result = grpcclient.InferResult(raw)
    np.testing.assert_array_equal(result.as_numpy("label"), label)
    np.testing.assert_array_equal(result.as_numpy("t"), text)

    for tensor in outputs:
        tensor.binary = False
    typed = encode_infer_response(InferResponse("m", "2", outputs))
    assert not typed.raw_output_contents and not typed.id
    assert list(typed.outputs[0].contents.int64_contents) == [3, 1]
    assert list(typed.outputs[0].shape) == [2, 1]
    assert list(typed.outputs[1].contents.bytes_contents) == [b"x", b"yz"]


def test_requested_output_parameters_are_read() -> None:
    request = client_request({"x": ("FP32", NUMERIC["FP32"])})
    request.outputs.append(grpcclient.InferRequestedOutput("y", class_count=2)._get_tensor())
    plain = request.outputs.add(name="z")
    plain.parameters["binary_data"].bool_param = False
    request.parameters["timeout"].int64_param = 5000
    decoded = decode_infer_request(request)
    assert decoded.outputs is not None
    assert [(o.name, o.binary, o.classification) for o in decoded.outputs] == [
        ("y", None, 2),
        ("z", False, 0),
    ]
    assert decoded.timeout_us == 5000 and decoded.binary_output_default


@pytest.mark.parametrize("code", list(Code))
def test_every_code_maps_to_the_grpc_status_of_the_one_table(code: Code) -> None:
    error = ModelServerError("x", code=code)
    assert status_code(error) is getattr(grpc.StatusCode, STATUS[code][1])


def test_retry_after_goes_in_trailing_metadata_for_retryable_statuses_only() -> None:
    def error(code: Code, retry_after: Any) -> ModelServerError:
        return ModelServerError("x", code=code, retry_after=retry_after)

    assert trailing_metadata(error(Code.UNAVAILABLE, 0.05)) == (("retry-after", "1"),)
    assert trailing_metadata(error(Code.RESOURCE_EXHAUSTED, 2.6)) == (("retry-after", "3"),)
    assert trailing_metadata(error(Code.UNAVAILABLE, None)) == ()
    assert trailing_metadata(error(Code.INVALID_ARGUMENT, 1.0)) == ()
