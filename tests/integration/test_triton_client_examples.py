"""Triton's Python client examples, step by step, against modelyard with Triton's models.

Each test follows one of tritonclient's ``src/python/examples`` scripts (named in its
docstring): the same client calls, in the same order, on the example models of the
same names and tensors (``simple``, ``simple_int8``, ``simple_string``,
``simple_identity``), built here as ONNX and python models. The shared-memory
examples are in ``test_shared_memory.py``, model control with file overrides in
``test_load_file_overrides.py``, the sequence and decoupled ones in
``test_triton_sequence_examples.py``, the image ones (with ``grpc_client.py``) in
``test_triton_image_examples.py``. The CUDA shared-memory examples need a GPU.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import queue
import zlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import psutil
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcclient_aio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpclient_aio
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from tests.support.models import (
    custom_identity_int32,
    simple_add_sub,
    simple_identity,
    simple_string,
)
from tests.support.servers import ServerProcess, running_server, server_in_process

INPUT0 = np.arange(16, dtype=np.int32).reshape(1, 16)
INPUT1 = np.ones((1, 16), dtype=np.int32)


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("examples") / "models"
    simple_add_sub(repository)
    simple_add_sub(repository, "simple_int8", "INT8")
    simple_string(repository)
    simple_identity(repository)
    custom_identity_int32(repository)
    return repository


@pytest.fixture(scope="module")
def triton(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(
        repository, tmp_path_factory.mktemp("logs"), "--http-max-body-bytes=8000000"
    ) as process:
        yield process


def _add_sub_inputs(module: Any, binary: tuple[bool, bool] = (True, True)) -> list[Any]:
    inputs = [
        module.InferInput("INPUT0", [1, 16], "INT32"),
        module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    if module is httpclient or module is httpclient_aio:
        inputs[0].set_data_from_numpy(INPUT0, binary_data=binary[0])
        inputs[1].set_data_from_numpy(INPUT1, binary_data=binary[1])
    else:
        inputs[0].set_data_from_numpy(INPUT0)
        inputs[1].set_data_from_numpy(INPUT1)
    return inputs


def _check_add_sub(result: Any) -> None:
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), INPUT0 + INPUT1)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), INPUT0 - INPUT1)


# ---- simple_http_infer_client.py / simple_grpc_infer_client.py --------------------------


def test_simple_http_infer_client(triton: ServerProcess) -> None:
    """JSON and binary inputs mixed, one output binary and one JSON, query parameters,
    headers; then no outputs named (all come back)."""
    client = httpclient.InferenceServerClient(triton.http_url)
    try:
        outputs = [
            httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
            httpclient.InferRequestedOutput("OUTPUT1", binary_data=False),
        ]
        result = client.infer(
            "simple",
            _add_sub_inputs(httpclient, (False, True)),
            outputs=outputs,
            query_params={"test_1": 1, "test_2": 2},
            headers={"test": "1"},
        )
        _check_add_sub(result)
        assert result.get_output("OUTPUT1")["data"] == (INPUT0 - INPUT1).ravel().tolist()
        _check_add_sub(client.infer("simple", _add_sub_inputs(httpclient, (False, True))))
    finally:
        client.close()


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_simple_http_infer_client_with_compression(triton: ServerProcess, algorithm: str) -> None:
    """--request-compression-algorithm and --response-compression-algorithm."""
    client = httpclient.InferenceServerClient(triton.http_url)
    try:
        result = client.infer(
            "simple",
            _add_sub_inputs(httpclient, (False, True)),
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        _check_add_sub(result)
    finally:
        client.close()
    big = [1_000_000] * 128  # a reply over a kilobyte: a smaller one goes as it is
    body = {
        "inputs": [
            {"name": n, "datatype": "INT32", "shape": [8, 16], "data": big}
            for n in ("INPUT0", "INPUT1")
        ]
    }
    url = f"http://{triton.http_url}/v2/models/simple/infer"
    accept = {"accept-encoding": f"identity;q=0.5, {algorithm};q=0.9"}
    answer = httpx.post(url, json=body, headers=accept)
    assert answer.status_code == 200
    assert answer.headers["content-encoding"] == algorithm  # httpx inflated it, as a client does
    assert answer.json()["outputs"][0]["data"] == [2_000_000] * 128
    small = {"inputs": [{**entry, "shape": [1, 16], "data": big[:16]} for entry in body["inputs"]]}
    assert "content-encoding" not in httpx.post(url, json=small, headers=accept).headers


def test_simple_grpc_infer_client(triton: ServerProcess) -> None:
    """Headers, a request id, named outputs, and the response's model and id."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    try:
        outputs = [
            grpcclient.InferRequestedOutput("OUTPUT0"),
            grpcclient.InferRequestedOutput("OUTPUT1"),
        ]
        result = client.infer(
            "simple",
            _add_sub_inputs(grpcclient),
            outputs=outputs,
            request_id="42",
            headers={"test": "1"},
        )
        _check_add_sub(result)
        response = result.get_response()
        assert response.model_name == "simple" and response.id == "42"
        # --grpc-compression-algorithm
        _check_add_sub(
            client.infer("simple", _add_sub_inputs(grpcclient), compression_algorithm="gzip")
        )
    finally:
        client.close()


