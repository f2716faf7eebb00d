"""What only gRPC has: streams, client deadlines, retry-after metadata, health, unsupported RPCs."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc
from tritonclient.utils import InferenceServerException

from modelyard.frontdoors import grpc as modelyard_grpc
from tests.support.models import SLOW_DOUBLE, slow_double, write_python_model
from tests.support.servers import (
    Served,
    running_server,
    server_in_process,
    wait_until,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture(scope="module")
def client(server: Served) -> Iterator[grpcclient.InferenceServerClient]:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    yield client
    client.close()


def digits_input(rows: int, width: int = 64) -> grpcclient.InferInput:
    item = grpcclient.InferInput("input", [rows, width], "FP32")
    item.set_data_from_numpy(np.zeros((rows, width), dtype=np.float32))
    return item


def double_input() -> grpcclient.InferInput:
    item = grpcclient.InferInput("x", [1, 2], "FP32")
    item.set_data_from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
    return item


def test_a_bad_request_on_a_stream_gets_its_error_line_and_the_stream_goes_on(
    client: grpcclient.InferenceServerClient,
) -> None:
    answers: queue.Queue[tuple[Any, InferenceServerException | None]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        client.async_stream_infer("digits_onnx", [digits_input(2)], request_id="good-1")
        client.async_stream_infer("digits_onnx", [digits_input(1, 32)], request_id="bad")
        client.async_stream_infer("digits_onnx", [digits_input(3)], request_id="good-2")
        first = [answers.get(timeout=10) for _ in range(3)]
        client.async_stream_infer("digits_onnx", [digits_input(1)], request_id="after")
        last = answers.get(timeout=10)
    finally:
        client.stop_stream()
    errors = [error for _, error in first if error is not None]
    assert len(errors) == 1
    line = errors[0].message()
    assert line.startswith(  # Triton's words lead; the rule names the layer
        "unexpected shape for input 'input' for model 'digits_onnx'. "
        "Expected [-1,64], got [1,32]."
    )
    assert "; rule=model-server/input-validation; change: " in line
    rows = {r.get_response().id: r.as_numpy("label").shape[0] for r, e in first if e is None}
    assert rows == {"good-1": 2, "good-2": 3}
    result, error = last
    assert error is None and result.get_response().id == "after"


QUEUE_OF_ONE = """
    backend: "python"
    max_batch_size: 16
    dynamic_batching { default_queue_policy { max_queue_size: 1 } }
    input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
    output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
