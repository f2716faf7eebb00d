"""Real ``modelyard serve`` processes register themselves, on both registry backends.

An entry appears once the instance is ready, follows an explicit unload, is
gone on SIGTERM while the process still drains, and a SIGKILLed instance falls
out of the registry within its TTL plus a second.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from modelyard.discovery import Instance, open_registry
from tests.support.etcd_server import EtcdServer
from tests.support.models import bytes_echo, slow_double
from tests.support.servers import ServerProcess, running_server, wait_until

pytestmark = pytest.mark.slow

SERVICE = "com.example.test.ranker"
TTL = 2.0
DELAY = 1.5  # seconds slow_double takes per request: the request in flight during shutdown


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("registry-models") / "models"
    slow_double(repository, delay=DELAY)
    bytes_echo(repository)
    return repository


@pytest.fixture(params=["embedded", "etcd"])
def registry_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "embedded":
        return f"embedded://{tmp_path / 'registry.db'}"
    server: EtcdServer = request.getfixturevalue("etcd")
    return server.url


def entries(url: str) -> dict[str, Instance]:
    async def resolve() -> dict[str, Instance]:
        registry = open_registry(url)
        try:
            snapshot = await registry.resolve(SERVICE)
        finally:
            await registry.aclose()
        return {i.instance_id: i for i in snapshot.instances}

    return asyncio.run(resolve())


def instances_cli(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "modelyard.cli.main",
            "instances",
            SERVICE,
            "--registry",
            url,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def infer_slowly(server: ServerProcess, results: list[int]) -> None:
    body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
    response = httpx.post(
        f"http://{server.http_url}/v2/models/slow_double/infer", json=body, timeout=30
    )
    results.append(response.status_code)


def test_instances_register_follow_models_and_leave_on_stop_or_crash(
    repository: Path, registry_url: str, tmp_path: Path
) -> None:
    flags = [
        "--model-control-mode",
        "explicit",
        "--load-model",
        "slow_double",
        "--load-model",
        "bytes_echo",
        "--service",
        SERVICE,
        "--registry",
        registry_url,
        "--registry-ttl",
        str(TTL),
        "--data-center",
        "dc1",
        "--queue",
        "online",
        "--spec",
        "2C/4G",
    ]
    with (
        running_server(repository, tmp_path, *flags, "--group", "blue") as kept,
        running_server(
            repository, tmp_path, *flags, "--group", "green", "--instance-id", "doomed"
        ) as doomed,
    ):
        wait_until(lambda: {kept.http_url, "doomed"} <= set(entries(registry_url)), timeout=10)
        entry = entries(registry_url)[kept.http_url]
        assert (entry.group, entry.http, entry.grpc) == ("blue", kept.http_url, kept.grpc_url)
        assert entry.models == {"bytes_echo": {"1": "READY"}, "slow_double": {"1": "READY"}}
        assert entry.labels == {"data_center": "dc1", "queue": "online"}
        assert (entry.spec, entry.state) == ("2C/4G", "SERVING")

        listed = instances_cli(registry_url)
        assert listed.returncode == 0, listed.stderr
        row = next(line for line in listed.stdout.splitlines() if line.startswith(kept.http_url))
        assert "blue" in row and "SERVING" in row and "slow_double/1" in row
        as_json = json.loads(instances_cli(registry_url, "--json").stdout)
        assert {i["instance_id"] for i in as_json["instances"]} == {kept.http_url, "doomed"}

        unloaded = httpx.post(f"http://{kept.http_url}/v2/repository/models/bytes_echo/unload")
        assert unloaded.status_code == 200, unloaded.text
        wait_until(
            lambda: "bytes_echo" not in entries(registry_url)[kept.http_url].models, timeout=5
        )
        assert entries(registry_url)[kept.http_url].models == {"slow_double": {"1": "READY"}}

        doomed.process.send_signal(signal.SIGKILL)
        doomed.process.wait(5)
        killed_at = time.monotonic()
        wait_until(lambda: "doomed" not in entries(registry_url), timeout=TTL + 1.0)
        assert time.monotonic() - killed_at <= TTL + 1.0

        # SIGTERM with a request in flight: the entry goes first, the request still completes
        results: list[int] = []
        in_flight = threading.Thread(target=infer_slowly, args=(kept, results))
        in_flight.start()
        time.sleep(0.3)
        kept.process.send_signal(signal.SIGTERM)
        wait_until(lambda: kept.http_url not in entries(registry_url), timeout=DELAY)
        assert kept.process.poll() is None, "deregistration must come before exit"
        in_flight.join(30)
        assert results == [200]
        assert kept.process.wait(15) == 0
        assert "registry_deregistered" in kept.log()
        assert entries(registry_url) == {}