# ---- simple_*_async_infer_client.py and simple_*_aio_infer_client.py ---------------------


def test_simple_http_async_infer_client(triton: ServerProcess) -> None:
    """async_infer from a pool of connections; results read in any order."""
    client = httpclient.InferenceServerClient(triton.http_url, concurrency=4)
    try:
        pending = [client.async_infer("simple", _add_sub_inputs(httpclient)) for _ in range(8)]
        for request in reversed(pending):
            _check_add_sub(request.get_result())
    finally:
        client.close()


def test_simple_grpc_async_infer_client(triton: ServerProcess) -> None:
    """async_infer with a callback; the results arrive on the client's thread."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    done: queue.Queue[tuple[Any, Any]] = queue.Queue()

    def callback(results: queue.Queue[tuple[Any, Any]], result: Any, error: Any) -> None:
        results.put((result, error))

    try:
        for _ in range(4):
            client.async_infer("simple", _add_sub_inputs(grpcclient), partial(callback, done))
        for _ in range(4):
            result, error = done.get(timeout=10)
            assert error is None
            _check_add_sub(result)
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_simple_aio_infer_client(triton: ServerProcess, protocol: str) -> None:
    """tritonclient's asyncio clients: liveness, metadata and a batch of concurrent infers."""

    async def scenario() -> None:
        if protocol == "http":
            module: Any = httpclient_aio
            client: Any = httpclient_aio.InferenceServerClient(triton.http_url)
        else:
            module = grpcclient_aio
            client = grpcclient_aio.InferenceServerClient(triton.grpc_url)
        try:
            assert await client.is_server_live()
            assert await client.is_model_ready("simple")
            metadata = await client.get_model_metadata("simple")
            name = metadata.name if protocol == "grpc" else metadata["name"]
            assert name == "simple"
            inputs = _add_sub_inputs(module)
            results = await asyncio.gather(*(client.infer("simple", inputs) for _ in range(4)))
            for result in results:
                _check_add_sub(result)
        finally:
            await client.close()

    asyncio.run(scenario())


# ---- simple_*_health_metadata.py ---------------------------------------------------------


