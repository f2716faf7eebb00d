"""The launcher's command line: an instance serves its pinned versions from the repository
itself, whatever the models' version policies say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from modelyard.control.launcher import LaunchedInstance, LocalLauncher


def test_a_pinned_model_is_served_at_its_version_from_the_base_repository(
    tmp_path: Path,
) -> None:
    base = tmp_path / "models"
    launcher = LocalLauncher(tmp_path / "state", "embedded", base)
    instance = LaunchedInstance(
        name="svc/g/t/dc1/0@r2", service="svc", group="g", template="t", data_center="dc1",
        index=0, queue="q", spec="1C/1G", cards=0, loads=["a", "b"], pins={"b": "2", "a": "1"},
        http_port=8123,
    )  # fmt: skip
    command = launcher.command(instance)
    assert command[command.index("--model-repository") + 1] == str(base)
    pinned = [command[i + 1] for i, flag in enumerate(command) if flag == "--model-version"]
    assert pinned == ["a=1", "b=2"]
    assert command[command.index("--instance-id") + 1] == "svc/g/t/dc1/0@r2"
    assert "--role" not in command  # a promoted canary goes on running as a stable one


# an instance's stand-in: on SIGTERM it notes the time, drains for half a second, exits
DRAINING = """
import signal, sys, time
def stop(*_):
    open(sys.argv[2], "w").write(repr(time.monotonic()))
    time.sleep(0.5)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("up", flush=True)
time.sleep(60)
"""


def test_stopping_several_instances_signals_all_before_waiting_for_any(tmp_path: Path) -> None:
    launcher = LocalLauncher(tmp_path / "state", "embedded", tmp_path / "models")
    instances, processes = [], []
    for index in range(2):
        name = f"svc/g/t/dc1/{index}@r1"
        process = subprocess.Popen(
            [sys.executable, "-c", DRAINING, name, str(tmp_path / f"{index}.stopped")],
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        processes.append(process)
        instance = LaunchedInstance(
            name=name, service="svc", group="g", template="t", data_center="dc1",
            index=index, queue="q", spec="1C/1G", cards=0, loads=[], pins={}, pid=process.pid,
        )  # fmt: skip
        instances.append(instance)
    launcher.stop_all(instances)
    assert [p.wait(5) for p in processes] == [0, 0]  # drained and exited, not killed
    for process in processes:
        process.stdout.close()  # type: ignore[union-attr]
    first, second = (float((tmp_path / f"{i}.stopped").read_text()) for i in range(2))
    # the second had its SIGTERM while the first still drained: one drain, not two
    assert abs(second - first) < 0.5
