"""Hosts for multi-host tests: Linux network namespaces on one bridge.

Each host is a namespace with its own loopback and one ``eth0`` (10.200.0.N/24)
whose other end sits on a bridge in a switch namespace of its own, so nothing
of the machine's own network is touched and deleting the namespaces removes
every link. A host's link is cut on the switch side: the host drops off the
network without a word, as when its cable or its top-of-rack port fails (its
peers' packets vanish; their connections hang rather than being refused).

Making namespaces needs root and iproute2; ``unavailable()`` says why not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

SUBNET = "10.200.0"
PREFIX = "modelyard-test-"  # then the test process's pid: a dead pid's namespaces are swept


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "needs iproute2's `ip` (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "needs root to make network namespaces (ip netns add)"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _sweep_stale() -> None:
    """Delete the namespaces a test process left when it was killed before its cleanup."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.strip() else ""
        pid = name.removeprefix(PREFIX).partition("-")[0]
        if name.startswith(PREFIX) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class HostProcess:
    """A process started on one host, its output in a log file."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.process = process
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash would (its children too: it leads a process group)."""
        if self.running():
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.running():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


class Network:
    """``hosts`` namespaces, numbered from 1, on one bridge; a context manager."""

    def __init__(self, hosts: int) -> None:
        tag = f"{PREFIX}{os.getpid()}"
        self.switch = f"{tag}-switch"
        self.hosts = [f"{tag}-h{n}" for n in range(1, hosts + 1)]
        self._processes: list[HostProcess] = []

    def address(self, host: int, extra: int = 0) -> str:
        """Host ``host``'s address; ``extra`` > 0 names its ``add_address`` ones."""
        return f"{SUBNET}.{host + 10 * extra}"

    def __enter__(self) -> Network:
        _sweep_stale()
        try:
            _ip("netns", "add", self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for number, host in enumerate(self.hosts, start=1):
                _ip("netns", "add", host)
                _ip("-n", host, "link", "set", "lo", "up")
                port = f"p{number}"
                _ip("link", "add", "eth0", "netns", host, "type", "veth",
                    "peer", "name", port, "netns", self.switch)  # fmt: skip
                _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
                _ip("-n", host, "addr", "add", f"{self.address(number)}/24", "dev", "eth0")
                _ip("-n", host, "link", "set", "eth0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for process in self._processes:
            process.kill()
        for name in [*self.hosts, self.switch]:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)

    def add_address(self, host: int, extra: int) -> str:
        """A second address on ``host`` (a service of its own there, routable apart)."""
        address = self.address(host, extra)
        _ip("-n", self.hosts[host - 1], "addr", "add", f"{address}/24", "dev", "eth0")
        return address

    def start(
        self, host: int, argv: Sequence[str], log_path: Path, cwd: Path | None = None
    ) -> HostProcess:
        """Run ``argv`` on ``host``; the network kills it on close if the test did not."""
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.hosts[host - 1], *argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                cwd=cwd,
                start_new_session=True,
            )
        started = HostProcess(process, log_path)
        self._processes.append(started)
        return started

    def cut(self, host: int) -> None:
        """Take ``host``'s switch port down: its packets, and everyone's to it, vanish."""
        _ip("-n", self.switch, "link", "set", f"p{host}", "down")

    def restore(self, host: int) -> None:
        _ip("-n", self.switch, "link", "set", f"p{host}", "up")

    def block(self, host: int, address: str) -> None:
        """From ``host``, ``address`` becomes unreachable (a route that drops its packets)."""
        _ip("-n", self.hosts[host - 1], "route", "add", "blackhole", f"{address}/32")

    def unblock(self, host: int, address: str) -> None:
        _ip("-n", self.hosts[host - 1], "route", "del", "blackhole", f"{address}/32")


class LoopbackHost:
    """One namespace with only its own loopback: a process there may listen on
    localhost:8000 whatever listens on the machine's. A context manager."""

    def __init__(self, tag: str) -> None:
        self.name = f"{PREFIX}{os.getpid()}-{tag}"
        self._processes: list[HostProcess] = []
        self._shm: Path | None = None

    def __enter__(self) -> LoopbackHost:
        _sweep_stale()
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        _ip("netns", "add", self.name)
        try:
            _ip("-n", self.name, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for process in self._processes:
            process.kill()
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run in this namespace (with its own ``/dev/shm`` where one is given)."""
        if self._shm is not None:  # `ip netns exec` gives each command a mount namespace
            argv = ["sh", "-c", 'mount --bind "$0" /dev/shm && exec "$@"', str(self._shm), *argv]
        return ["ip", "netns", "exec", self.name, *argv]

    @contextlib.contextmanager
    def own_shm(self, directory: Path) -> Iterator[Path]:
        """Within the block, what runs here sees ``directory`` as its ``/dev/shm``: POSIX
        shared memory of its own, as a container has (the machine's is shared with
        whatever else runs on it), which the test can list."""
        directory.mkdir(parents=True, exist_ok=True)
        self._shm = directory
        try:
            yield directory
        finally:
            self._shm = None

    def start(
        self,
        argv: Sequence[str],
        log_path: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> HostProcess:
        """Run ``argv`` here; killed on close if the test did not stop it."""
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                self.command(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env or os.environ, PYTHONUNBUFFERED="1"),
                cwd=cwd,
                start_new_session=True,
            )
        started = HostProcess(process, log_path)
        self._processes.append(started)
        return started
