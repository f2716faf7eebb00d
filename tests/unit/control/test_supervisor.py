"""What the supervisor decides: backoff between restarts, exit records, which recorded
gateways a control plane started again adopts and which it stops first."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelyard.control.launcher import is_alive
from modelyard.control.supervisor import (
    FIRST_DELAY_S,
    MAX_DELAY_S,
    STABLE_RUN_S,
    Backoff,
    GatewayPlan,
    Supervisor,
    describe_exit,
    exit_status,
)

SERVICE = "com.example.sup"


def test_the_first_restart_is_at_once_then_the_wait_doubles_while_it_keeps_exiting() -> None:
    backoff = Backoff()
    status = exit_status(1)
    waits = [backoff.exited(status, ran_for=0.5, now=100.0) for _ in range(8)]
    assert waits == [0.0, FIRST_DELAY_S, 2.0, 4.0, 8.0, 16.0, MAX_DELAY_S, MAX_DELAY_S]
    assert backoff.not_before == 100.0 + MAX_DELAY_S
    # a run that held starts the count afresh
    assert backoff.exited(status, ran_for=STABLE_RUN_S, now=200.0) == 0.0
    assert backoff.exited(status, ran_for=1.0, now=201.0) == FIRST_DELAY_S


def test_an_exit_is_recorded_by_its_code_or_signal() -> None:
    assert exit_status(-signal.SIGKILL)["signal"] == "SIGKILL"
    assert exit_status(3)["code"] == 3 and exit_status(3)["signal"] is None
    assert "killed by SIGKILL" in describe_exit(exit_status(-9))
    assert "exit code 3" in describe_exit(exit_status(3))
    assert "status unknown" in describe_exit(exit_status(None))
    assert describe_exit(None) == "-"


def test_an_exit_healing_saw_first_takes_its_status_when_reaped_and_counts_once(
    tmp_path: Path,
) -> None:
    supervisor = Supervisor(tmp_path, "127.0.0.1", lambda: "embedded")
    wait = supervisor.instance_exited("s/m/cpu/dc1/0", "m@r1", 123, None, float("inf"))
    unknown = supervisor.slots["s/m/cpu/dc1/0"].last_exit
    assert wait == 0.0 and unknown is not None and unknown["known"] is False
    supervisor.exit_status_known("s/m/cpu/dc1/0", -signal.SIGKILL)
    slot = supervisor.slots["s/m/cpu/dc1/0"]
    assert slot.last_exit is not None and slot.last_exit["signal"] == "SIGKILL"  # at last
    assert (slot.quick_exits, slot.delay) == (1, 0.0)  # one exit: no wait added for it


@pytest.fixture
def pretend_gateways() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes whose command line names the service, as a gateway's does."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def pretend(started: list[subprocess.Popen[bytes]]) -> int:
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", SERVICE],
        stdin=subprocess.DEVNULL,
    )
    started.append(process)
    return process.pid


def test_a_control_plane_started_again_adopts_what_fits_and_stops_first_what_holds_its_port(
    tmp_path: Path, pretend_gateways: list[subprocess.Popen[bytes]]
) -> None:
    kept, surplus, older = (pretend(pretend_gateways) for _ in range(3))
    (tmp_path / "gateways.json").write_text(
        json.dumps(
            [
                {"service": SERVICE, "slot": 0, "pid": kept, "http_port": 9100,
                 "grpc_port": None, "status_port": 9200, "started_at": 1.0},
                {"service": SERVICE, "slot": 1, "pid": surplus, "http_port": 9100,
                 "grpc_port": None, "status_port": 9201, "started_at": 1.0},
                {"service": SERVICE, "pid": older},  # an older control plane's record
            ]
        )
    )  # fmt: skip
    supervisor = Supervisor(tmp_path, "127.0.0.1", lambda: "embedded")
    done = supervisor.start_gateways([GatewayPlan(SERVICE, 9100, None, 1, [], standby=False)])
    (gateway,) = supervisor.gateways
    assert (gateway.pid, gateway.state, gateway.adopted) == (kept, "running", True)
    assert any("adopted" in line and str(kept) in line for line in done)
    # one more than the plan wants on its port, and one recorded without its port: stopped
    # before anything new could need the port
    assert not is_alive(surplus, SERVICE) and not is_alive(older, SERVICE)
    assert is_alive(kept, SERVICE)
    recorded = json.loads((tmp_path / "gateways.json").read_text())
    assert [entry["pid"] for entry in recorded] == [kept]