def test_simple_http_health_metadata(triton: ServerProcess) -> None:
    client = httpclient.InferenceServerClient(triton.http_url)
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("simple")
        metadata = client.get_server_metadata()
        assert metadata["name"] and "binary_tensor_data" in metadata["extensions"]
        model = client.get_model_metadata("simple")
        assert model["name"] == "simple"
        assert [t["name"] for t in model["inputs"]] == ["INPUT0", "INPUT1"]
        assert model["inputs"][0]["shape"] == [-1, 16] and model["inputs"][0]["datatype"] == "INT32"
        config = client.get_model_config("simple")
        assert config["max_batch_size"] == 8 and config["name"] == "simple"
        with pytest.raises(InferenceServerException) as unknown:
            client.get_model_metadata("wrong_model_name")
        assert unknown.value.message().startswith("Request for unknown model: 'wrong_model_name'")
    finally:
        client.close()


def test_simple_grpc_health_metadata(triton: ServerProcess) -> None:
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("simple")
        metadata = client.get_server_metadata()
        assert metadata.name and "binary_tensor_data" in metadata.extensions
        model = client.get_model_metadata("simple")
        assert model.name == "simple" and model.inputs[0].datatype == "INT32"
        assert list(model.inputs[0].shape) == [-1, 16]
        config = client.get_model_config("simple").config
        assert config.max_batch_size == 8 and config.name == "simple"
        statistics = client.get_inference_statistics("simple")
        assert statistics.model_stats[0].name == "simple"
        with pytest.raises(InferenceServerException) as unknown:
            client.get_model_metadata("wrong_model_name")
        assert unknown.value.message().startswith("Request for unknown model: 'wrong_model_name'")
    finally:
        client.close()


# ---- simple_*_string_infer_client.py -----------------------------------------------------


def _string_inputs(module: Any) -> list[Any]:
    inputs = [
        module.InferInput("INPUT0", [1, 16], "BYTES"),
        module.InferInput("INPUT1", [1, 16], "BYTES"),
    ]
    for item, data in zip(inputs, (INPUT0, INPUT1), strict=True):
        text = np.array([str(v).encode("utf-8") for v in data.ravel()], dtype=np.object_)
        item.set_data_from_numpy(text.reshape(data.shape))
    return inputs


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_simple_string_infer_client(triton: ServerProcess, protocol: str) -> None:
    """simple_string's sums as strings; simple_identity returns bytes with NUL inside."""
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = triton.grpc_url if protocol == "grpc" else triton.http_url
    client = module.InferenceServerClient(url)
    try:
        result = client.infer("simple_string", _string_inputs(module))
        total = result.as_numpy("OUTPUT0").astype(np.bytes_).astype(np.int32)
        difference = result.as_numpy("OUTPUT1").astype(np.bytes_).astype(np.int32)
        np.testing.assert_array_equal(total, INPUT0 + INPUT1)
        np.testing.assert_array_equal(difference, INPUT0 - INPUT1)

        null_chars = np.array([b"he\x00llo" for _ in range(16)], dtype=np.object_)
        null_chars = null_chars.reshape(1, 16)
        identity = module.InferInput("INPUT0", list(null_chars.shape), "BYTES")
        identity.set_data_from_numpy(null_chars)
        echoed = client.infer("simple_identity", [identity]).as_numpy("OUTPUT0")
        assert echoed.tolist() == null_chars.tolist()
    finally:
        client.close()


# ---- grpc_explicit_{int,int8,byte}_content_client.py -------------------------------------


def _explicit_request(model: str, datatype: str, field: str, values: list[list[Any]]) -> Any:
    request = service_pb2.ModelInferRequest(model_name=model)
    for name, data in zip(("INPUT0", "INPUT1"), values, strict=True):
        tensor = service_pb2.ModelInferRequest().InferInputTensor(
            name=name, datatype=datatype, shape=[1, 16]
        )
        getattr(tensor.contents, field).extend(data)
        request.inputs.extend([tensor])
    for name in ("OUTPUT0", "OUTPUT1"):
        request.outputs.extend(
            [service_pb2.ModelInferRequest().InferRequestedOutputTensor(name=name)]
        )
    return request


