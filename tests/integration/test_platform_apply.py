"""plan / apply / release / rollback / down against real `modelyard serve` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from modelyard.client import Client
from modelyard.control.apply import State, registered
from modelyard.control.launcher import is_alive
from tests.support.models import slow_double

SERVICE = "com.example.double"
GROUP = f"{SERVICE}/main"

SPEC = """
quotas:
  q:
    owner: {{org: test}}
    cpu_cores: 64
    memory_gb: 64
    cards: {{dc1: {{A30-24G: {quota}}}}}
queues:
  dc1-gpu: {{data_center: dc1, pool: gpu, gpu_models: [A30-24G]}}
services:
  com.example.double:
    interfaces: [infer]
    quota: q
    data_centers: [dc1]
    total_cards: {share}
    models: [slow_double]
    groups:
      main:
        models: [slow_double]
        cards: {share}
        templates:
          t: {{spec: 1C/1G/A30-24G*1, queues: {{dc1: dc1-gpu}}, replicas: {replicas},
              loads: [slow_double]}}
"""


def modelyard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A spec file, a state directory and a repository with slow_double version 1."""
    repository = tmp_path / "models"
    slow_double(repository, versions=(1,))
    state = tmp_path / "state"
    try:
        yield tmp_path / "platform.yaml", state, repository
    finally:
        modelyard("down", "--state", str(state))
        for instance in State.load(state).instances if (state / "state.json").exists() else []:
            if is_alive(instance.pid, instance.name):
                os.kill(instance.pid, signal.SIGKILL)


def write_spec(path: Path, replicas: int, quota: int = 3, share: int = 4) -> None:
    path.write_text(SPEC.format(replicas=replicas, quota=quota, share=share))


def versions_served(registry: str, requests: int) -> Counter[int]:
    counts: Counter[int] = Counter()
    with Client(SERVICE, registry) as client:
        for _ in range(requests):
            y = client.infer("slow_double", {"x": np.ones((1, 2), dtype=np.float32)})["y"]
            counts[int(y[0, 0]) // 1000] += 1
    return counts


def test_plan_apply_canary_promote_rollback_down(platform: tuple[Path, Path, Path]) -> None:
    spec, state, repository = platform
    registry = f"embedded://{state.resolve() / 'registry.db'}"
    common = ("-f", str(spec), "--state", str(state))
    write_spec(spec, replicas=2)

    plan = modelyard("plan", *common)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "0 -> 2" in plan.stdout and json.loads((state / "plan.json").read_text())["start"]
    applied = modelyard("apply", *common, "--model-repository", str(repository))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert len(registered(registry, SERVICE)) == 2
    assert modelyard("plan", *common).returncode == 0

    write_spec(spec, replicas=1)
    assert modelyard("plan", *common).returncode == 2
    write_spec(spec, replicas=3)  # the spec changes under the plan
    stale = modelyard("apply", *common)
    assert stale.returncode == 1 and "rule=platform/stale-plan" in stale.stdout
    write_spec(spec, replicas=1)
    assert modelyard("plan", *common).returncode == 2
    assert modelyard("apply", *common).returncode == 0
    assert len(registered(registry, SERVICE)) == 1
    assert modelyard("apply", *common).returncode == 1  # the plan is spent: state moved on
    assert modelyard("plan", *common).returncode == 0
    assert modelyard("apply", *common).returncode == 0  # nothing to do, nothing done

    slow_double(repository, versions=(2,))  # the new version lands in the repository
    started = modelyard(
        "release", "start", GROUP, *common, "--model", "slow_double", "--version", "2",
        "--percent", "10",
    )  # fmt: skip
    assert started.returncode == 0, started.stdout + started.stderr
    assert len(registered(registry, SERVICE)) == 2
    counts = versions_served(registry, 1000)
    assert set(counts) == {1, 2}
    assert 0.06 <= counts[2] / 1000 <= 0.14, counts
    # the ledger read with the state counts the card the canary holds as reserved
    spec_file = str(spec)
    booked = modelyard("ledger", "-f", spec_file, "--json")
    live = modelyard("ledger", "-f", spec_file, "--state", str(state), "--json")
    assert [r["reserved"] for r in json.loads(booked.stdout)["quota"]] == [0]
    assert [r["reserved"] for r in json.loads(live.stdout)["quota"]] == [1], live.stdout

    promoted = modelyard("release", "promote", GROUP, *common)
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    assert versions_served(registry, 50) == Counter({2: 50})
    assert len(registered(registry, SERVICE)) == 1

    rolled = modelyard("release", "rollback", GROUP, *common, "--revision", "1")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert versions_served(registry, 50) == Counter({1: 50})

    events = modelyard("release", "history", GROUP, "--state", str(state)).stdout.splitlines()
    actions = [json.loads(line)["action"] for line in events]
    assert actions[:3] == ["start", "step", "promote"]
    assert actions[-1] == "rollback to revision 1"
    assert (state / "events" / SERVICE / "main.jsonl").exists()

    status = modelyard("status", "--state", str(state), "--json")
    rows = json.loads(status.stdout)
    assert [r["alive"] for r in rows] == [True]
    pids = [r["pid"] for r in rows]
    assert modelyard("down", "--state", str(state)).returncode == 0
    assert not any(is_alive(pid) for pid in pids)
    assert registered(registry, SERVICE) == []


def test_a_release_the_quota_cannot_hold_is_refused_before_anything_starts(
    platform: tuple[Path, Path, Path],
) -> None:
    spec, state, repository = platform
    common = ("-f", str(spec), "--state", str(state))
    write_spec(spec, replicas=1, quota=1)
    assert modelyard("plan", *common).returncode == 2
    assert modelyard("apply", *common, "--model-repository", str(repository)).returncode == 0
    slow_double(repository, versions=(2,))
    before = (state / "state.json").read_text()
    refused = modelyard(
        "release", "start", GROUP, *common, "--model", "slow_double", "--version", "2"
    )
    assert refused.returncode == 1
    assert "QUOTA_EXCEEDED" in refused.stdout and "rule=platform/release" in refused.stdout
    assert (state / "state.json").read_text() == before
    assert len(State.load(state).instances) == 1
    assert len(list((state / "logs").iterdir())) == 1  # no process was launched
    # the refusal is in the group's record, with what refused it
    events = modelyard("release", "history", GROUP, "--state", str(state)).stdout.splitlines()
    (event,) = [json.loads(line) for line in events]
    assert event["action"] == "refused" and event["numbers"]["surge_cards"] == 1
    assert any("QUOTA_EXCEEDED" in line for line in event["numbers"]["findings"])

    # a quota that holds the surge, a group share that does not: refused as well
    write_spec(spec, replicas=1, quota=3, share=1)
    modelyard("plan", *common)
    applied = modelyard("apply", *common, "--model-repository", str(repository))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    over_share = modelyard(
        "release", "start", GROUP, *common, "--model", "slow_double", "--version", "2"
    )
    assert over_share.returncode == 1
    assert "GROUP_CARDS_EXCEEDED" in over_share.stdout
    assert "runs 1 card(s) and its release would add 1: 2 over its share of 1" in (
        over_share.stdout
    )
    assert len(State.load(state).instances) == 1
