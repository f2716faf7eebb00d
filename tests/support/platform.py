"""`modelyard platform up` as a real process, for the control-plane and console tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from modelyard.control.apply import State
from modelyard.control.launcher import is_alive
from tests.support.servers import free_ports, wait_until

SERVICE = "com.example.double"

_SPEC = """
quotas:
  q:
    owner: {{org: test}}
    cpu_cores: {cpu_cores}
    memory_gb: 64
    cards: {{dc1: {{A30-24G: {quota_cards}}}}}
queues:
  dc1-gpu: {{data_center: dc1, pool: gpu, gpu_models: [A30-24G]}}
  dc1-cpu: {{data_center: dc1, pool: cpu}}
services:
  com.example.double:
    interfaces: [infer, metadata]
    quota: q
    data_centers: [dc1]
    total_cards: {main_cards}
    models: [slow_double, bytes_echo]
    groups:
      main:
        models: [slow_double]
        cards: {main_cards}
        templates:
          t: {{spec: 1C/1G/A30-24G*1, queues: {{dc1: dc1-gpu}}, replicas: 1, loads: [slow_double]}}
        {autoscaling}
      light:
        models: [bytes_echo]
        cards: 0
        templates:
          cpu: {{spec: 1C/1G, queues: {{dc1: dc1-cpu}}, replicas: 1, loads: [bytes_echo]}}
"""


def double_spec(
    quota_cards: int, main_cards: int, autoscaling: str = "", cpu_cores: int = 64
) -> str:
    """A service with a "GPU" group serving slow_double and a CPU-only one serving bytes_echo
    (each instance 1 core)."""
    line = f"autoscaling: {autoscaling}" if autoscaling else ""
    return _SPEC.format(
        quota_cards=quota_cards, main_cards=main_cards, autoscaling=line, cpu_cores=cpu_cores
    )


@dataclass
class RunningPlatform:
    process: subprocess.Popen[bytes]
    control: str  # http://127.0.0.1:PORT
    gateway: str  # http://127.0.0.1:PORT
    state: Path
    registry: str
    log: Path
    headers: dict[str, str]

    def get(self, path: str) -> Any:
        response = httpx.get(f"{self.control}{path}", headers=self.headers, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.control}{path}", json=body, headers=self.headers, timeout=120)

    def instances(self, group: str | None = None) -> list[dict[str, Any]]:
        found = []
        for service in self.get("/api/v1/overview")["services"]:
            for g in service["groups"]:
                if group is None or g["key"] == group:
                    found += g["instances"]
        return found


@contextmanager
def running_platform(
    spec: Path,
    state: Path,
    repository: Path,
    *extra: str,
    api_key: str | None = None,
    expected_instances: int = 1,
    ports: tuple[int, int] | None = None,
) -> Iterator[RunningPlatform]:
    """``ports``: the control API's and the gateway's (default: free ones)."""
    control_port, gateway_port = ports or free_ports(2)
    log_path = state.parent / f"platform-{control_port}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "modelyard.cli.main",
            "platform",
            "up",
            "-f",
            str(spec),
            "--state",
            str(state),
            "--model-repository",
            str(repository),
            "--port",
            str(control_port),
            "--gateway-port",
            str(gateway_port),
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    running = RunningPlatform(
        process,
        f"http://127.0.0.1:{control_port}",
        f"http://127.0.0.1:{gateway_port}",
        state,
        f"embedded://{state.resolve() / 'registry.db'}",
        log_path,
        {"x-api-key": api_key} if api_key else {},
    )
    try:

        def ready() -> bool:
            assert process.poll() is None, log_path.read_text()
            try:
                instances = running.instances()
            except (httpx.HTTPError, AssertionError):
                return False
            return len(instances) >= expected_instances and all(i["live"]["up"] for i in instances)

        wait_until(ready, timeout=120, interval=0.3)
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()
        if (state / "state.json").exists():
            for instance in State.load(state).instances:
                if is_alive(instance.pid, instance.name):
                    os.kill(instance.pid, signal.SIGKILL)