@pytest.mark.parametrize(
    ("model", "datatype", "field", "dtype"),
    [
        ("simple", "INT32", "int_contents", np.int32),
        ("simple_int8", "INT8", "int_contents", np.int8),
        ("simple_string", "BYTES", "bytes_contents", np.object_),
    ],
)
def test_grpc_explicit_content_client(
    triton: ServerProcess, model: str, datatype: str, field: str, dtype: Any
) -> None:
    """Inputs in the typed contents fields of the raw protobuf, through the generated stub;
    the outputs come back in raw_output_contents, as Triton sends them."""
    first, second = list(range(16)), [1] * 16
    if datatype == "BYTES":
        values: list[list[Any]] = [
            [str(v).encode() for v in first],
            [str(v).encode() for v in second],
        ]
    else:
        values = [first, second]
    with grpc.insecure_channel(triton.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        response = stub.ModelInfer(_explicit_request(model, datatype, field, values))
    assert [o.name for o in response.outputs] == ["OUTPUT0", "OUTPUT1"]
    result = grpcclient.InferResult(response)
    total = result.as_numpy("OUTPUT0")
    if datatype == "BYTES":
        total = total.astype(np.bytes_).astype(np.int32)
    assert total.dtype == np.int32 or np_to_triton_dtype(total.dtype) == datatype
    np.testing.assert_array_equal(total.astype(np.int32), (np.arange(16) + 1).reshape(1, 16))


# ---- reuse_infer_objects_client.py, simple_grpc_custom_args_client.py --------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_reuse_infer_objects_client(triton: ServerProcess, protocol: str) -> None:
    """The same InferInput and InferRequestedOutput objects, new data each call."""
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = triton.grpc_url if protocol == "grpc" else triton.http_url
    client = module.InferenceServerClient(url)
    try:
        inputs = [
            module.InferInput("INPUT0", [1, 16], "INT32"),
            module.InferInput("INPUT1", [1, 16], "INT32"),
        ]
        outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
        for start in (0, 100, -50):
            first = np.arange(start, start + 16, dtype=np.int32).reshape(1, 16)
            inputs[0].set_data_from_numpy(first)
            inputs[1].set_data_from_numpy(INPUT1)
            result = client.infer("simple", inputs, outputs=outputs)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), first + 1)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), first - 1)
    finally:
        client.close()


def test_simple_grpc_custom_args_and_keepalive_clients(triton: ServerProcess) -> None:
    """A channel with the keepalive and message-size arguments those examples set."""
    keepalive = grpcclient.KeepAliveOptions(
        keepalive_time_ms=2**31 - 1,
        keepalive_timeout_ms=20000,
        keepalive_permit_without_calls=False,
    )
    client = grpcclient.InferenceServerClient(
        triton.grpc_url,
        keepalive_options=keepalive,
        channel_args=[("grpc.max_receive_message_length", 2**20)],
    )
    try:
        _check_add_sub(client.infer("simple", _add_sub_inputs(grpcclient)))
    finally:
        client.close()


# ---- simple_*_model_control.py ------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_simple_model_control(repository: Path, tmp_path: Path, protocol: str) -> None:
    """Explicit mode: index, load, ready, unload; a load with a config override."""
    with server_in_process(repository, "--model-control-mode=explicit") as server:
        module: Any = grpcclient if protocol == "grpc" else httpclient
        url = server.grpc_url if protocol == "grpc" else server.http_url
        client = module.InferenceServerClient(url)
        try:
            assert not client.is_model_ready("simple")
            client.load_model("simple")
            assert client.is_model_ready("simple")
            index = client.get_model_repository_index()
            rows = index.models if protocol == "grpc" else index
            names = {row.name if protocol == "grpc" else row["name"] for row in rows}
            assert {"simple", "simple_int8", "simple_string", "simple_identity"} <= names
            client.unload_model("simple")
            assert not client.is_model_ready("simple")
            config = json.dumps({"backend": "onnxruntime", "max_batch_size": 4})
            client.load_model("simple", config=config)
            settings = client.get_model_config("simple")
            batch = (
                settings.config.max_batch_size if protocol == "grpc" else settings["max_batch_size"]
            )
            assert batch == 4
            with pytest.raises(InferenceServerException) as unknown:
                client.load_model("wrong_model_name")
            assert "failed to load 'wrong_model_name'" in unknown.value.message()
        finally:
            client.close()


