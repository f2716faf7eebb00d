"""The launcher's command line: an instance serves its pinned versions from the repository
itself, whatever the models' version policies say."""

from __future__ import annotations

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
