"""Start real modelyard servers on free loopback ports for tests: in this process
(``server_in_process``, the ``InstanceServer`` that ``modelyard serve`` runs) or as a child
(``running_server``), where a test needs the process itself: its log, its exit, a signal,
a flag that sets something process-wide."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from modelyard.cli.in_process import ServerThread
from modelyard.cli.serve import InstanceServer
from modelyard.cli.serve_settings import serve_settings
from modelyard.processes import serve_arguments, serve_command
from modelyard.server.manager import ModelManager


def free_port() -> int:
    return free_ports(1)[0]


# Ports for servers the tests start come from below Linux's ephemeral range (32768-60999 by
# default): a port the kernel hands out with bind(0) can be taken, before the server binds
# it, as the local port of any outgoing connection, or be handed to a server started at the
# same moment in another thread. None is handed out twice in one test run.
_PORTS = range(20000, 32000)
_handed_out: set[int] = set()
_handing_out = threading.Lock()


def free_ports(count: int) -> list[int]:
    """Distinct ports free now and not handed out before in this test run."""
    picked: list[int] = []
    with _handing_out:
        while len(picked) < count:
            port = random.choice(_PORTS)
            if port in _handed_out:
                continue
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:  # in use by something else
                    continue
            _handed_out.add(port)
            picked.append(port)
    return picked


class Served:
    """Where a server the tests started listens."""

    def __init__(self, http_port: int, grpc_port: int, metrics_port: int) -> None:
        self.http_port = http_port
        self.grpc_port = grpc_port
        self.metrics_port = metrics_port

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


class ServerInProcess(Served):
    def __init__(self, http_port: int, grpc_port: int, metrics_port: int, manager: ModelManager):
        super().__init__(http_port, grpc_port, metrics_port)
        self.manager = manager


@contextmanager
def server_in_process(
    repository: Path, *extra: str, wait_ready: bool = True
) -> Iterator[ServerInProcess]:
    """``modelyard serve`` with these flags, in this process on a thread of its own."""
    port, grpc_port, metrics_port = free_ports(3)
    flags = serve_arguments(
        repository, http_port=port, grpc_port=grpc_port, metrics_port=metrics_port
    )
    with ServerThread(InstanceServer(serve_settings([*flags, *extra]))) as instance:
        assert instance.manager is not None
        server = ServerInProcess(port, grpc_port, metrics_port, instance.manager)
        if wait_ready:
            wait_until(server.manager.is_ready, timeout=30)
        yield server


class ServerProcess(Served):
    def __init__(
        self,
        process: subprocess.Popen[bytes],
        http_port: int,
        grpc_port: int,
        metrics_port: int,
        log_path: Path,
    ):
        super().__init__(http_port, grpc_port, metrics_port)
        self.process = process
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def wait_until(predicate, timeout: float = 60.0, interval: float = 0.05) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError("condition not met in time")


@contextmanager
def running_server(
    repository: Path, log_dir: Path, *extra: str, wait_ready: bool = True
) -> Iterator[ServerProcess]:
    port, grpc_port, metrics_port = free_ports(3)
    log_path = log_dir / f"server-{port}.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [
                *serve_command(
                    repository, http_port=port, grpc_port=grpc_port, metrics_port=metrics_port
                ),
                *extra,
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = ServerProcess(process, port, grpc_port, metrics_port, log_path)

    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{server.log()}")
        try:
            path = "/v2/health/ready" if wait_ready else "/v2/health/live"
            return httpx.get(f"http://{server.http_url}{path}", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, timeout=120)
        yield server
    finally:
        server.stop()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def metric_samples(text: str) -> Samples:
    """Every sample of a /metrics text, by name and sorted labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def scrape(server: Served) -> Samples:
    return metric_samples(httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text)
