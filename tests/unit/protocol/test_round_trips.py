"""Both directions of each codec: what a client encodes, the server decodes, and back.

Every V2 datatype, over HTTP and gRPC, with outputs as binary data and as JSON data
(HTTP) or typed contents (gRPC).
"""

from __future__ import annotations

import numpy as np
import pytest

from modelyard.protocol import v2_grpc, v2_http
from modelyard.types import InferRequest, InferResponse, OutputTensor, RequestedOutput
from tests.support.datatypes import EVERY

ARRAYS = EVERY


def request_of(datatype: str, binary_output: bool) -> InferRequest:
    return InferRequest(
        model_name="m",
        model_version="2",
        inputs={"x": ARRAYS[datatype]},
        input_datatypes={"x": datatype},
        outputs=[RequestedOutput("y", binary_output)],
        id="call-9",
        parameters={"priority": 1},
        binary_output_default=binary_output,
        priority=1,
        timeout_us=2500,
    )


def response_of(datatype: str, binary: bool) -> InferResponse:
    output = OutputTensor("y", datatype, ARRAYS[datatype], binary)
    return InferResponse("m", "2", [output], id="call-9", parameters={"degraded": True})


def assert_same_request(decoded: InferRequest, sent: InferRequest) -> None:
    assert (decoded.model_name, decoded.id) == ("m", "call-9")
    assert decoded.input_datatypes == sent.input_datatypes
    assert (decoded.priority, decoded.timeout_us) == (1, 2500)
    np.testing.assert_array_equal(decoded.inputs["x"], sent.inputs["x"])
    assert decoded.inputs["x"].dtype == sent.inputs["x"].dtype
    assert decoded.outputs is not None and [o.name for o in decoded.outputs] == ["y"]


def assert_same_response(decoded: InferResponse, sent: InferResponse, binary: bool) -> None:
    assert (decoded.model_name, decoded.model_version, decoded.id) == ("m", "2", "call-9")
    assert decoded.parameters == {"degraded": True}
    [out] = decoded.outputs
    expected = sent.outputs[0]
    assert (out.name, out.datatype, out.binary) == ("y", expected.datatype, binary)
    np.testing.assert_array_equal(out.data, expected.data)
    assert out.data.dtype == expected.data.dtype


@pytest.mark.parametrize("datatype", sorted(ARRAYS))
def test_http_requests_and_responses_round_trip(datatype: str) -> None:
    sent = request_of(datatype, binary_output=True)
    body, header_length = v2_http.encode_infer_request(sent)
    assert_same_request(v2_http.decode_infer_request(body, header_length, "m", "2"), sent)
    for binary in (True, False):  # binary data, then JSON data
        answer = response_of(datatype, binary)
        payload, json_length = v2_http.encode_infer_response(answer)
        assert (json_length is not None) == binary
        decoded = v2_http.decode_infer_response(payload, json_length, request_of(datatype, binary))
        assert_same_response(decoded, answer, binary)


@pytest.mark.parametrize("datatype", sorted(ARRAYS))
def test_grpc_requests_and_responses_round_trip(datatype: str) -> None:
    sent = request_of(datatype, binary_output=True)
    assert_same_request(v2_grpc.decode_infer_request(v2_grpc.encode_infer_request(sent)), sent)
    for binary in (True, False):  # raw contents, then typed contents where the type has them
        answer = response_of(datatype, binary)
        message = v2_grpc.encode_infer_response(answer)
        typed = not binary and datatype in v2_grpc.TYPED_CONTENTS
        assert (not message.raw_output_contents) == typed
        decoded = v2_grpc.decode_infer_response(message, request_of(datatype, binary))
        assert_same_response(decoded, answer, binary)
