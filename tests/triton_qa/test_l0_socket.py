"""Triton's qa/L0_socket: which ports and addresses tritonserver takes, and which clash.

test.sh is bash alone: it starts tritonserver about forty times and looks whether each
start holds or fails. Here the same command lines, each on a server of its own in the
test's network namespace, and each answer made stricter than test.sh's: a start that
holds reaches ready (its log's ``server_ready``; test.sh only sees a process 15 s later),
and one that clashes exits by itself, not zero, before it is ready (test.sh takes a
server that never gets ready on port 8000 as refused, which a server listening
elsewhere also is).

For HTTP and gRPC, with the default addresses and with explicit ones (all 127.0.0.1,
or 127.0.0.1, .2 and .3 for HTTP, gRPC and metrics): a disabled front door's port or
address may be anything (-47) and may be another's port; an enabled one's may not
(HTTP on gRPC's 8001, gRPC on 8000, either on metrics' 8002, metrics on 8000 or 8001,
HTTP and gRPC both on 8003), unless they are on different addresses (then 127.0.0.1:8007
answers ready with both on 8007). Then three servers on the same ports: without
``--reuse-http-port``/``--reuse-grpc-port`` the second and third are refused; with both,
all three start, and eleven runs of the ``simple`` client example over that protocol
reach each of them (SO_REUSEPORT spreads the connections), as each one's
``nv_inference_request_success`` shows; the kernel picks a server per connection at
random, so one left out of eleven (about one run in thirty) gets eleven more. ``simple``
is Triton's example model of the folder's config (its ONNX stand-in,
tests/support/models.py). About 70 s.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import HostProcess, LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

SAME = ["--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1",
        "--metrics-address", "127.0.0.1"]  # fmt: skip
DIFF = ["--http-address", "127.0.0.1", "--grpc-address", "127.0.0.2",
        "--metrics-address", "127.0.0.3"]  # fmt: skip
READY = "server_ready"


class Socket:
    """Servers started in one namespace on one repository; what went other than asked."""

    def __init__(self, host: LoopbackHost, work: Path) -> None:
        self.host, self.work = host, work
        self.models = work / "models"
        self.failures: list[str] = []
        self._count = 0

    def _start(self, args: list[str]) -> tuple[HostProcess, str]:
        self._count += 1
        name = f"server{self._count}"
        argv = [*harness.TRITONSERVER, f"--model-repository={self.models}", *args]
        return self.host.start(argv, self.work / f"{name}.log"), " ".join(args)

    def _until(self, process: HostProcess, timeout: float = 60) -> bool:
        """Whether it got ready (False: it exited first, or never)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY in process.log():
                return True
            if not process.running():
                return False
            time.sleep(0.1)
        return False

    def starts(self, *args: str, probe: str | None = None) -> None:
        """The server gets ready; ``probe``: an address:port whose HTTP health then
        answers 200."""
        process, line = self._start(list(args))
        try:
            if not self._until(process):
                self.failures.append(f"did not start: {line}\n{process.log()[-2000:]}")
            elif probe is not None and self._health(probe) != "200":
                self.failures.append(f"{probe} not ready: {line}")
        finally:
            process.stop()

    def clashes(self, *args: str) -> None:
        """The server exits by itself, not zero, before it is ready."""
        process, line = self._start(list(args))
        try:
            if self._until(process):
                self.failures.append(f"started: {line}")
                return
            code = process.process.wait(30)
            if code == 0:
                self.failures.append(f"exited 0: {line}\n{process.log()[-2000:]}")
        except subprocess.TimeoutExpired:
            self.failures.append(f"neither ready nor ended: {line}")
        finally:
            process.stop()

    def _health(self, address: str) -> str:
        url = f"http://{address}/v2/health/ready"
        curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url]
        done = subprocess.run(self.host.command(curl), capture_output=True, text=True, timeout=30)
        return done.stdout

    def metric(self, address: str, name: str) -> float:
        done = subprocess.run(
            self.host.command(["curl", "-s", f"http://{address}/metrics"]),
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return sum(float(line.rsplit(" ", 1)[1]) for line in done.stdout.splitlines()
                   if line.startswith(name + "{"))  # fmt: skip


def _single_servers(socket: Socket) -> None:
    """test.sh's first loop: each protocol, default and explicit addresses."""
    for address in ("default", "explicit"):
        same = SAME if address == "explicit" else []
        for p, other in (("http", "8001"), ("grpc", "8000")):
            if address == "default":
                socket.starts(f"--{p}-port", "-47", f"--allow-{p}", "0")
            else:
                socket.starts(f"--{p}-address", "-47", f"--allow-{p}", "0")
            socket.starts(*same, f"--{p}-port", other, f"--allow-{p}", "0")
            socket.clashes(*same, f"--{p}-port", other)
            if address == "explicit":
                socket.starts(*DIFF, f"--{p}-port", other)
            q = "grpc" if p == "http" else "http"
            socket.starts(*same, f"--{p}-port", "8007", f"--{q}-port", "8007", f"--allow-{p}", "0")
            if p == "http":
                socket.clashes(*same, "--http-port", "8003", "--grpc-port", "8003")
            if address == "explicit":
                socket.starts(*DIFF, f"--{p}-port", "8007", f"--{q}-port", "8007",
                              probe="127.0.0.1:8007")  # fmt: skip
            socket.starts(*same, f"--{p}-port", "8002", f"--allow-{p}", "0")
            socket.clashes(*same, f"--{p}-port", "8002")
            if address == "explicit" and p == "grpc":
                socket.starts(*DIFF, "--grpc-port", "8002", probe="127.0.0.1:8000")
            metrics_on = "8000" if p == "http" else "8001"
            socket.starts(*same, "--metrics-port", metrics_on, "--allow-metrics", "0")
            socket.clashes(*same, "--metrics-port", metrics_on)
            if address == "explicit" and p == "grpc":
                socket.starts(*DIFF, "--metrics-port", "8001", probe="127.0.0.1:8000")


def _shared_ports(socket: Socket, p: str) -> None:
    """test.sh's second loop: three servers on one protocol's port."""
    reuse_other = "--reuse-grpc-port=true" if p == "http" else "--reuse-http-port=true"
    first, line = socket._start(["--metrics-port", "8002", reuse_other])
    try:
        if not socket._until(first):
            socket.failures.append(f"did not start: {line}\n{first.log()[-2000:]}")
            return
        socket.clashes("--metrics-port", "8003", reuse_other)
        socket.clashes("--metrics-port", "8004", reuse_other)
    finally:
        first.stop()
    both = ["--reuse-http-port=true", "--reuse-grpc-port=true"]
    started = [
        socket._start(["--metrics-port", "8002", *both]),
        socket._start(["--metrics-address", "0.0.0.0", "--metrics-port", "8003", *both]),
        socket._start(["--metrics-address", "127.0.0.2", "--metrics-port", "8004", *both]),
    ]
    try:
        for process, line in started:
            if not socket._until(process):
                socket.failures.append(f"did not start: {line}\n{process.log()[-2000:]}")
                return
        client = harness.CLIENT_EXAMPLES / f"simple_{p}_infer_client.py"
        addresses = ("127.0.0.1:8002", "127.0.0.1:8003", "127.0.0.2:8004")
        counts: list[float] = []
        for _ in range(2):  # the kernel spreads connections at random: a second eleven
            runs = [subprocess.Popen(socket.host.command([sys.executable, str(client)]),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for _ in range(11)]  # fmt: skip
            for run in runs:
                run.wait(120)
            counts = [socket.metric(a, "nv_inference_request_success") for a in addresses]
            if all(counts):
                break
        if not all(counts):
            socket.failures.append(f"{p}: requests per server {counts}, each should have some")
    finally:
        for process, _ in started:
            process.stop()


def test_socket(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_socket")
    shutil.rmtree(work / "models")  # the folder's config of Triton's TensorFlow ``simple``
    simple_add_sub(work / "models")
    socket = Socket(host, work)
    _single_servers(socket)
    for p in ("http", "grpc"):
        _shared_ports(socket, p)
    assert not socket.failures, "\n".join(socket.failures)
