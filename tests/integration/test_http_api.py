"""The V2 HTTP API through the real tritonclient against a real server process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelyard.config import parse_json_config
from modelyard.engines import LoadContext, engine_class
from modelyard.examples.build import MODEL_NAMES, example_inputs
from tests.integration.conftest import MAX_BODY_BYTES
from tests.support.servers import ServerProcess


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(server.http_url)


def infer(
    client: httpclient.InferenceServerClient,
    model: str,
    inputs: dict[str, np.ndarray],
    *,
    binary: bool = True,
    version: str = "",
    outputs: list[httpclient.InferRequestedOutput] | None = None,
    request_id: str = "",
) -> httpclient.InferResult:
    metadata = client.get_model_metadata(model, version)
    datatypes = {i["name"]: i["datatype"] for i in metadata["inputs"]}
    wire = []
    for name, array in inputs.items():
        item = httpclient.InferInput(name, list(array.shape), datatypes[name])
        item.set_data_from_numpy(array, binary_data=binary)
        wire.append(item)
    if outputs is None:
        outputs = [
            httpclient.InferRequestedOutput(o["name"], binary_data=binary)
            for o in metadata["outputs"]
        ]
    return client.infer(model, wire, model_version=version, outputs=outputs, request_id=request_id)


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


def test_health_and_server_metadata(client: httpclient.InferenceServerClient) -> None:
    assert client.is_server_live()
    assert client.is_server_ready()
    metadata = client.get_server_metadata()
    assert metadata["name"] == "modelyard"
    for extension in ("binary_tensor_data", "classification", "model_repository", "statistics"):
        assert extension in metadata["extensions"]


@pytest.mark.parametrize("model", MODEL_NAMES)
@pytest.mark.parametrize("rows", [1, 4])
def test_served_outputs_equal_the_engine_called_directly(
    client: httpclient.InferenceServerClient, example_repository: Path, model: str, rows: int
) -> None:
    inputs = example_inputs(model, rows)
    served = infer(client, model, inputs)
    config = client.get_model_config(model)
    version = served.get_response()["model_version"]
    expected = direct_engine_outputs(example_repository, config, version, inputs)
    for name, array in expected.items():
        got = served.as_numpy(name)
        assert got.shape[0] == rows
        np.testing.assert_allclose(got.reshape(array.shape), array, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model", ["digits_onnx", "iris_sklearn", "breast_cancer_torch"])
def test_json_and_binary_tensors_give_identical_outputs(
    client: httpclient.InferenceServerClient, model: str
) -> None:
    inputs = example_inputs(model, 5)
    as_json = infer(client, model, inputs, binary=False)
    as_binary = infer(client, model, inputs, binary=True)
    for output in as_binary.get_response()["outputs"]:
        np.testing.assert_array_equal(
            as_json.as_numpy(output["name"]), as_binary.as_numpy(output["name"])
        )


def test_both_versions_serve_and_unversioned_goes_to_the_highest(
    client: httpclient.InferenceServerClient,
) -> None:
    metadata = client.get_model_metadata("digits_onnx")
    assert metadata["versions"] == ["1", "2"]
    inputs = example_inputs("digits_onnx", 3)
    assert infer(client, "digits_onnx", inputs).get_response()["model_version"] == "2"
    v1 = infer(client, "digits_onnx", inputs, version="1")
    v2 = infer(client, "digits_onnx", inputs, version="2")
    assert v1.get_response()["model_version"] == "1"
    assert not np.array_equal(v1.as_numpy("probabilities"), v2.as_numpy("probabilities"))
    assert client.is_model_ready("digits_onnx", "1")
    assert not client.is_model_ready("digits_onnx", "9")


@pytest.mark.parametrize("binary", [False, True])
def test_bytes_tensors_round_trip(client: httpclient.InferenceServerClient, binary: bool) -> None:
    text = np.array([["abc", "größe"], ["", "x y"]], dtype=object)
    result = infer(client, "bytes_echo", {"text": text}, binary=binary)
    upper = result.as_numpy("upper")
    assert [[v.decode() if isinstance(v, bytes) else v for v in row] for row in upper] == [
        ["ABC", "GRößE"],  # the model upper-cases bytes: only ASCII changes
        ["", "X Y"],
    ]
    assert result.as_numpy("length").tolist() == [[3, 7], [0, 3]]  # UTF-8 byte lengths


def test_classification_extension_with_labels(client: httpclient.InferenceServerClient) -> None:
    inputs = example_inputs("digits_onnx", 2)
    plain = infer(client, "digits_onnx", inputs).as_numpy("probabilities")
    result = infer(
        client,
        "digits_onnx",
        inputs,
        outputs=[httpclient.InferRequestedOutput("probabilities", class_count=3)],
    )
    classes = result.as_numpy("probabilities")
    assert classes.shape == (2, 3)
    labels = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    for row, probabilities in zip(classes, plain, strict=True):
        value, index, label = row[0].decode().split(":")
        assert int(index) == int(np.argmax(probabilities))
        assert label == labels[int(index)]
        assert float(value) == pytest.approx(float(probabilities.max()), abs=1e-6)


def test_request_id_is_echoed_and_requested_outputs_are_honoured(
    client: httpclient.InferenceServerClient,
) -> None:
    result = infer(
        client,
        "digits_onnx",
        example_inputs("digits_onnx", 1),
        outputs=[httpclient.InferRequestedOutput("label")],
        request_id="req-42",
    )
    response = result.get_response()
    assert response["id"] == "req-42"
    assert [o["name"] for o in response["outputs"]] == ["label"]


def test_statistics_count_requests(client: httpclient.InferenceServerClient) -> None:
    before = client.get_inference_statistics("tiny_onnx")["model_stats"][0]
    infer(client, "tiny_onnx", example_inputs("tiny_onnx", 3))
    after = client.get_inference_statistics("tiny_onnx")["model_stats"][0]
    assert after["inference_count"] - before["inference_count"] == 3
    success = after["inference_stats"]["success"]["count"]
    assert success - before["inference_stats"]["success"]["count"] == 1


def test_autocompleted_config_matches_the_onnx_graph(
    client: httpclient.InferenceServerClient,
) -> None:
    config = client.get_model_config("tiny_onnx")
    assert config["platform"] == "onnxruntime_onnx"
    assert config["max_batch_size"] == 4
    assert "dynamic_batching" in config
    assert [(i["name"], i["data_type"], i["dims"]) for i in config["input"]] == [
        ("input", "TYPE_FP32", ["4"])
    ]


DIGITS_ROW = [0.0] * 64


def _body(**overrides: Any) -> dict[str, Any]:
    item = {"name": "input", "shape": [1, 64], "datatype": "FP32", "data": DIGITS_ROW}
    item.update(overrides)
    return {"inputs": [item]}


BAD_REQUESTS = [
    ("unknown model", "/v2/models/nope/infer", _body(), 404, "[model-server] unknown model 'nope'"),
    (
        "unknown version",
        "/v2/models/digits_onnx/versions/7/infer",
        _body(),
        404,
        "unknown version 7 of model 'digits_onnx'",
    ),
    (
        "bad input name",
        "/v2/models/digits_onnx/infer",
        _body(name="pixels"),
        400,
        "unexpected input 'pixels' (expects input) for model 'digits_onnx'",
    ),
    (
        "wrong dtype",
        "/v2/models/digits_onnx/infer",
        _body(datatype="INT32", data=[0] * 64),
        400,
        "input 'input' has datatype INT32, expected FP32",
    ),
    (
        "wrong shape",
        "/v2/models/digits_onnx/infer",
        _body(shape=[1, 32], data=[0.0] * 32),
        400,
        "input 'input' has shape [1, 32], expected [-1, 64]",
    ),
    (
        "data size",
        "/v2/models/digits_onnx/infer",
        _body(data=[0.0] * 63),
        400,
        "input 'input': 63 values given for shape [1, 64] (64 values)",
    ),
    (
        "batch too big",
        "/v2/models/digits_onnx/infer",
        _body(shape=[65, 64], data=[0.0] * 64 * 65),
        400,
        "batch size 65 of input 'input' is over max_batch_size 64",
    ),
    (
        "unknown output",
        "/v2/models/digits_onnx/infer",
        {**_body(), "outputs": [{"name": "nope"}]},
        400,
        "unknown output 'nope'",
    ),
    (
        "no inputs",
        "/v2/models/digits_onnx/infer",
        {"inputs": []},
        400,
        "needs a non-empty 'inputs' list",
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


@pytest.mark.parametrize(
    ("path", "body", "status", "fragment"),
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
def test_bad_requests_get_a_precise_error_line(
    server: ServerProcess, path: str, body: dict[str, Any], status: int, fragment: str
) -> None:
    response = httpx.post(f"http://{server.http_url}{path}", json=body)
    assert response.status_code == status
    line = response.json()["error"]
    assert fragment in line
    assert "; rule=" in line and "; change: " in line


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
    assert "binary data is 100 bytes but shape [1, 64] of FP32 needs 256" in line


def test_oversized_body_is_413(server: ServerProcess) -> None:
    response = _raw(server, b" " * (MAX_BODY_BYTES + 1))
    assert response.status_code == 413
    line = response.json()["error"]
    assert f"over the limit of {MAX_BODY_BYTES} bytes" in line
    assert "change: modelyard serve --http-max-body-bytes" in line


def test_load_and_unload_are_503_outside_explicit_mode(
    client: httpclient.InferenceServerClient,
) -> None:
    for action in (client.load_model, client.unload_model):
        with pytest.raises(InferenceServerException) as refused:
            action("digits_onnx")
        assert refused.value.status() == "503"
        assert "--model-control-mode explicit" in refused.value.message()


def test_the_server_keeps_serving_after_every_bad_request(
    server: ServerProcess, client: httpclient.InferenceServerClient
) -> None:
    for _, path, body, _, _ in BAD_REQUESTS:
        httpx.post(f"http://{server.http_url}{path}", json=body)
    _raw(server, b"{{{")
    result = infer(client, "digits_onnx", example_inputs("digits_onnx", 2))
    assert result.as_numpy("label").shape[0] == 2
    assert server.process.poll() is None
