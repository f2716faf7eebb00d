"""The KServe V2 API over HTTP and gRPC, through the real tritonclient, against a real server.

Each test that both protocols share runs once per protocol through ``V2``, a thin
adapter over ``tritonclient.http`` and ``tritonclient.grpc`` that answers in the
shapes HTTP's JSON has. Raw-HTTP and raw-gRPC cases follow, then the parity of
the two protocols: the same bits out, the same error line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc
from tritonclient.utils import InferenceServerException

from modelyard.engines import LoadContext, engine_class
from modelyard.examples.build import MODEL_NAMES, example_inputs
from modelyard.modelfiles.config import parse_json_config
from tests.integration.conftest import MAX_BODY_BYTES, MAX_MESSAGE_BYTES
from tests.support.servers import ServerProcess

# HTTP status -> the gRPC status of the same error class
GRPC_STATUS = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}

# V2 datatype -> InferTensorContents field
CONTENTS = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def typed_request(
    model: str,
    version: str,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]] | None = None,
    request_id: str = "",
) -> pb.ModelInferRequest:
    """A ModelInferRequest with typed ``contents``, from the inputs of a V2 JSON body."""
    request = pb.ModelInferRequest(model_name=model, model_version=version, id=request_id)
    for item in inputs:
        tensor = request.inputs.add(
            name=item["name"], datatype=item["datatype"], shape=item["shape"]
        )
        values = np.asarray(item["data"], dtype=object).ravel().tolist()
        if values and isinstance(values[0], str):
            tensor.contents.bytes_contents.extend(v.encode("utf-8") for v in values)
        else:
            getattr(tensor.contents, CONTENTS.get(item["datatype"], "fp32_contents")).extend(values)
    for output in outputs or []:
        requested = request.outputs.add(name=output["name"])
        for key, value in (output.get("parameters") or {}).items():
            requested.parameters[key].bool_param = value
    return request


class V2:
    """tritonclient.http or tritonclient.grpc behind the calls these tests make."""

    def __init__(self, protocol: str, server: ServerProcess) -> None:
        self.protocol = protocol
        self.grpc = protocol == "grpc"
        if self.grpc:
            self.client: Any = grpcclient.InferenceServerClient(server.grpc_url)
            self.channel = grpc.insecure_channel(server.grpc_url)
            self.stub = service_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        else:
            self.client = httpclient.InferenceServerClient(server.http_url)

    def close(self) -> None:
        self.client.close()
        if self.grpc:
            self.channel.close()

    def status(self, http_status: int) -> str:
        """What InferenceServerException.status() says for this HTTP status's error class."""
        return str(GRPC_STATUS[http_status]) if self.grpc else str(http_status)

    def server_metadata(self) -> dict[str, Any]:
        if self.grpc:
            return self.client.get_server_metadata(as_json=True)  # type: ignore[no-any-return]
        return self.client.get_server_metadata()  # type: ignore[no-any-return]

    def metadata(self, model: str, version: str = "") -> dict[str, Any]:
        if not self.grpc:
            return self.client.get_model_metadata(model, version)  # type: ignore[no-any-return]
        doc: dict[str, Any] = self.client.get_model_metadata(model, version, as_json=True)
        for tensor in doc["inputs"] + doc["outputs"]:
            tensor["shape"] = [int(d) for d in tensor["shape"]]  # int64 comes as strings
        return doc

    def config(self, model: str) -> dict[str, Any]:
        if self.grpc:
            return self.client.get_model_config(model, as_json=True)["config"]  # type: ignore[no-any-return]
        return self.client.get_model_config(model)  # type: ignore[no-any-return]

    def counts(self, model: str) -> dict[str, int]:
        """Rows inferred and successful requests (gRPC's JSON drops zeros, int64 as strings)."""
        kwargs = {"as_json": True} if self.grpc else {}
        stats = self.client.get_inference_statistics(model, **kwargs)["model_stats"][0]
        return {
            "inference_count": int(stats.get("inference_count", 0)),
            "success": int(stats["inference_stats"]["success"].get("count", 0)),
        }

    def output(self, name: str, class_count: int = 0, binary: bool = True) -> Any:
        if self.grpc:
            return grpcclient.InferRequestedOutput(name, class_count=class_count)
        return httpclient.InferRequestedOutput(name, binary_data=binary, class_count=class_count)

    def infer(
        self,
        model: str,
        inputs: dict[str, np.ndarray],
        *,
        binary: bool = True,
        version: str = "",
        outputs: list[Any] | None = None,
        request_id: str = "",
    ) -> Any:
        """binary=False: JSON tensors over HTTP, typed ``contents`` over gRPC."""
        metadata = self.metadata(model, version)
        datatypes = {i["name"]: i["datatype"] for i in metadata["inputs"]}
        if outputs is None:
            outputs = [self.output(o["name"], binary=binary) for o in metadata["outputs"]]
        if self.grpc and not binary:
            items = [
                {"name": n, "datatype": datatypes[n], "shape": list(a.shape), "data": a.tolist()}
                for n, a in inputs.items()
            ]
            request = typed_request(model, version, items, request_id=request_id)
            # the protobuf message tritonclient builds for each requested output
            request.outputs.extend(o._get_tensor() for o in outputs)
            return grpcclient.InferResult(self.stub.ModelInfer(request))
        module = grpcclient if self.grpc else httpclient
        wire = []
        for name, array in inputs.items():
            item = module.InferInput(name, list(array.shape), datatypes[name])
            if self.grpc:
                item.set_data_from_numpy(array)
            else:
                item.set_data_from_numpy(array, binary_data=binary)
            wire.append(item)
        return self.client.infer(
            model, wire, model_version=version, outputs=outputs, request_id=request_id
        )

    def response(self, result: Any) -> dict[str, Any]:
        if self.grpc:
            return result.get_response(as_json=True)  # type: ignore[no-any-return]
        return result.get_response()  # type: ignore[no-any-return]


