"""Requests the fuzzer found answered 500 (or held a model): each is a 400 with its rule."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from tritonclient.grpc import service_pb2 as pb

from modelyard.errors import Code, ModelServerError, ProtocolError, shown, without_paths
from modelyard.frontdoors import http, http_routes
from modelyard.protocol import v2_grpc, v2_http
from modelyard.protocol.tensors import MAX_DIMS


def _doc(**changes: Any) -> dict[str, Any]:
    item = {"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [1.0, 2.0, 3.0, 4.0]}
    doc: dict[str, Any] = {"inputs": [item]}
    for key, value in changes.items():
        if key in item:
            item[key] = value
        else:
            doc[key] = value
    return doc


def _refusal(doc: Any) -> ProtocolError:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with pytest.raises(ProtocolError) as info:
        v2_http.decode_infer_request(body, None, "m", None)
    assert info.value.code is Code.INVALID_ARGUMENT
    return info.value


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        (_doc(datatype=[]), "unknown datatype []"),
        (_doc(datatype={"a": 1}), "unknown datatype"),
        (_doc(outputs=[{"name": "label", "parameters": [1]}]), "'parameters' must be an object"),
        (_doc(outputs=[{"name": "p", "parameters": {"classification": True}}]), "classification"),
        (_doc(outputs=[{"name": "p", "parameters": {"binary_data": "no"}}]), "binary_data"),
        (_doc(outputs=[{"name": "p"}, {"name": "p"}]), "output 'p' is requested twice"),
        (_doc(parameters={"timeout": True}), "'timeout' and 'priority'"),
        (_doc(parameters={"priority": -1}), "'timeout' and 'priority'"),
        (_doc(parameters={"binary_data_output": "1"}), "binary_data_output"),
        (_doc(data=[1e39, 0.0, 0.0, 0.0]), "out of the range of FP32"),
        (_doc(datatype="FP16", data=[70000.0, 0.0, 0.0, 0.0]), "out of the range of FP16"),
        (_doc(data=[0.0, -1e39, 0.0, 0.0]), "out of the range of FP32"),
    ],
)
def test_wrong_types_and_values_are_400s(doc: dict[str, Any], says: str) -> None:
    assert says in _refusal(doc).detail


@pytest.mark.parametrize(
    "shape", [[0, 4611686018427387904], [4611686018427387904, 0], [2**32, 2**32, 0]]
)
def test_shapes_no_array_can_have_are_400s_json_or_binary(shape: list[int]) -> None:
    error = _refusal(_doc(shape=shape))
    assert error.rule == "protocol/tensor-shape"
    header = json.dumps(
        {"inputs": [{"name": "x", "datatype": "FP32", "shape": shape,
                     "parameters": {"binary_data_size": 0}}]}
    ).encode()  # fmt: skip
    with pytest.raises(ProtocolError) as info:
        v2_http.decode_infer_request(header, len(header), "m", None)
    assert info.value.rule == "protocol/tensor-shape"


def test_more_dims_than_numpy_allows_are_400s() -> None:
    accepted = v2_http.decode_infer_request(
        json.dumps(_doc(shape=[1] * MAX_DIMS, data=[1.0])).encode(), None, "m", None
    )
    assert accepted.inputs["input"].ndim == MAX_DIMS
    error = _refusal(_doc(shape=[1] * (MAX_DIMS + 1), data=[1.0]))
    assert error.rule == "protocol/tensor-shape" and "33 dims" in error.detail


def test_one_output_asked_for_20000_times_is_refused_before_anything_runs() -> None:
    doc = _doc(outputs=[{"name": "probabilities"}] * 20_000)
    started = time.perf_counter()
    assert "requested twice" in _refusal(doc).detail
    assert time.perf_counter() - started < 0.5


def test_a_binary_data_size_that_is_a_bool_is_refused() -> None:
    header = json.dumps(
        {"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1],
                     "parameters": {"binary_data_size": True}}]}
    ).encode()  # fmt: skip
    with pytest.raises(ProtocolError, match="binary_data_size True"):
        v2_http.decode_infer_request(header + b"\x01", len(header), "m", None)


def test_names_are_echoed_cut_short() -> None:
    error = _refusal(_doc(name="n" * 100_000, datatype="FP33"))
    assert len(error.line()) < 1_000
    assert "… (100000 characters)" in error.detail


def test_a_header_length_of_4301_digits_is_a_400() -> None:
    with pytest.raises(ProtocolError) as info:
        http._infer_headers([(b"inference-header-content-length", b"9" * 4301)])
    assert info.value.code is Code.INVALID_ARGUMENT
    assert info.value.rule == "protocol/binary-header"
    assert http._infer_headers([(b"inference-header-content-length", b"12")])[0] == 12


def test_a_route_error_echoes_a_long_path_cut_short() -> None:
    line = http_routes.route_error("GET", "/v2/" + "x" * 100_000).line()
    assert len(line) < 1_000 and "rule=protocol/route" in line


# ---- gRPC -------------------------------------------------------------------------------------


def _grpc_refusal(request: pb.ModelInferRequest) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        v2_grpc.decode_infer_request(request)
    assert info.value.code is Code.INVALID_ARGUMENT
    return info.value


def _grpc(shape: list[int], raw: bytes = b"") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="m")
    request.inputs.add(name="x", datatype="FP32", shape=shape)
    request.raw_input_contents.append(raw)
    return request


def test_grpc_shapes_no_array_can_have_and_too_many_dims_are_invalid_arguments() -> None:
    assert _grpc_refusal(_grpc([0, 4611686018427387904])).rule == "protocol/tensor-shape"
    assert _grpc_refusal(_grpc([1] * 33, b"\x00" * 4)).rule == "protocol/tensor-shape"


def test_grpc_duplicate_outputs_and_wrongly_typed_output_parameters_are_refused() -> None:
    request = _grpc([1], b"\x00" * 4)
    for _ in range(20_000):
        request.outputs.add(name="y")
    assert "requested twice" in _grpc_refusal(request).detail

    for key, set_value in [
        ("classification", lambda p: setattr(p, "bool_param", True)),
        ("binary_data", lambda p: setattr(p, "string_param", "no")),
    ]:
        request = _grpc([1], b"\x00" * 4)
        set_value(request.outputs.add(name="y").parameters[key])
        assert key in _grpc_refusal(request).detail


# ---- error lines ------------------------------------------------------------------------------


def test_an_error_line_bounds_its_detail_and_names() -> None:
    assert shown("abc") == "abc"
    assert shown("a" * 201).endswith("… (201 characters)")
    line = ModelServerError("x" * 10_000, code=Code.NOT_FOUND, rule="r/x", where="w").line()
    assert len(line) < 2_100 and line.endswith("; rule=r/x; change: w")


def test_engine_messages_lose_their_build_paths_and_keep_node_names() -> None:
    message = (
        "[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Add node. "
        "Name:'/model/encoder/layer.0/attention/self/Add' Status Message: "
        "/onnxruntime_src/onnxruntime/core/providers/cpu/math/element_wise_ops.h:563 void "
        "onnxruntime::BroadcastIterator::Init(ptrdiff_t, ptrdiff_t) axis == 1 || axis == largest "
        "was false. Attempting to broadcast an axis by a dimension other than 1. 3 by 5"
    )
    clean = without_paths(message)
    assert "/onnxruntime_src" not in clean and "element_wise_ops.h" not in clean
    assert "Name:'/model/encoder/layer.0/attention/self/Add'" in clean
    assert clean.endswith("other than 1. 3 by 5")
    assert clean.count("…") == 1
