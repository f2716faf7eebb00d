"""A data centre lost for real: the control plane sees none of its instances answer, places
replacements in the surviving one within quota and records it; restoring it undoes that."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from modelyard.control.launcher import is_alive
from tests.support.models import bytes_echo
from tests.support.platform import running_platform
from tests.support.servers import wait_until

pytestmark = pytest.mark.slow

SERVICE = "com.example.echo"
GROUP = f"{SERVICE}/main"
SPEC = """
quotas:
  q: {cpu_cores: 4, memory_gb: 8}
queues:
  dc1-cpu: {data_center: dc1, pool: cpu}
  dc2-cpu: {data_center: dc2, pool: cpu}
services:
  com.example.echo:
    interfaces: [infer, metadata]
    quota: q
    data_centers: [dc1, dc2]
    models: [bytes_echo]
    groups:
      main:
        models: [bytes_echo]
        templates:
          cpu: {spec: 1C/1G, queues: {dc1: dc1-cpu, dc2: dc2-cpu}, replicas: 1,
                loads: [bytes_echo]}
"""
ECHO = {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["hi"]}]}


def dr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", "dr", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_data_centre_that_stops_answering_is_replaced_in_the_other_and_restored(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    bytes_echo(repository)
    spec = tmp_path / "platform.yaml"
    spec.write_text(SPEC)
    state = tmp_path / "state"
    with running_platform(
        spec, state, repository, "--autoscale", "off", "--data-center-lost-after", "3",
        expected_instances=2,
    ) as platform:  # fmt: skip

        def placed() -> list[str]:
            return sorted(i["data_center"] for i in platform.instances(GROUP) if i["live"]["up"])

        assert placed() == ["dc1", "dc2"]
        (frozen,) = [i for i in platform.instances(GROUP) if i["data_center"] == "dc2"]
        os.kill(frozen["pid"], signal.SIGSTOP)  # alive, but nothing it holds answers
        try:
            wait_until(lambda: placed() == ["dc1", "dc1"], timeout=60, interval=0.5)
        finally:
            if is_alive(frozen["pid"]):
                os.kill(frozen["pid"], signal.SIGCONT)
        assert not is_alive(frozen["pid"], frozen["name"])  # stopped, not left behind
        events = platform.get(f"/api/v1/groups/{GROUP}/events")["events"]
        (event,) = [e for e in events if e["action"] == "dr fail-over"]
        assert event["from"]["lost"] == "dc2"
        assert event["from"]["how"] == "no instance answered for 3s"
        assert event["to"] == {"placed": {"dc1": 1}}
        assert event["numbers"]["stopped"] == [frozen["name"]]
        assert event["numbers"]["state"] == "whole" and event["numbers"]["replaced"] == 1
        assert list(platform.get("/api/v1/dr")["lost"]) == ["dc2"]
        # what-if from where instances run now: dc1 holds both, and dc2 can take neither
        (what_if,) = platform.get("/api/v1/dr?lose=dc1")["groups"]
        assert what_if["lost_instances"] == 2 and what_if["state"] == "lost"

        def served() -> bool:
            answer = httpx.post(f"{platform.gateway}/v2/models/bytes_echo/infer", json=ECHO)
            return answer.status_code == 200

        wait_until(served, timeout=15, interval=0.3)

        # declared again: made so again, and nothing is left to change; an unknown place
        # is its error line
        again = dr("fail-over", "--lose", "dc2", "--control", platform.control)
        assert again.returncode == 0 and again.stdout == "lost: dc2\n", again.stdout
        assert placed() == ["dc1", "dc1"]
        unknown = dr("fail-over", "--lose", "dc9", "--control", platform.control)
        assert unknown.returncode == 1
        assert "'dc9' is neither a data centre nor a queue of the spec" in unknown.stdout

        # dc2 is back: its instance starts there again and the replacement stops
        back = dr("restore", "dc2", "--control", platform.control)
        assert back.returncode == 0, back.stdout + back.stderr
        assert back.stdout.splitlines()[-1] == "lost: none"
        # the console's view: the restored instance answers once the next poll reads it
        assert sorted(i["data_center"] for i in platform.instances(GROUP)) == ["dc1", "dc2"]
        wait_until(lambda: placed() == ["dc1", "dc2"], timeout=10, interval=0.3)
        events = platform.get(f"/api/v1/groups/{GROUP}/events")["events"]
        (restored,) = [e for e in events if e["action"] == "dr restore"]
        assert restored["to"] == {"restored": "dc2"} and len(restored["numbers"]["started"]) == 1
        assert "via the control API" in restored["actor"]
        wait_until(served, timeout=15, interval=0.3)
