"""An instance and a gateway started in this process, as tests and tools start them (on
the caller's event loop, or a thread of their own): they serve, stopping one stops each
part (the ports close, the models unload), and a start that fails leaves nothing running."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest

from modelyard.cli.gateway import GatewayServer, gateway_args
from modelyard.cli.in_process import ServerThread
from modelyard.cli.serve import InstanceServer
from modelyard.cli.serve_settings import serve_settings
from modelyard.errors import ConfigError
from modelyard.processes import free_port
from tests.support.models import slow_double

DOUBLE = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}


def test_an_instance_serves_in_process_and_stops_each_part(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
    settings = serve_settings(
        [
            "--model-repository", str(repository),
            "--http-port", str(http_port),
            "--grpc-port", str(grpc_port),
            "--metrics-port", str(metrics_port),
        ]
    )  # fmt: skip

    async def run() -> None:
        async with InstanceServer(settings) as server:
            assert (server.http_port, server.grpc_port) == (http_port, grpc_port)
            assert server.metrics_port == metrics_port
            base = f"http://127.0.0.1:{http_port}"
            async with httpx.AsyncClient() as client:
                answer = await client.post(f"{base}/v2/models/slow_double/infer", json=DOUBLE)
                assert answer.status_code == 200, answer.text
                # the model doubles, and adds its version times 1000
                assert answer.json()["outputs"][0]["data"] == [1002.0, 1004.0]
                metrics = await client.get(f"http://127.0.0.1:{metrics_port}/metrics")
                assert "nv_inference_request_success" in metrics.text
            manager = server.manager
            assert manager is not None and manager.is_ready()
        assert manager.ready_versions() == []  # unloaded on the way out
        for port in (http_port, metrics_port):
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"http://127.0.0.1:{port}/v2/health/live", timeout=2)

    asyncio.run(run())


def test_a_start_that_fails_stops_what_it_started(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    bad = serve_settings(["--model-repository", str(repository), "--service", "com.example.x"])
    with pytest.raises(ConfigError, match="needs --group"):
        asyncio.run(InstanceServer(bad).start())

    async def busy_metrics_port() -> None:
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        metrics_port = taken.getsockname()[1]
        http_port = free_port()
        settings = serve_settings(
            [
                "--model-repository", str(repository),
                "--http-port", str(http_port),
                "--grpc-port", str(free_port()),
                "--metrics-port", str(metrics_port),
            ]
        )  # fmt: skip
        try:
            with pytest.raises(ConfigError) as refused:
                await InstanceServer(settings).start()
            assert str(metrics_port) in refused.value.line()
        finally:
            taken.close()
        # the HTTP socket it had opened before is closed again: the port can be bound
        with socket.socket() as again:
            again.bind(("127.0.0.1", http_port))

    asyncio.run(busy_metrics_port())


def test_a_server_on_its_own_thread_serves_synchronous_callers_and_stops(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    http_port = free_port()
    settings = serve_settings(
        [
            "--model-repository", str(repository), "--http-port", str(http_port),
            "--grpc-port", "-1", "--metrics-port", "-1",
        ]
    )  # fmt: skip
    with ServerThread(InstanceServer(settings)) as server:
        assert server.http_port == http_port
        base = f"http://127.0.0.1:{http_port}"
        answer = httpx.post(f"{base}/v2/models/slow_double/infer", json=DOUBLE)
        assert answer.status_code == 200, answer.text
        assert answer.json()["outputs"][0]["data"] == [1002.0, 1004.0]
    assert server.manager is not None
    assert server.manager.ready_versions() == []  # stopped: unloaded, the port closed
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base}/v2/health/live", timeout=2)


def test_a_server_thread_that_cannot_start_raises_its_error_in_the_caller(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    bad = serve_settings(["--model-repository", str(repository), "--service", "com.example.x"])
    thread = ServerThread(InstanceServer(bad))
    with pytest.raises(ConfigError, match="needs --group"):
        thread.start()
    thread.stop()  # nothing left to stop: returns at once


def test_a_gateway_in_process_forwards_to_an_instance_in_process(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    registry = f"embedded://{tmp_path / 'registry.db'}"
    service = ["--service", "com.example.inprocess", "--registry", registry]
    instance_settings = serve_settings(
        [
            "--model-repository", str(repository), *service, "--group", "g",
            "--http-port", str(free_port()), "--grpc-port", "-1", "--metrics-port", "-1",
            "--registry-ttl", "2",
        ]
    )  # fmt: skip
    forwarding_args = gateway_args([*service, "--http-port", str(free_port()), "--grpc-port", "-1"])

    async def run() -> None:
        async with InstanceServer(instance_settings), GatewayServer(forwarding_args) as gateway:
            base = f"http://127.0.0.1:{gateway.http_port}/v2/models/slow_double"
            async with httpx.AsyncClient() as client:
                for _ in range(100):  # until the gateway's view holds the instance
                    if (await client.get(f"{base}/ready")).status_code == 200:
                        break
                    await asyncio.sleep(0.1)
                answer = await client.post(f"{base}/infer", json=DOUBLE)
                assert answer.status_code == 200, answer.text
                assert answer.json()["outputs"][0]["data"] == [1002.0, 1004.0]

    asyncio.run(run())


def test_a_pinned_version_is_served_whatever_the_version_policy_says(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository, versions=(1, 2, 3))  # its policy: the latest one
    settings = serve_settings(
        [
            "--model-repository", str(repository), "--http-port", str(free_port()),
            "--grpc-port", "-1", "--metrics-port", "-1", "--model-version", "slow_double=2",
        ]
    )  # fmt: skip

    async def run() -> None:
        async with InstanceServer(settings) as server:
            assert server.manager is not None
            assert [v.version for v in server.manager.ready_versions()] == [2]

    asyncio.run(run())


def test_a_pinned_version_the_repository_lacks_says_which_flag_asked_for_it(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    slow_double(repository, versions=(1,))
    settings = serve_settings(
        [
            "--model-repository", str(repository), "--http-port", str(free_port()),
            "--grpc-port", "-1", "--metrics-port", "-1", "--model-version", "slow_double=9",
            "--strict-readiness", "false",
        ]
    )  # fmt: skip

    async def run() -> None:
        async with InstanceServer(settings) as server:
            assert server.manager is not None and server.manager.ready_versions() == []
            (row,) = server.manager.index()
            assert "no version directory that its version policy selects" in row["reason"]
            assert "serve --model-version slow_double=VERSION" in row["reason"]

    asyncio.run(run())


@pytest.mark.parametrize("pin", ["slow_double", "slow_double=two", "=2"])
def test_a_pin_that_names_no_version_number_is_refused(
    pin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        serve_settings(["--model-repository", "m", "--model-version", pin])
    assert f"expected MODEL=VERSION (a version number), got {pin!r}" in capsys.readouterr().err
