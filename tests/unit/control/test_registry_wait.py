"""Waiting on the registry after a launch: an instance that never shows up is refused as
unavailable, with what was missing and where to look."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelyard.control.apply import wait_listed, wait_registered
from modelyard.control.launcher import LaunchedInstance
from modelyard.errors import Code, ConfigError


def test_a_service_whose_instances_never_register_is_refused(tmp_path: Path) -> None:
    registry = f"embedded://{tmp_path}/registry.db"
    with pytest.raises(ConfigError) as caught:
        wait_registered(registry, {"svc": {"svc/g/t/dc1/0": None}}, timeout=0.2)
    assert caught.value.code is Code.UNAVAILABLE
    assert caught.value.line() == (
        "[config] the registry does not show the launched instances of svc; "
        f"rule=platform/registry; change: the instance logs under {registry}"
    )


def test_an_instance_never_listed_is_refused_with_its_log(tmp_path: Path) -> None:
    instance = LaunchedInstance(
        name="svc/g/t/dc1/0@r2", service="svc", group="g", template="t", data_center="dc1",
        index=0, queue="q", spec="1C/1G", cards=0, loads=["a"], pins={}, http_port=8123,
        log="logs/svc-0.log",
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        wait_listed(f"embedded://{tmp_path}/registry.db", instance, timeout=0.2)
    assert caught.value.code is Code.UNAVAILABLE
    assert caught.value.line() == (
        "[config] instance svc/g/t/dc1/0@r2 is not in the registry after 0.2s; "
        "rule=platform/registry; change: its log, logs/svc-0.log"
    )
