"""``modelyard gateway`` in front of two real instances, called by the stock Triton clients.

The gateway is a separate process, so the instances are registered in an
embedded registry file it can read (by the test, as self-registration would).
"""

from __future__ import annotations

import asyncio
import math
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from modelyard.discovery import open_registry
from modelyard.discovery.registry import Instance, Registry
from tests.support.models import sequence_accumulator, slow_double
from tests.support.servers import (
    Served,
    free_ports,
    running_server,
    server_in_process,
    wait_until,
)

SERVICE = "com.example.test.gateway"
MODEL = "slow_double"
X = np.array([[1.0, 2.0]], dtype=np.float32)
EXPECTED = X * 2 + 1000


class Gateway:
    def __init__(self, process: subprocess.Popen[bytes], http_port: int, grpc_port: int) -> None:
        self.process = process
        self.http_url = f"127.0.0.1:{http_port}"
        self.grpc_url = f"127.0.0.1:{grpc_port}"


@contextmanager
def running_gateway(registry_url: str, log_dir: Path, *extra: str) -> Iterator[Gateway]:
    http_port, grpc_port = free_ports(2)
    log_path = log_dir / f"gateway-{http_port}.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "modelyard.cli.main",
                "gateway",
                "--service",
                SERVICE,
                "--registry",
                registry_url,
                "--http-port",
                str(http_port),
                "--grpc-port",
                str(grpc_port),
                *extra,
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
    gateway = Gateway(process, http_port, grpc_port)

    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"gateway exited early:\n{log_path.read_text()}")
        try:
            url = f"http://{gateway.http_url}/v2/models/{MODEL}/config"
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, timeout=60)
        yield gateway
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def register(registry: Registry, server: Served, *models: str) -> None:
    entry = Instance(
        service=SERVICE,
        group="a",
        instance_id=f"i{server.http_port}",
        http=server.http_url,
        grpc=server.grpc_url,
        models={model: {"1": "READY"} for model in (MODEL, *models)},
    )
    asyncio.run(registry.register(entry, ttl=300))


def http_double(client: httpclient.InferenceServerClient) -> np.ndarray:
    item = httpclient.InferInput("x", [1, 2], "FP32")
    item.set_data_from_numpy(X, binary_data=True)
    return client.infer(MODEL, [item]).as_numpy("y")  # type: ignore[no-any-return]


