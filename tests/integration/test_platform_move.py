"""Moving a model between groups is a release: weights shift its traffic, callers never change."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from modelyard.client import Client
from modelyard.control.apply import State
from modelyard.control.launcher import is_alive
from tests.support.models import bytes_echo, slow_double

SERVICE = "com.example.move"

SPEC = """
quotas:
  q:
    owner: {{org: test}}
    cpu_cores: 64
    memory_gb: 64
    cards: {{dc1: {{A30-24G: 4}}}}
queues:
  dc1-gpu: {{data_center: dc1, pool: gpu, gpu_models: [A30-24G]}}
  dc1-cpu: {{data_center: dc1, pool: cpu}}
services:
  com.example.move:
    interfaces: [infer]
    quota: q
    data_centers: [dc1]
    total_cards: 2
    models: [slow_double, twin, bytes_echo]
    groups:
      a:
        models: [slow_double{a_extra}]
        cards: 0
        templates:
          cpu: {{spec: 1C/1G, queues: {{dc1: dc1-cpu}}, replicas: 1,
                loads: [slow_double{a_extra}]}}
      b:
        models: [twin{b_extra}]
        cards: 2
        templates:
          gpu: {{spec: 1C/1G/A30-24G*1, queues: {{dc1: dc1-gpu}}, replicas: 1,
                loads: [twin{b_extra}]}}
"""

ECHO = {"text": np.array([["hi"]], dtype=object)}


def write_spec(path: Path, echo_in: str) -> None:
    extra = ", bytes_echo"
    path.write_text(
        SPEC.format(
            a_extra=extra if echo_in == "a" else "", b_extra=extra if echo_in == "b" else ""
        )
    )


def platform(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    repository = tmp_path / "models"
    slow_double(repository)
    shutil.copytree(repository / "slow_double", repository / "twin")
    bytes_echo(repository)
    state = tmp_path / "state"
    try:
        yield tmp_path / "platform.yaml", state, repository
    finally:
        platform("down", "--state", str(state))
        for instance in State.load(state).instances if (state / "state.json").exists() else []:
            if is_alive(instance.pid, instance.name):
                os.kill(instance.pid, signal.SIGKILL)


def echo_counts(state: Path) -> dict[str, int]:
    """bytes_echo successes per launched instance, from each one's live statistics."""
    counts = {}
    for instance in State.load(state).instances:
        doc = httpx.get(f"http://127.0.0.1:{instance.http_port}/v2/modelyard/stats").json()
        counts[instance.name] = sum(
            m["success"] for m in doc["models"] if m["name"] == "bytes_echo"
        )
    return counts


def test_a_model_moves_between_groups_by_weight_steps_without_a_failed_call(
    files: tuple[Path, Path, Path],
) -> None:
    spec, state, repository = files
    registry = f"embedded://{state.resolve() / 'registry.db'}"
    common = ("-f", str(spec), "--state", str(state))
    write_spec(spec, echo_in="a")
    assert platform("plan", *common).returncode == 2
    applied = platform("apply", *common, "--model-repository", str(repository))
    assert applied.returncode == 0, applied.stdout + applied.stderr

    failures: list[str] = []
    calls = [0]
    stop = threading.Event()

    def caller() -> None:  # one client, started before the move, kept throughout
        with Client(SERVICE, registry) as client:
            while not stop.is_set():
                try:
                    assert client.infer("bytes_echo", ECHO)["upper"][0, 0] == b"HI"
                    client.infer("slow_double", {"x": np.ones((1, 2), dtype=np.float32)})
                    calls[0] += 1
                except Exception as exc:  # every failure is the finding
                    failures.append(repr(exc))

    thread = threading.Thread(target=caller)
    thread.start()
    try:
        # the spec binds bytes_echo to b before the move; a move into a is refused
        write_spec(spec, echo_in="b")
        wrong = platform("release", "move", f"{SERVICE}/a", *common, "--model", "bytes_echo")
        assert wrong.returncode == 1 and "does not bind bytes_echo" in wrong.stdout
        started = platform(
            "release", "move", f"{SERVICE}/b", *common, "--model", "bytes_echo",
            "--percent", "10",
        )  # fmt: skip
        assert started.returncode == 0, started.stdout + started.stderr
        assert "10 % of bytes_echo moved here" in started.stdout

        # about 10 % of the model's requests reach b's canary
        before = echo_counts(state)
        with Client(SERVICE, registry) as client:
            for _ in range(400):
                client.infer("bytes_echo", ECHO)
        after = echo_counts(state)
        moved = sum(after[n] - before.get(n, 0) for n in after if "/b/" in n)
        stayed = sum(after[n] - before.get(n, 0) for n in after if "/a/" in n)
        assert moved + stayed >= 400
        assert 0.04 <= moved / (moved + stayed) <= 0.18, (moved, stayed)

        assert platform("release", "step", f"{SERVICE}/b", "--state", str(state)).returncode == 0
        promoted = platform("release", "promote", f"{SERVICE}/b", *common)
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    finally:
        stop.set()
        thread.join()
    assert failures == [] and calls[0] > 0

    instances = State.load(state).instances
    a = [i for i in instances if i.group == "a"]
    b = [i for i in instances if i.group == "b"]
    assert [i.loads for i in a] == [["slow_double"]]
    assert [i.loads for i in b] == [["twin", "bytes_echo"]]
    assert all(i.role == "stable" and i.weight == 1.0 for i in instances)
    assert platform("plan", *common).returncode == 0  # the spec and the state agree
    for group in ("a", "b"):
        history = platform("release", "history", f"{SERVICE}/{group}", "--state", str(state))
        actions = [line for line in history.stdout.splitlines() if '"model": "bytes_echo"' in line]
        assert any('"action": "move start"' in line for line in actions), history.stdout
        assert any('"action": "move promote"' in line for line in actions), history.stdout