# ---- compressed bodies a careless or hostile caller sends ----------------------------------


@pytest.mark.parametrize(
    ("encoding", "body", "status", "words"),
    [
        (b"gzip", gzip.compress(b"\0" * 50_000_000), 413, "inflates past the limit"),
        (b"gzip", b"not gzip at all", 400, "does not inflate"),
        (b"deflate", zlib.compress(b'{"inputs": []}')[:-3], 400, "ends before its stream does"),
        (b"br", b"{}", 400, "unsupported Content-Encoding"),
    ],
)
def test_a_compressed_body_that_cannot_be_read_is_refused(
    triton: ServerProcess, encoding: bytes, body: bytes, status: int, words: str
) -> None:
    base = f"http://{triton.http_url}"
    response = httpx.post(
        f"{base}/v2/models/simple/infer",
        content=body,
        headers={"content-encoding": encoding.decode()},
    )
    assert response.status_code == status
    assert words in response.json()["error"]
    client = httpclient.InferenceServerClient(triton.http_url)
    try:
        _check_add_sub(client.infer("simple", _add_sub_inputs(httpclient)))  # serves on
    finally:
        client.close()


# ---- memory_growth_test.py ----------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_memory_growth_test(triton: ServerProcess, protocol: str) -> None:
    """A new client, and so a new connection, for each of 100 inferences; each answer is
    its input. The server's memory does not grow with the connections it closed."""
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = triton.grpc_url if protocol == "grpc" else triton.http_url
    data = np.arange(16, dtype=np.int32).reshape(1, 16)
    rss = psutil.Process(triton.process.pid).memory_info().rss
    for _ in range(100):
        client = module.InferenceServerClient(url)
        inputs = [module.InferInput("INPUT0", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(data)
        results = client.infer(
            "custom_identity_int32", inputs, outputs=[module.InferRequestedOutput("OUTPUT0")]
        )
        output = results.as_numpy("OUTPUT0")
        assert output.dtype == data.dtype and output.shape == data.shape
        assert np.array_equal(output, data)
        client.close()
    grown = psutil.Process(triton.process.pid).memory_info().rss - rss
    assert grown < 32 * 2**20, f"the server grew {grown / 2**20:.1f} MiB over 100 clients"


# ---- trace settings, as tritonclient reads and sets them ----------------------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_trace_settings_through_tritonclient(triton: ServerProcess, protocol: str) -> None:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = triton.grpc_url if protocol == "grpc" else triton.http_url
    client = module.InferenceServerClient(url)

    def settings(reply: Any) -> dict[str, Any]:
        if protocol == "grpc":
            return {name: list(value.value) for name, value in reply.settings.items()}
        return {k: v if isinstance(v, list) else [v] for k, v in reply.items()}

    try:
        assert settings(client.get_trace_settings())["trace_level"] == ["OFF"]
        changed = settings(client.update_trace_settings("simple", {"trace_rate": "7"}))
        assert changed["trace_rate"] == ["7"]
        assert settings(client.get_trace_settings("simple"))["trace_rate"] == ["7"]
        assert settings(client.get_trace_settings())["trace_rate"] == ["1000"]
        with pytest.raises(InferenceServerException) as refused:
            client.update_trace_settings(settings={"trace_level": ["TIMESTAMPS"]})
        assert "needs a trace file" in refused.value.message()
        client.update_trace_settings("simple", {"trace_rate": None})
        assert settings(client.get_trace_settings("simple"))["trace_rate"] == ["1000"]
    finally:
        client.close()
