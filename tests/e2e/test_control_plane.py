"""`modelyard platform up`: apply, gateway, API, autoscaling through the launcher, healing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from modelyard.control.launcher import is_alive
from tests.support.models import bytes_echo, slow_double
from tests.support.platform import SERVICE, double_spec, running_platform
from tests.support.servers import free_ports, wait_until

MAIN = f"{SERVICE}/main"

# the quota's cards, the group's share and its autoscaling bound are 3; its 3 cores (an
# instance takes 1) hold the light group's one instance and 2 of the main group's
SPEC = double_spec(
    quota_cards=3,
    main_cards=3,
    autoscaling="{min: 1, max: 3, target_in_flight: 2, stable_window_s: 6, panic_window_s: 2}",
    cpu_cores=3,
)

ECHO = {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["hi"]}]}
DOUBLE = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    repository = tmp_path / "models"
    slow_double(repository, delay=0.2)
    bytes_echo(repository)
    spec = tmp_path / "platform.yaml"
    spec.write_text(SPEC)
    yield spec, tmp_path / "state", repository


def up(spec: Path, state: Path, repository: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", "up", "-f", str(spec),
         "--state", str(state), "--model-repository", str(repository), *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


def via_control(control: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", "platform", *command, "--control", control],
        capture_output=True,
        text=True,
        timeout=60,
    )


@contextmanager
def under_load(gateway: str, callers: int = 12) -> Iterator[list[str]]:
    """``callers`` threads calling slow_double through the gateway; yields their failures."""
    stop, errors = threading.Event(), []

    def call() -> None:
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                response = client.post(f"{gateway}/v2/models/slow_double/infer", json=DOUBLE)
                if response.status_code != 200:
                    errors.append(response.text)

    threads = [threading.Thread(target=call) for _ in range(callers)]
    for thread in threads:
        thread.start()
    try:
        yield errors
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def test_up_serves_through_the_gateway_scales_with_load_within_quota_and_heals(
    files: tuple[Path, Path, Path],
) -> None:
    spec, state, repository = files
    with running_platform(
        spec, state, repository, "--autoscale-every", "1", expected_instances=2
    ) as platform:
        # callers name only the model; the gateway finds the group that serves it
        answer = httpx.post(f"{platform.gateway}/v2/models/slow_double/infer", json=DOUBLE)
        assert answer.status_code == 200, answer.text
        assert answer.json()["outputs"][0]["data"] == [1002.0, 1004.0]  # version 1 adds 1000
        echo = httpx.post(f"{platform.gateway}/v2/models/bytes_echo/infer", json=ECHO)
        assert echo.status_code == 200, echo.text

        ledger = platform.get("/api/v1/ledger")
        assert ledger["running_by_group"][MAIN] == {"instances": 1, "gpu_instances": 1, "cards": 1}
        assert ledger["running_by_group"][f"{SERVICE}/light"]["gpu_instances"] == 0

        # 12 callers on a 0.2 s model keep ~12 requests in flight: want 6 replicas, the
        # quota's cores hold 2, so the group grows to 2 and the decision says why
        with under_load(platform.gateway) as errors:
            wait_until(lambda: len(platform.instances(MAIN)) == 2, timeout=60, interval=0.5)

            def bound_by_quota() -> bool:
                decisions = platform.get("/api/v1/autoscale")["groups"][0]["decisions"]
                return any(d["bound_by"] == "quota" and d["replicas"] == 2 for d in decisions)

            # the step to 2 may come from a decision taken while the load was still
            # ramping up (want 2); the next ones want more and say the quota holds it
            wait_until(bound_by_quota, timeout=20, interval=0.5)
            assert platform.get("/api/v1/ledger")["running_by_group"][MAIN]["cards"] == 2
        assert errors == []
        events = platform.get(f"/api/v1/groups/{MAIN}/events")["events"]
        assert next(e["to"] for e in events if e["action"] == "autoscale") == {"replicas": 2}

        # idle for a stable window: back to the minimum
        wait_until(lambda: len(platform.instances(MAIN)) == 1, timeout=60, interval=0.5)

        # a dead instance is replaced in its slot
        victim = platform.instances(f"{SERVICE}/light")[0]
        os.kill(victim["pid"], signal.SIGKILL)

        def replaced() -> bool:
            now = platform.instances(f"{SERVICE}/light")
            return len(now) == 1 and now[0]["name"] != victim["name"] and now[0]["live"]["up"]

        wait_until(replaced, timeout=90, interval=0.5)
        echo = httpx.post(f"{platform.gateway}/v2/models/bytes_echo/infer", json=ECHO)
        assert echo.status_code == 200, echo.text
    assert "stopped com.example.double/main" in platform.log.read_text()


def test_dry_run_only_recommends(files: tuple[Path, Path, Path]) -> None:
    spec, state, repository = files
    with running_platform(
        spec,
        state,
        repository,
        "--autoscale",
        "dry-run",
        "--autoscale-every",
        "1",
        expected_instances=2,
    ) as platform:

        def recommended() -> bool:
            actions = platform.get("/api/v1/autoscale")["groups"][0]["actions"]
            return any(a["outcome"] == "recommended (dry run)" for a in actions)

        with under_load(platform.gateway) as errors:
            wait_until(recommended, timeout=60, interval=0.5)
        assert errors == []
        assert len(platform.instances(MAIN)) == 1


def test_api_errors_are_error_lines(files: tuple[Path, Path, Path]) -> None:
    spec, state, repository = files
    with running_platform(spec, state, repository, "--autoscale", "off", expected_instances=2) as p:
        bad = httpx.post(f"{p.control}/api/v1/groups/{MAIN}/release/step", content=b"{nope")
        assert bad.status_code == 400 and "rule=platform/api" in bad.json()["error"]
        missing = httpx.post(f"{p.control}/api/v1/groups/{MAIN}/release/start", json={})
        assert missing.status_code == 400
        assert "release start needs 'model' as a str" in missing.json()["error"]
        unknown_model = httpx.post(
            f"{p.control}/api/v1/groups/{MAIN}/release/start",
            json={"model": "nomodel", "version": "1"},
        )
        assert unknown_model.status_code == 400, unknown_model.text
        assert "does not own model 'nomodel'" in unknown_model.json()["error"]
        no_version = httpx.post(
            f"{p.control}/api/v1/groups/{MAIN}/release/start",
            json={"model": "slow_double", "version": "9"},
        )
        assert no_version.status_code == 400
        assert "slow_double has no version 9" in no_version.json()["error"]
        bad_percent = httpx.post(
            f"{p.control}/api/v1/groups/{MAIN}/release/start",
            json={"model": "slow_double", "version": "1", "percent": "ten"},
        )
        assert bad_percent.status_code == 400 and "percent must be a number" in bad_percent.text
        assert p.get(f"/api/v1/groups/{MAIN}/events")["release"]["state"] == "stable"
        assert len(p.instances(MAIN)) == 1  # nothing was started
        points = httpx.get(f"{p.control}/api/v1/inference?points=abc")
        assert points.status_code == 400 and "points must be" in points.text
        no_release = httpx.post(f"{p.control}/api/v1/groups/{MAIN}/release/step", json={})
        assert no_release.status_code == 400, no_release.text
        assert "no release in progress" in no_release.json()["error"]
        # the CLI through the API (--control): its answers printed, a refusal's line and 1
        shown = via_control(p.control, "status", "--json")
        assert shown.returncode == 0, shown.stderr
        kinds = [row["kind"] for row in json.loads(shown.stdout)]
        assert kinds.count("instance") == 2 and "control-plane" in kinds
        history = via_control(p.control, "release", "history", MAIN)
        assert history.returncode == 0, history.stderr
        events = p.get(f"/api/v1/groups/{MAIN}/events")["events"]
        assert [json.loads(line) for line in history.stdout.splitlines()] == events
        refused = via_control(p.control, "release", "step", MAIN)
        assert refused.returncode == 1
        assert "no release in progress" in refused.stdout and "rule=" in refused.stdout
        unknown = httpx.get(f"{p.control}/api/v1/rejections/{SERVICE}/nope")
        assert unknown.status_code == 404 and "remembers request id nope" in unknown.text
        strange = httpx.get(f"{p.control}/api/v1/rejections/{SERVICE}/%20x%20")
        assert strange.status_code == 400 and "is not a request id" in strange.text
        # a group name from the path reaches no file unless the spec names the group
        outside = httpx.get(f"{p.control}/api/v1/groups/{SERVICE}/..%2F..%2Fstate/events")
        assert outside.status_code == 404
        route = httpx.get(f"{p.control}/api/v1/nope")
        assert route.status_code == 404 and "rule=platform/route" in route.json()["error"]
        method = httpx.delete(f"{p.control}/api/v1/overview")
        assert method.status_code == 405 and "does not take DELETE" in method.json()["error"]
        nowhere = httpx.get(f"{p.control}/api/v1/groups/{SERVICE}/nope/events")
        assert nowhere.status_code == 404 and "rule=platform/unknown-group" in nowhere.text

        # a second control plane: on a busy port, or on the same state, refused with a line
        port = p.control.rsplit(":", 1)[1]
        busy = up(spec, state, repository, "--port", port, "--gateway-port", "-1")
        assert busy.returncode == 1 and "rule=platform/api" in busy.stdout, busy.stdout
        twice = up(spec, state, repository, "--port", "0", "--gateway-port", "-1")
        assert twice.returncode == 1 and "rule=platform/control-lock" in twice.stdout
        assert len(p.instances()) == 2 and all(i["live"]["up"] for i in p.instances())
        down = subprocess.run(
            [sys.executable, "-m", "modelyard.cli.main", "platform", "down", "--state", str(state)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert down.returncode == 1 and "rule=platform/control-lock" in down.stderr, down
        assert len(p.instances()) == 2


def test_a_control_plane_started_again_on_its_state_adopts_its_running_gateways(
    files: tuple[Path, Path, Path],
) -> None:
    spec, state, repository = files
    ports = tuple(free_ports(2))
    with running_platform(spec, state, repository, "--autoscale", "off", expected_instances=2,
                          ports=ports) as p:  # fmt: skip
        recorded = json.loads((state / "gateways.json").read_text())
        pids = sorted(entry["pid"] for entry in recorded)
        # two on the port and one standing by, by default
        assert sorted(entry["slot"] for entry in recorded) == [-1, 0, 1]
        assert all(is_alive(pid, SERVICE) for pid in pids)
        p.process.kill()  # no cleanup runs: the gateways and instances are left behind
        p.process.wait()
        answer = httpx.post(f"{p.gateway}/v2/models/bytes_echo/infer", json=ECHO)
        assert answer.status_code == 200, answer.text  # the data path outlives it
    with running_platform(spec, state, repository, "--autoscale", "off", expected_instances=2,
                          ports=ports) as p:  # fmt: skip
        # the same processes serve on: adopted, not replaced
        gateways = p.get("/api/v1/overview")["services"][0]["gateways"]
        assert sorted(g["pid"] for g in gateways) == pids
        assert all(g["adopted"] for g in gateways)
        assert [g["state"] for g in gateways] == ["running", "running", "standby"]
        assert "adopted the gateway of com.example.double" in p.log.read_text()
        answer = httpx.post(f"{p.gateway}/v2/models/bytes_echo/infer", json=ECHO)
        assert answer.status_code == 200, answer.text
        p.process.kill()
        p.process.wait()
    # started on another gateway port: the old gateways hand over to new ones, then stop
    with running_platform(spec, state, repository, "--autoscale", "off", expected_instances=2) as p:
        wait_until(lambda: not any(is_alive(pid, SERVICE) for pid in pids), timeout=30)
        answer = httpx.post(f"{p.gateway}/v2/models/bytes_echo/infer", json=ECHO)
        assert answer.status_code == 200, answer.text


def test_a_killed_gateway_or_instance_is_reaped_recorded_and_started_again(
    files: tuple[Path, Path, Path],
) -> None:
    spec, state, repository = files
    with running_platform(spec, state, repository, "--autoscale", "off", expected_instances=2) as p:

        def gateways() -> list[dict[str, Any]]:
            return list(p.get("/api/v1/overview")["services"][0]["gateways"])

        wait_until(lambda: gateways()[2]["state"] == "standby", timeout=30)
        (victim, other, standby) = gateways()
        assert standby["slot"] == -1 and victim["slot"] == 0
        killed_at = time.monotonic()
        os.kill(victim["pid"], signal.SIGKILL)
        # reaped at once: no zombie left behind
        wait_until(lambda: not Path(f"/proc/{victim['pid']}").exists(), timeout=1.0)

        def serving_again() -> bool:
            again = next(g for g in gateways() if g["slot"] == victim["slot"])
            return again["state"] == "running" and again["pid"] != victim["pid"]

        wait_until(serving_again, timeout=20, interval=0.05)
        back_after = time.monotonic() - killed_at
        now = gateways()
        again = next(g for g in now if g["slot"] == victim["slot"])
        assert again["restarts"] == 1 and again["last_exit"]["signal"] == "SIGKILL"
        assert again["http_port"] == victim["http_port"]  # on the service's port again
        assert again["pid"] == standby["pid"]  # the standby took its place
        assert gateways()[2]["pid"] not in (standby["pid"], victim["pid"])  # and a new one waits
        assert next(g for g in now if g["slot"] == other["slot"])["pid"] == other["pid"]
        log = p.log.read_text()
        assert "gateway_exited" in log and "exit_signal=SIGKILL" in log
        # the standby binds the port in milliseconds; the bound leaves room for a busy machine
        assert back_after < 5, back_after

        instance = p.instances(f"{SERVICE}/light")[0]
        os.kill(instance["pid"], signal.SIGKILL)
        wait_until(lambda: not Path(f"/proc/{instance['pid']}").exists(), timeout=1.0)

        def replaced() -> bool:
            now = p.instances(f"{SERVICE}/light")
            return len(now) == 1 and now[0]["name"] != instance["name"] and now[0]["live"]["up"]

        wait_until(replaced, timeout=60, interval=0.2)
        (row,) = p.instances(f"{SERVICE}/light")
        assert row["restarts"] == 1 and row["last_exit"]["signal"] == "SIGKILL"
        assert "instance_exited" in p.log.read_text()

        status = subprocess.run(
            [sys.executable, "-m", "modelyard.cli.main", "platform", "status", "--state",
             str(state)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        assert lines[0].startswith(f"control plane  pid {p.process.pid}")
        (restarted,) = [
            line for line in lines if line.startswith(f"gateway {SERVICE} #{victim['slot']}")
        ]
        assert "running" in restarted and "restarts 1" in restarted and "SIGKILL" in restarted
        (light,) = [line for line in lines if "/light/" in line]
        assert "restarts 1, last exit: killed by SIGKILL" in light