"""


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """slow_double (1 s per call) and queue_of_one (0.5 s, one queued request at most)."""
    root = tmp_path_factory.mktemp("slow")
    repository = root / "models"
    slow_double(repository, delay=1.0)
    model_dir = write_python_model(repository, "queue_of_one", SLOW_DOUBLE, QUEUE_OF_ONE)
    (model_dir / "delay.txt").write_text("0.5")
    with server_in_process(repository) as server:
        yield server


def test_a_request_whose_client_deadline_passes_in_the_queue_is_never_computed(
    slow_server: Served,
) -> None:
    client = grpcclient.InferenceServerClient(slow_server.grpc_url)
    try:
        occupying = threading.Thread(target=lambda: client.infer("slow_double", [double_input()]))
        occupying.start()
        time.sleep(0.2)  # the first request is executing on the only instance
        with pytest.raises(InferenceServerException) as late:
            client.infer("slow_double", [double_input()], client_timeout=0.3)
        assert late.value.status() == "StatusCode.DEADLINE_EXCEEDED"
        occupying.join()

        def stats() -> dict[str, Any]:
            doc = client.get_inference_statistics("slow_double", as_json=True)
            return doc["model_stats"][0]  # type: ignore[no-any-return]

        wait_until(lambda: int(stats()["inference_stats"]["fail"].get("count", 0)) == 1, 10)
        final = stats()
        assert int(final["inference_count"]) == 1
        assert int(final["execution_count"]) == 1
        assert int(final["inference_stats"]["success"]["count"]) == 1
    finally:
        client.close()


def test_a_full_queue_is_unavailable_with_retry_after_in_trailing_metadata(
    slow_server: Served,
) -> None:
    request = pb.ModelInferRequest(model_name="queue_of_one")
    item = double_input()
    request.inputs.append(item._get_tensor())
    request.raw_input_contents.append(item._get_content())
    with grpc.insecure_channel(slow_server.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        first = stub.ModelInfer.future(request)  # executing
        time.sleep(0.2)
        second = stub.ModelInfer.future(request)  # queued
        time.sleep(0.2)
        with pytest.raises(grpc.RpcError) as full:
            stub.ModelInfer(request)
        first.result(timeout=10)
        second.result(timeout=10)
    assert full.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "is full (1/1 requests" in full.value.details()
    assert ("retry-after", "1") in full.value.trailing_metadata()


def test_a_stream_writes_answers_in_the_order_it_read_the_requests(slow_server: Served) -> None:
    """As Triton's stream: a model that answers once gets its answer written after those of
    the requests read before it (slow_double takes 1 s, queue_of_one 0.5 s), while both
    run at once."""
    client = grpcclient.InferenceServerClient(slow_server.grpc_url)
    answers: queue.Queue[tuple[Any, InferenceServerException | None]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        client.async_stream_infer("slow_double", [double_input()], request_id="slow")
        client.async_stream_infer("queue_of_one", [double_input()], request_id="quick")
        got = [answers.get(timeout=10) for _ in range(2)]
    finally:
        client.stop_stream()
        client.close()
    assert [error for _, error in got] == [None, None]
    assert [result.get_response().id for result, _ in got] == ["slow", "quick"]


def test_a_stream_reads_no_more_while_its_requests_in_flight_reach_the_bound(
    slow_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """queue_of_one holds one request queued beside the one executing: read all at once, the
    third and fourth of a stream are refused (the queue is full); with one in flight at
    most, the stream reads each only once the one before it is answered, and all four pass
    (with two, the third could come while the instance has not yet taken the second)."""
    monkeypatch.setattr(modelyard_grpc, "MAX_STREAM_IN_FLIGHT", 1)
    client = grpcclient.InferenceServerClient(slow_server.grpc_url)
    answers: queue.Queue[tuple[Any, InferenceServerException | None]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        for n in range(4):
            client.async_stream_infer("queue_of_one", [double_input()], request_id=f"r{n}")
        got = [answers.get(timeout=10) for _ in range(4)]
    finally:
        client.stop_stream()
        client.close()
    assert [error for _, error in got] == [None] * 4
    assert [result.get_response().id for result, _ in got] == ["r0", "r1", "r2", "r3"]


def test_health_service_follows_models_through_load_and_unload(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository, versions=(1, 2))
    with (
        server_in_process(
            repository, "--model-control-mode", "explicit", wait_ready=False
        ) as server,
        grpc.insecure_channel(server.grpc_url) as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        client = grpcclient.InferenceServerClient(server.grpc_url)

        def check(service: str) -> int:
            request = health_pb2.HealthCheckRequest(service=service)
            return int(health.Check(request, timeout=5).status)

        try:
            assert check("") == SERVING
            assert check("slow_double") == NOT_SERVING  # in the repository, not loaded
            with pytest.raises(grpc.RpcError) as unknown:
                check("nope")
            assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

            client.load_model("slow_double")
            assert check("slow_double") == SERVING
            assert client.infer("slow_double", [double_input()]).as_numpy("y").tolist() == [
                [2002.0, 2004.0]
            ]
            watch = health.Watch(health_pb2.HealthCheckRequest(service="slow_double"), timeout=20)
            assert next(watch).status == SERVING

            override = {
                "backend": "python",
                "max_batch_size": 4,
                "version_policy": {"specific": {"versions": [1]}},
                "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}],
                "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [2]}],
            }
            client.load_model("slow_double", config=json.dumps(override))
            result = client.infer("slow_double", [double_input()])
            assert result.get_response().model_version == "1"
            config = client.get_model_config("slow_double", as_json=True)["config"]
            assert config["max_batch_size"] == 4

            with pytest.raises(InferenceServerException) as file_override:
                client.load_model("slow_double", files={"file:1/model.py": b"import os"})
            assert file_override.value.status() == "StatusCode.INVALID_ARGUMENT"
            assert "file overrides need the 'config' parameter" in file_override.value.message()
            with pytest.raises(InferenceServerException) as python_files:
                client.load_model(
                    "slow_double",
                    config=json.dumps(override),
                    files={"file:1/model.py": b"import os"},
                )
            assert "could run the caller's code" in python_files.value.message()
            assert client.is_model_ready("slow_double")  # what served before serves on

            client.unload_model("slow_double")
            assert check("slow_double") == NOT_SERVING
            assert next(watch).status == NOT_SERVING
            watch.cancel()
            assert not client.is_model_ready("slow_double")
            with pytest.raises(InferenceServerException) as gone:
                client.infer("slow_double", [double_input()])
            assert gone.value.status() == "StatusCode.NOT_FOUND"
            index = client.get_model_repository_index(as_json=True)["models"]
            assert [m["name"] for m in index] == ["slow_double"]
        finally:
            client.close()


def test_grpc_can_be_turned_off(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    with running_server(repository, tmp_path, "--grpc-port", "-1") as server:
        with (
            grpc.insecure_channel(server.grpc_url) as channel,
            pytest.raises(grpc.FutureTimeoutError),
        ):
            grpc.channel_ready_future(channel).result(timeout=0.5)
        assert "grpc=None" in server.log()
