"""The local launcher: one ``modelyard serve`` process per planned instance, on this machine.

Every process is CPU only (cards are counted in the ledger, never claimed),
listens on a free loopback port, registers itself under the platform's
registry and loads the models its template names in explicit mode. A
process reads its registry weight from a file the launcher writes, so a
release changes traffic shares without restarts. A pinned model version is
served with ``serve --model-version MODEL=VERSION``, whatever the model's
``version_policy`` says.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from modelyard import error_rules
from modelyard.errors import ConfigError
from modelyard.processes import free_port, serve_command, wait_for_200


@dataclass(slots=True)
class LaunchedInstance:
    """One launched process as ``state.json`` records it."""

    name: str  # unique per launch: service/group/template/dc/index@rREVISION
    service: str
    group: str
    template: str
    data_center: str
    index: int
    queue: str
    spec: str
    cards: int
    loads: list[str]
    pins: dict[str, str] = field(default_factory=dict)  # model -> version served
    # its template's budget: the models of ``loads`` load when asked for within it ("": all
    # loaded at start)
    memory_budget: str = ""
    residency: str = "lru"  # with a budget: which idle model goes first (lru or cost)
    role: str = "stable"  # stable | canary
    weight: float = 1.0
    pid: int = 0
    http_port: int = 0
    log: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LaunchedInstance:
        return cls(**doc)


def is_alive(pid: int, name: str | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, given ``name``, is that instance's process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True
    try:
        stat = (proc / "stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return False
        if name is not None:
            return b"\0" + name.encode() + b"\0" in (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return True


# Every instance process this process started and has not stopped, whichever launcher
# started it (plan / apply make one per call): the control plane's supervisor reaps them
# here (``exited_children``) as soon as they exit, so none stays a zombie.
_CHILDREN: dict[int, tuple[subprocess.Popen[bytes], float]] = {}
_CHILDREN_LOCK = threading.Lock()


def _track(process: subprocess.Popen[bytes]) -> None:
    with _CHILDREN_LOCK:
        _CHILDREN[process.pid] = (process, time.monotonic())


def _untrack(pid: int) -> subprocess.Popen[bytes] | None:
    with _CHILDREN_LOCK:
        found = _CHILDREN.pop(pid, None)
    return found[0] if found else None


def exited_children() -> list[tuple[int, int, float]]:
    """The instance processes started here that exited since the last call, reaped:
    (pid, return code, seconds it ran)."""
    now = time.monotonic()
    with _CHILDREN_LOCK:
        done = [
            (pid, code, now - started)
            for pid, (process, started) in _CHILDREN.items()
            if (code := process.poll()) is not None
        ]
        for pid, _, _ in done:
            del _CHILDREN[pid]
    return done


def stop_recorded_gateways(state_dir: Path, timeout: float = 15.0) -> list[str]:
    """Stop gateways a control plane started and left behind (it was killed and not started
    again: ``platform down``); what was done. SIGINT: no successor is coming."""
    path = state_dir / "gateways.json"
    if not path.exists():
        return []
    done = []
    for entry in json.loads(path.read_text()):
        pid, service = int(entry["pid"]), str(entry["service"])
        if not is_alive(pid, service):
            continue
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while is_alive(pid, service) and time.monotonic() < deadline:
            time.sleep(0.05)
        if is_alive(pid, service):
            os.kill(pid, signal.SIGKILL)
        done.append(f"stopped the gateway of {service} pid {pid}, left by an earlier control plane")
    path.unlink()
    return done


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


class LocalLauncher:
    def __init__(self, state_dir: Path, registry_url: str, model_repository: Path) -> None:
        self.state_dir = state_dir
        self.registry_url = registry_url
        self.model_repository = model_repository

    def weight_file(self, name: str) -> Path:
        return self.state_dir / "weights" / f"{safe_name(name)}.txt"

    def set_weight(self, instance: LaunchedInstance, weight: float) -> None:
        instance.weight = weight
        path = self.weight_file(instance.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{weight:.6g}\n")
        tmp.replace(path)

    def command(self, instance: LaunchedInstance) -> list[str]:
        """The instance's ``serve`` command line, on the port recorded for it."""
        residency = (
            ["--model-residency", instance.residency, "--memory-budget", instance.memory_budget]
            if instance.memory_budget
            else []
        )
        command = serve_command(
            self.model_repository,
            http_port=instance.http_port,
            model_control_mode="explicit",
            service=instance.service,
            group=instance.group,
            registry=self.registry_url,
            data_center=instance.data_center,
            queue=instance.queue,
            template=instance.template,
            spec=instance.spec,
            weight=instance.weight,
            weight_file=self.weight_file(instance.name),
            instance_id=instance.name,
            load_model=list(instance.loads),
            model_version=[f"{m}={v}" for m, v in sorted(instance.pins.items())],
        )
        return [*command, *residency]

    def start(self, instance: LaunchedInstance) -> None:
        """Start the process and record its pid and port; ``wait_ready`` waits for it."""
        self.set_weight(instance, instance.weight)
        instance.http_port = free_port()
        logs = self.state_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"{safe_name(instance.name)}.log"
        command = self.command(instance)
        with log_path.open("ab") as log_file:
            process = subprocess.Popen(
                command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                start_new_session=True,  # outlives the command that launched it
            )
        _track(process)
        instance.pid = process.pid
        instance.log = str(log_path)

    def wait_ready(self, instance: LaunchedInstance, timeout: float = 60.0) -> None:
        url = f"http://127.0.0.1:{instance.http_port}/v2/health/ready"
        outcome = wait_for_200(url, lambda: is_alive(instance.pid), timeout)
        if outcome != "ready":
            happened = "exited" if outcome == "exited" else f"is not ready after {timeout:g}s"
            raise ConfigError.of(
                error_rules.LAUNCH,
                f"instance {instance.name} {happened}",
                where=f"its log {Path(instance.log).resolve()} says why",
            )

    def stop(self, instance: LaunchedInstance, timeout: float = 15.0) -> None:
        """SIGTERM (the process deregisters first), then SIGKILL after ``timeout``."""
        self.stop_all([instance], timeout)

    def stop_all(self, instances: Sequence[LaunchedInstance], timeout: float = 15.0) -> None:
        """``stop`` for each at once: all drain together, so stopping N takes one drain."""
        stopping = []
        for instance in instances:
            if not is_alive(instance.pid, instance.name):
                continue
            child = _untrack(instance.pid)  # stopped on purpose: no exit for the supervisor
            with contextlib.suppress(ProcessLookupError):  # it may have exited meanwhile
                os.kill(instance.pid, signal.SIGTERM)
            stopping.append((instance, child))

        def running(instance: LaunchedInstance, child: subprocess.Popen[bytes] | None) -> bool:
            if child is not None:
                return child.poll() is None
            return is_alive(instance.pid, instance.name)

        deadline = time.monotonic() + timeout
        while (stopping := [(i, c) for i, c in stopping if running(i, c)]) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        for instance, child in stopping:
            with contextlib.suppress(ProcessLookupError):  # it may have exited meanwhile
                os.kill(instance.pid, signal.SIGKILL)
            if child is not None:
                child.wait(5)