def grpc_double(client: grpcclient.InferenceServerClient) -> np.ndarray:
    item = grpcclient.InferInput("x", [1, 2], "FP32")
    item.set_data_from_numpy(X)
    return client.infer(MODEL, [item]).as_numpy("y")  # type: ignore[no-any-return]


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_triton_clients_infer_through_the_gateway_and_survive_a_killed_instance(
    tmp_path: Path, transport: str
) -> None:
    repository = tmp_path / "models"
    slow_double(repository, delay=0.002)
    registry_url = f"embedded://{tmp_path / 'registry.db'}"
    registry = open_registry(registry_url)
    with (
        running_server(repository, tmp_path) as first,
        running_server(repository, tmp_path) as second,
    ):
        register(registry, first)
        register(registry, second)
        with running_gateway(registry_url, tmp_path, "--transport", transport) as gateway:
            http = httpclient.InferenceServerClient(gateway.http_url)
            grpc = grpcclient.InferenceServerClient(gateway.grpc_url)
            try:
                assert http.is_server_ready() and grpc.is_server_ready()
                assert http.is_model_ready(MODEL) and grpc.is_model_ready(MODEL)
                assert http.get_model_metadata(MODEL)["inputs"][0]["name"] == "x"
                assert grpc.get_model_metadata(MODEL).versions == ["1"]
                np.testing.assert_array_equal(http_double(http), EXPECTED)
                np.testing.assert_array_equal(grpc_double(grpc), EXPECTED)
            finally:
                http.close()
                grpc.close()

            # an instance's error line reaches the caller unchanged
            bad = {"inputs": [{"name": "z", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
            direct = httpx.post(f"http://{first.http_url}/v2/models/{MODEL}/infer", json=bad)
            forwarded = httpx.post(f"http://{gateway.http_url}/v2/models/{MODEL}/infer", json=bad)
            assert forwarded.status_code == direct.status_code == 400
            assert forwarded.json() == direct.json()

            stop = threading.Event()
            failures: list[str] = []
            succeeded = [0, 0]

            def work(index: int) -> None:
                if index == 0:
                    client: Any = httpclient.InferenceServerClient(gateway.http_url)
                    call = http_double
                else:
                    client = grpcclient.InferenceServerClient(gateway.grpc_url)
                    call = grpc_double
                try:
                    while not stop.is_set():
                        try:
                            np.testing.assert_array_equal(call(client), EXPECTED)
                            succeeded[index] += 1
                        except Exception as exc:
                            failures.append(f"{type(exc).__name__}: {exc}")
                finally:
                    client.close()

            workers = [threading.Thread(target=work, args=(i % 2,)) for i in range(4)]
            for worker in workers:
                worker.start()
            try:
                wait_until(lambda: min(succeeded) >= 100, timeout=30)
                first.process.kill()
                before = list(succeeded)
                wait_until(
                    lambda: all(s >= b + 200 for s, b in zip(succeeded, before, strict=True)),
                    timeout=30,
                )
            finally:
                stop.set()
                for worker in workers:
                    worker.join(30)
            assert failures == []
    asyncio.run(registry.aclose())


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_a_rejection_passes_through_the_gateway_whole(tmp_path: Path, transport: str) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    service = tmp_path / "service.yaml"
    service.write_text(
        f"service: {SERVICE}\nlimits:\n  infer:\n    instance_qps: 1\n    burst_seconds: 1\n"
    )
    registry_url = f"embedded://{tmp_path / 'registry.db'}"
    registry = open_registry(registry_url)
    body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
    with server_in_process(repository, "--service-config", str(service)) as instance:
        register(registry, instance)
        # one try: the client would otherwise wait out the retry-after and try again
        extra = ("--transport", transport, "--max-attempts", "1")
        with running_gateway(registry_url, tmp_path, *extra) as gateway:
            url = f"http://{gateway.http_url}/v2/models/{MODEL}/infer"
            for _ in range(10):
                forwarded = httpx.post(url, json=body)
                if forwarded.status_code == 429:
                    break
            direct = httpx.post(f"http://{instance.http_url}/v2/models/{MODEL}/infer", json=body)
            # the id the instance recorded the rejection under, which explain looks up there
            request_id = forwarded.headers.get("x-request-id", "none")
            rejections = f"http://{instance.http_url}/v2/modelyard/rejections/{request_id}"
            recorded = httpx.get(rejections)
    asyncio.run(registry.aclose())
    assert recorded.status_code == 200, recorded.text
    assert forwarded.status_code == direct.status_code == 429
    line = forwarded.json()["error"]
    assert line.startswith("[governance] ") and "; rule=ratelimit/instance-qps; " in line
    match = re.search(r"; retry after (\d+\.\d\d)s$", line)
    assert match is not None and float(match[1]) > 0
    headers = forwarded.headers
    assert headers["retry-after"] == str(math.ceil(float(match[1])))  # the line's, rounded up
    assert headers["ratelimit-limit"] == "1" and headers["ratelimit-remaining"] == "0"
    assert headers["ratelimit-reset"] == headers["retry-after"]
    assert headers["ratelimit-policy"] == '1;w=1;name="instance_qps"'
    assert headers.get_list("retry-after") == [headers["retry-after"]]  # said once
    framing = {"content-type", "content-length", "date", "server"}
    assert set(direct.headers) - framing <= set(headers)


class OtlpCollector:
    """An OTLP/HTTP trace receiver on loopback: the spans exporters send it, decoded."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        spans: list[Any] = []
        self.spans = spans

        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        self.url = f"127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_a_callers_trace_context_reaches_the_instance_through_the_gateway(
    tmp_path: Path, transport: str
) -> None:
    """The instance exports its spans over OTLP to a collector; the caller's traceparent,
    sent to the gateway, is the parent of the instance's InferRequest span."""
    repository = tmp_path / "models"
    slow_double(repository)
    registry_url = f"embedded://{tmp_path / 'registry.db'}"
    registry = open_registry(registry_url)
    collector = OtlpCollector()
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    try:
        with server_in_process(
            repository,
            "--trace-config=mode=opentelemetry",
            "--trace-config=level=TIMESTAMPS",
            "--trace-config=rate=1",
            f"--trace-config=opentelemetry,url={collector.url}",
        ) as instance:
            register(registry, instance)
            with running_gateway(registry_url, tmp_path, "--transport", transport) as gateway:
                client = httpclient.InferenceServerClient(gateway.http_url)
                try:
                    item = httpclient.InferInput("x", [1, 2], "FP32")
                    item.set_data_from_numpy(X, binary_data=True)
                    headers = {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}
                    result = client.infer(MODEL, [item], headers=headers, request_id="through")
                    np.testing.assert_array_equal(result.as_numpy("y"), EXPECTED)
                finally:
                    client.close()
        # the instance stopped: its exporter sent what it held
        wait_until(lambda: any(s.name == "InferRequest" for s in collector.spans), timeout=20)
    finally:
        collector.close()
    roots = [s for s in collector.spans if s.name == "InferRequest"]
    assert len(roots) == 1
    assert roots[0].trace_id.hex() == trace_id
    assert roots[0].parent_span_id.hex() == "b7ad6b7169203331"
    attributes = {a.key: a.value.string_value for a in roots[0].attributes}
    assert attributes["triton.request_id"] == "through"
    names = {s.name for s in collector.spans if s.trace_id.hex() == trace_id}
    assert {"governance", "queue", "compute", "response"} <= names


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_each_sequence_sticks_to_one_instance_through_the_gateway(
    tmp_path: Path, transport: str
) -> None:
    """A stateful model's sequence keeps its state on one instance: the gateway sends every
    request of a sequence to the same one (rendezvous hashing on the sequence id)."""
    repository = tmp_path / "models"
    slow_double(repository)
    sequence_accumulator(repository, "accumulator")
    registry_url = f"embedded://{tmp_path / 'registry.db'}"
    registry = open_registry(registry_url)
    with (
        server_in_process(repository) as first,
        server_in_process(repository) as second,
    ):
        register(registry, first, "accumulator")
        register(registry, second, "accumulator")
        with running_gateway(registry_url, tmp_path, "--transport", transport) as gateway:
            client = grpcclient.InferenceServerClient(gateway.grpc_url)
            try:
                for sid in range(1, 9):
                    sums = []
                    for step, value in enumerate([sid, 10, 100]):
                        item = grpcclient.InferInput("INPUT", [1, 1], "INT32")
                        item.set_data_from_numpy(np.array([[value]], dtype=np.int32))
                        result = client.infer(
                            "accumulator", [item], sequence_id=sid,
                            sequence_start=step == 0, sequence_end=step == 2,
                        )  # fmt: skip
                        sums.append(int(result.as_numpy("OUTPUT")[0][0]))
                    assert sums == [sid, sid + 10, sid + 110]
                # on one stream, every step sent at once: a sequence's requests still reach
                # its instance in order (each waits for the one before it)
                answers: queue.Queue[Any] = queue.Queue()
                client.start_stream(callback=lambda result, error: answers.put((result, error)))
                for step, value in enumerate([1, 10, 100]):
                    for sid in range(11, 19):
                        item = grpcclient.InferInput("INPUT", [1, 1], "INT32")
                        item.set_data_from_numpy(np.array([[value * sid]], dtype=np.int32))
                        client.async_stream_infer(
                            "accumulator", [item], request_id=f"{sid}-{step}", sequence_id=sid,
                            sequence_start=step == 0, sequence_end=step == 2,
                        )  # fmt: skip
                streamed = {}
                for _ in range(24):
                    result, error = answers.get(timeout=30)
                    assert error is None, error
                    streamed[result.get_response().id] = int(result.as_numpy("OUTPUT")[0][0])
                client.stop_stream()
                for sid in range(11, 19):
                    assert [streamed[f"{sid}-{step}"] for step in range(3)] == [
                        sid, 11 * sid, 111 * sid,
                    ]  # fmt: skip
            finally:
                client.close()
        served = [
            httpx.get(f"http://{server.http_url}/v2/models/accumulator/stats").json()
            for server in (first, second)
        ]
        counts = [stats["model_stats"][0]["inference_count"] for stats in served]
        assert sum(counts) == 48 and all(count % 3 == 0 for count in counts)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_a_decoupled_model_streams_through_the_gateway(tmp_path: Path, transport: str) -> None:
    """A streamed call is forwarded on the instance's gRPC stream (whatever the gateway's
    transport for plain calls): a decoupled model's responses come through one by one, in
    order, marked final as the instance marks them; a plain model's one response too."""
    from tests.integration.test_triton_sequence_examples import _repeat_inputs
    from tests.support.models import repeat_int32

    repository = tmp_path / "models"
    slow_double(repository)
    repeat_int32(repository)
    registry_url = f"embedded://{tmp_path / 'registry.db'}"
    with server_in_process(repository) as server:
        register(open_registry(registry_url), server, "repeat_int32")
        with running_gateway(registry_url, tmp_path, "--transport", transport) as gateway:
            client = grpcclient.InferenceServerClient(gateway.grpc_url)
            answers: queue.Queue[Any] = queue.Queue()
            client.start_stream(callback=lambda result, error: answers.put((result, error)))
            try:
                client.async_stream_infer(
                    "repeat_int32", _repeat_inputs(np.arange(100, 105)), request_id="five",
                    enable_empty_final_response=True,
                )  # fmt: skip
                outs, finals = [], []
                for _ in range(6):
                    result, error = answers.get(timeout=30)
                    assert error is None, error
                    response = result.get_response()
                    assert response.id == "five"
                    finals.append(response.parameters["triton_final_response"].bool_param)
                    if not finals[-1]:
                        outs.append(int(result.as_numpy("OUT")[0]))
                assert outs == list(range(100, 105))
                assert finals == [False] * 5 + [True]
                item = grpcclient.InferInput("x", [1, 2], "FP32")
                item.set_data_from_numpy(X)
                client.async_stream_infer(MODEL, [item], request_id="plain")
                result, error = answers.get(timeout=30)
                assert error is None, error
                np.testing.assert_array_equal(result.as_numpy("y"), EXPECTED)
                with pytest.raises(queue.Empty):
                    answers.get(timeout=0.3)
            finally:
                client.stop_stream()
                client.close()


def test_a_gateway_attempt_timeout_that_is_not_positive_is_refused_with_its_flag() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "gateway", "--service", "com.example.x",
         "--attempt-timeout", "0", "--http-port", "0", "--grpc-port", "-1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    line = done.stdout + done.stderr
    assert "attempt_timeout must be a positive number of seconds, not 0.0" in line
    assert "rule=client/attempt-timeout" in line and "--attempt-timeout SECS" in line