@pytest.fixture(scope="module", params=["http", "grpc"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def api(protocol: str, server: ServerProcess) -> Iterator[V2]:
    client = V2(protocol, server)
    yield client
    client.close()


@pytest.fixture(scope="module")
def stub(server: ServerProcess) -> Iterator[service_pb2_grpc.GRPCInferenceServiceStub]:
    with grpc.insecure_channel(
        server.grpc_url, options=[("grpc.max_send_message_length", -1)]
    ) as channel:
        yield service_pb2_grpc.GRPCInferenceServiceStub(channel)


def direct_engine_outputs(
    repository: Path, config_json: dict[str, Any], version: str, inputs: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    config = parse_json_config(config_json)
    cls = engine_class(config.backend)
    version_dir = repository / config.name / version
    artifact = next(version_dir / f for f in cls.default_filenames if (version_dir / f).exists())
    engine = cls()
    engine.load(LoadContext(artifact=artifact, version_dir=version_dir, config=config))
    try:
        return engine.execute(inputs, [o.name for o in config.output])
    finally:
        engine.unload()


# ---- both protocols ------------------------------------------------------


def test_health_and_server_metadata(api: V2) -> None:
    assert api.client.is_server_live()
    assert api.client.is_server_ready()
    metadata = api.server_metadata()
    assert metadata["name"] == "modelyard"
    for extension in ("binary_tensor_data", "classification", "model_repository", "statistics"):
        assert extension in metadata["extensions"]


@pytest.mark.parametrize("model", MODEL_NAMES)
@pytest.mark.parametrize("rows", [1, 4])
def test_served_outputs_equal_the_engine_called_directly(
    api: V2, example_repository: Path, model: str, rows: int
) -> None:
    inputs = example_inputs(model, rows)
    served = api.infer(model, inputs)
    version = api.response(served)["model_version"]
    expected = direct_engine_outputs(example_repository, api.config(model), version, inputs)
    for name, array in expected.items():
        got = served.as_numpy(name)
        assert got.shape[0] == rows
        np.testing.assert_allclose(got.reshape(array.shape), array, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model", ["digits_onnx", "iris_sklearn", "breast_cancer_torch"])
def test_typed_and_binary_tensors_give_identical_outputs(api: V2, model: str) -> None:
    inputs = example_inputs(model, 5)
    typed = api.infer(model, inputs, binary=False)
    binary = api.infer(model, inputs, binary=True)
    for output in api.response(binary)["outputs"]:
        np.testing.assert_array_equal(
            typed.as_numpy(output["name"]), binary.as_numpy(output["name"])
        )


def test_both_versions_serve_and_unversioned_goes_to_the_highest(api: V2) -> None:
    assert api.metadata("digits_onnx")["versions"] == ["1", "2"]
    inputs = example_inputs("digits_onnx", 3)
    assert api.response(api.infer("digits_onnx", inputs))["model_version"] == "2"
    v1 = api.infer("digits_onnx", inputs, version="1")
    v2 = api.infer("digits_onnx", inputs, version="2")
    assert api.response(v1)["model_version"] == "1"
    assert not np.array_equal(v1.as_numpy("probabilities"), v2.as_numpy("probabilities"))
    assert api.client.is_model_ready("digits_onnx", "1")
    assert not api.client.is_model_ready("digits_onnx", "9")


@pytest.mark.parametrize("binary", [False, True])
def test_bytes_tensors_round_trip(api: V2, binary: bool) -> None:
    text = np.array([["abc", "größe"], ["", "x y"]], dtype=object)
    result = api.infer("bytes_echo", {"text": text}, binary=binary)
    upper = result.as_numpy("upper")
    assert [[v.decode() if isinstance(v, bytes) else v for v in row] for row in upper] == [
        ["ABC", "GRößE"],  # the model upper-cases bytes: only ASCII changes
        ["", "X Y"],
    ]
    assert result.as_numpy("length").tolist() == [[3, 7], [0, 3]]  # UTF-8 byte lengths


def test_classification_extension_with_labels(api: V2) -> None:
    inputs = example_inputs("digits_onnx", 2)
    plain = api.infer("digits_onnx", inputs).as_numpy("probabilities")
    result = api.infer("digits_onnx", inputs, outputs=[api.output("probabilities", class_count=3)])
    classes = result.as_numpy("probabilities")
    assert classes.shape == (2, 3)
    labels = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    for row, probabilities in zip(classes, plain, strict=True):
        value, index, label = row[0].decode().split(":")
        assert int(index) == int(np.argmax(probabilities))
        assert label == labels[int(index)]
        assert float(value) == pytest.approx(float(probabilities.max()), abs=1e-6)


def test_request_id_is_echoed_and_requested_outputs_are_honoured(api: V2) -> None:
    result = api.infer(
        "digits_onnx",
        example_inputs("digits_onnx", 1),
        outputs=[api.output("label")],
        request_id="req-42",
    )
    response = api.response(result)
    assert response["id"] == "req-42"
    assert [o["name"] for o in response["outputs"]] == ["label"]


def test_statistics_count_requests(api: V2) -> None:
    before = api.counts("tiny_onnx")
    api.infer("tiny_onnx", example_inputs("tiny_onnx", 3))
    after = api.counts("tiny_onnx")
    assert after["inference_count"] - before["inference_count"] == 3
    assert after["success"] - before["success"] == 1


def test_autocompleted_config_matches_the_onnx_graph(api: V2) -> None:
    config = api.config("tiny_onnx")
    assert config["platform"] == "onnxruntime_onnx"
    assert config["max_batch_size"] == 4
    assert "dynamic_batching" in config
    dims = ["4"] if api.grpc else [4]  # tritonclient's gRPC JSON writes int64 as strings
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [
        ("input", "TYPE_FP32", dims)
    ]


def test_load_and_unload_are_503_outside_explicit_mode(api: V2) -> None:
    for action in (api.client.load_model, api.client.unload_model):
        with pytest.raises(InferenceServerException) as refused:
            action("digits_onnx")
        assert refused.value.status() == api.status(503)
        assert "--model-control-mode explicit" in refused.value.message()


# ---- bad requests, over either protocol ----------------------------------

DIGITS_ROW = [0.0] * 64
# Triton's words for binary data that is not what the shape takes
SIZE_MISMATCH = (
    "input byte size mismatch for input 'input' for model 'digits_onnx'. Expected 256, got 100"
)


def _body(**overrides: Any) -> dict[str, Any]:
    item = {"name": "input", "shape": [1, 64], "datatype": "FP32", "data": DIGITS_ROW}
    item.update(overrides)
    return {"inputs": [item]}


BAD_REQUESTS = [
    (
        "unknown model",
        "/v2/models/nope/infer",
        _body(),
        404,
        "Request for unknown model: 'nope' is not found",
    ),
    (  # Triton looks the model up before it reads the inputs: the unknown model answers
        "unknown model, malformed inputs",
        "/v2/models/nope/infer",
        _body(data=[0.0] * 63),
        404,
        "Request for unknown model: 'nope' is not found",
    ),
    (
        "unknown version",
        "/v2/models/digits_onnx/versions/7/infer",
        _body(),
        404,
        "Request for unknown model: 'digits_onnx' version 7 is not found",
    ),
    (
        "bad input name",
        "/v2/models/digits_onnx/infer",
        _body(name="pixels"),
        400,
        "unexpected inference input 'pixels' for model 'digits_onnx'",
    ),
    (
        "wrong dtype",
        "/v2/models/digits_onnx/infer",
        _body(datatype="INT32", data=[0] * 64),
        400,
        "inference input 'input' data-type is 'INT32', but model 'digits_onnx' expects 'FP32'",
    ),
    (
        "wrong shape",
        "/v2/models/digits_onnx/infer",
        _body(shape=[1, 32], data=[0.0] * 32),
        400,
        "unexpected shape for input 'input' for model 'digits_onnx'. Expected [-1,64], got [1,32]",
    ),
    (
        "data size",
        "/v2/models/digits_onnx/infer",
        _body(data=[0.0] * 63),
        400,
        "Unable to parse 'data': Shape does not match true shape of 'data' field (input "
        "'input': 63 values given for shape [1, 64])",
    ),
    (
        "batch too big",
        "/v2/models/digits_onnx/infer",
        _body(shape=[65, 64], data=[0.0] * 64 * 65),
        400,
        "inference request batch-size must be <= 64 for 'digits_onnx'",
    ),
    (
        "unknown output",
        "/v2/models/digits_onnx/infer",
        {**_body(), "outputs": [{"name": "nope"}]},
        400,
        "unexpected inference output 'nope' for model 'digits_onnx'",
    ),
    (
        "no inputs",
        "/v2/models/digits_onnx/infer",
        {"inputs": []},
        400,
        "expected 1 inputs but got 0 inputs for model 'digits_onnx'. Got input(s) [], but "
        "missing required input(s) ['input']. Please provide all required input(s).",
    ),
    (
        "unknown datatype",
        "/v2/models/digits_onnx/infer",
        _body(datatype="FP33"),
        400,
        "unknown datatype 'FP33'",
    ),
    (
        "non-numeric data",
        "/v2/models/digits_onnx/infer",
        _body(data=["a"] * 64),
        400,
        "data is not valid FP32",
    ),
]
_PATH = re.compile(r"^/v2/models/(?P<model>[^/]+)(?:/versions/(?P<version>[^/]+))?/infer$")


def send_bad(
    server: ServerProcess,
    stub: service_pb2_grpc.GRPCInferenceServiceStub,
    protocol: str,
    path: str,
    body: dict[str, Any],
) -> tuple[int | grpc.StatusCode, str]:
    """The status and error line of a V2 JSON request sent as JSON or as a typed gRPC message."""
    if protocol == "http":
        response = httpx.post(f"http://{server.http_url}{path}", json=body)
        return response.status_code, response.json()["error"]
    match = _PATH.match(path)
    assert match is not None
    request = typed_request(
        match["model"], match["version"] or "", body["inputs"], body.get("outputs")
    )
    with pytest.raises(grpc.RpcError) as failed:
        stub.ModelInfer(request)
    return failed.value.code(), failed.value.details()


@pytest.mark.parametrize(
    ("path", "body", "status", "fragment"),
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
def test_bad_requests_get_a_precise_error_line(
    server: ServerProcess,
    stub: service_pb2_grpc.GRPCInferenceServiceStub,
    protocol: str,
    path: str,
    body: dict[str, Any],
    status: int,
    fragment: str,
) -> None:
    code, line = send_bad(server, stub, protocol, path, body)
    assert code == (status if protocol == "http" else GRPC_STATUS[status])
    assert fragment in line
    assert "; rule=" in line and "; change: " in line


def test_the_server_keeps_serving_after_every_bad_request(
    server: ServerProcess, stub: service_pb2_grpc.GRPCInferenceServiceStub, api: V2
) -> None:
    for _, path, body, _, _ in BAD_REQUESTS:
        send_bad(server, stub, api.protocol, path, body)
    if api.protocol == "http":
        _raw(server, b"{{{")
    result = api.infer("digits_onnx", example_inputs("digits_onnx", 2))
    assert result.as_numpy("label").shape[0] == 2
    assert server.process.poll() is None


# ---- one protocol only ---------------------------------------------------


def _raw(
    server: ServerProcess, content: bytes, headers: dict[str, str] | None = None
) -> httpx.Response:
    return httpx.post(
        f"http://{server.http_url}/v2/models/digits_onnx/infer", content=content, headers=headers
    )


def test_malformed_json_is_400_not_500(server: ServerProcess) -> None:
    response = _raw(server, b'{"inputs": [')
    assert response.status_code == 400
    assert response.json()["error"].startswith("[protocol] malformed JSON in inference request")


def test_binary_data_of_the_wrong_size_is_400(server: ServerProcess) -> None:
    header = (
        b'{"inputs":[{"name":"input","shape":[1,64],"datatype":"FP32",'
        b'"parameters":{"binary_data_size":100}}]}'
    )
    response = _raw(
        server,
        header + b"\0" * 100,
        {"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code == 400
    line = response.json()["error"]
    assert SIZE_MISMATCH in line


def test_oversized_body_is_413(server: ServerProcess) -> None:
    response = _raw(server, b" " * (MAX_BODY_BYTES + 1))
    assert response.status_code == 413
    line = response.json()["error"]
    assert f"over the limit of {MAX_BODY_BYTES} bytes" in line
    assert "change: modelyard serve --http-max-body-bytes" in line


def _raw_request(shape: list[int], raw: bytes) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="digits_onnx")
    request.inputs.add(name="input", datatype="FP32", shape=shape)
    request.raw_input_contents.append(raw)
    return request


def test_raw_contents_of_the_wrong_size_are_invalid_argument(
    stub: service_pb2_grpc.GRPCInferenceServiceStub,
) -> None:
    with pytest.raises(grpc.RpcError) as failed:
        stub.ModelInfer(_raw_request([1, 64], b"\0" * 100))
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert SIZE_MISMATCH in failed.value.details()


def test_message_over_the_limit_is_resource_exhausted_and_large_raw_tensors_fit(
    server: ServerProcess, stub: service_pb2_grpc.GRPCInferenceServiceStub
) -> None:
    rows = MAX_MESSAGE_BYTES // 256 + 1
    with pytest.raises(grpc.RpcError) as failed:
        stub.ModelInfer(_raw_request([rows, 64], b"\0" * 256 * rows))
    assert failed.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    big = np.array([[b"a" * (MAX_MESSAGE_BYTES * 8 // 10)]], dtype=object)
    api = V2("grpc", server)
    try:
        result = api.infer("bytes_echo", {"text": big})
    finally:
        api.close()
    assert result.as_numpy("upper")[0, 0] == b"A" * len(big[0, 0])
    assert result.as_numpy("length").tolist() == [[len(big[0, 0])]]


def test_outputs_come_typed_when_every_output_asks_for_binary_data_false(
    stub: service_pb2_grpc.GRPCInferenceServiceStub,
) -> None:
    rows = example_inputs("digits_onnx", 3)["input"]
    item = {"name": "input", "datatype": "FP32", "shape": [3, 64], "data": rows.tolist()}
    outputs = [{"name": "label"}, {"name": "probabilities"}]
    raw = stub.ModelInfer(typed_request("digits_onnx", "", [item], outputs))
    typed_outputs = [{**o, "parameters": {"binary_data": False}} for o in outputs]
    typed = stub.ModelInfer(typed_request("digits_onnx", "", [item], typed_outputs))
    assert len(raw.raw_output_contents) == 2 and not typed.raw_output_contents
    result = grpcclient.InferResult(raw)
    label, probabilities = typed.outputs
    assert list(label.contents.int64_contents) == result.as_numpy("label").ravel().tolist()
    np.testing.assert_array_equal(
        np.array(probabilities.contents.fp32_contents, dtype=np.float32),
        result.as_numpy("probabilities").ravel(),
    )


# ---- parity between the protocols ----------------------------------------


def test_every_example_model_gives_bit_identical_outputs_over_http_and_grpc(
    server: ServerProcess,
) -> None:
    http, grpc_ = V2("http", server), V2("grpc", server)
    try:
        for model in MODEL_NAMES:
            inputs = example_inputs(model, 3)
            over_http = http.infer(model, inputs)
            over_grpc = grpc_.infer(model, inputs)
            for output in http.metadata(model)["outputs"]:
                a, b = over_http.as_numpy(output["name"]), over_grpc.as_numpy(output["name"])
                assert a.dtype == b.dtype and a.shape == b.shape, (model, output["name"])
                if a.dtype == object:
                    assert a.tolist() == b.tolist(), (model, output["name"])
                else:
                    assert a.tobytes() == b.tobytes(), (model, output["name"])
    finally:
        http.close()
        grpc_.close()


def test_bad_requests_give_the_same_status_class_and_line_over_http_and_grpc(
    server: ServerProcess, stub: service_pb2_grpc.GRPCInferenceServiceStub
) -> None:
    for name, path, body, _, _ in BAD_REQUESTS:
        http_status, http_line = send_bad(server, stub, "http", path, body)
        grpc_status, grpc_line = send_bad(server, stub, "grpc", path, body)
        assert (GRPC_STATUS[http_status], http_line) == (grpc_status, grpc_line), name  # type: ignore[index]


def test_an_unknown_model_is_reported_in_tritons_words(server: ServerProcess) -> None:
    """tritonclient's examples test ``ex.message().startswith("Request for unknown model")``."""
    expected = "Request for unknown model: 'wrong_model_name' is not found"
    with (
        httpclient.InferenceServerClient(server.http_url) as http_client,
        pytest.raises(InferenceServerException) as over_http,
    ):
        http_client.get_model_metadata("wrong_model_name")
    assert over_http.value.message().startswith(expected)
    assert "rule=model-server/unknown-model" in over_http.value.message()
    with (
        grpcclient.InferenceServerClient(server.grpc_url) as grpc_client,
        pytest.raises(InferenceServerException) as over_grpc,
    ):
        grpc_client.get_model_metadata("wrong_model_name")
    assert over_grpc.value.message().startswith(expected)
