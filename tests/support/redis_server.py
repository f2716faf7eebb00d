"""A real ``redis-server`` on a free loopback port, for integration tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.servers import free_port


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process; ``stop`` and ``start`` keep the same port."""

    def __init__(self, port: int, logs: Path) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self._logs = logs
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not on PATH; the cluster-qps tests need a real Redis: "
                "apt-get install redis-server"
            )
        log = (self._logs / f"redis-{self.port}.log").open("ab")
        self._process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not _answers_ping(self.port):
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited with {self._process.returncode}; see {self._logs}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"redis-server did not answer PING on port {self.port} in {timeout}s"
                )
            time.sleep(0.02)

    def stop(self) -> None:
        """Kill it hard, as a crash would."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None


@contextmanager
def running_redis(logs: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), logs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
