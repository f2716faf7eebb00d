"""A real ``etcd`` on free loopback ports in a temporary data dir, for tests.

etcd's HTTP API breaks when it is bound to port 0, so the ports are picked
here and kept: ``stop`` and ``start`` restart the same member on the same ports
with the same data, as an operator's restart would.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.servers import free_ports


class EtcdServer:
    """One single-member etcd cluster."""

    def __init__(self, data_dir: Path, client_port: int, peer_port: int) -> None:
        self.data_dir = data_dir
        self.client_port = client_port
        self.peer_port = peer_port
        self.endpoint = f"http://127.0.0.1:{client_port}"
        self.url = f"etcd://127.0.0.1:{client_port}"
        self.log_path = data_dir.parent / f"etcd-{client_port}.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> None:
        binary = shutil.which("etcd")
        if binary is None:
            raise RuntimeError(
                "etcd is not on PATH; the registry tests need a real etcd: "
                "apt-get install etcd-server"
            )
        peer = f"http://127.0.0.1:{self.peer_port}"
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [
                    binary,
                    "--name",
                    "test",
                    "--data-dir",
                    str(self.data_dir),
                    "--listen-client-urls",
                    self.endpoint,
                    "--advertise-client-urls",
                    self.endpoint,
                    "--listen-peer-urls",
                    peer,
                    "--initial-advertise-peer-urls",
                    peer,
                    "--initial-cluster",
                    f"test={peer}",
                    "--logger",
                    "zap",
                    "--log-outputs",
                    "stderr",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"etcd exited with {self._process.returncode}; see {self.log_path}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"etcd was not healthy on {self.endpoint} in {timeout}s")
            time.sleep(0.05)

    def healthy(self) -> bool:
        try:
            response = httpx.get(f"{self.endpoint}/health", timeout=0.5)
            return response.status_code == 200 and response.json().get("health") == "true"
        except (httpx.HTTPError, ValueError):
            return False

    def stop(self) -> None:
        """Stop it cleanly; the data dir and ports stay for ``start``."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._process = None

    def kill(self) -> None:
        """Kill it hard, as a crash would."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None


@contextmanager
def running_etcd(directory: Path) -> Iterator[EtcdServer]:
    client_port, peer_port = free_ports(2)
    server = EtcdServer(directory / f"etcd-data-{client_port}", client_port, peer_port)
    server.start()
    try:
        yield server
    finally:
        server.kill()
