"""`modelyard serve --gil-switch-interval-us`: how long a thread may keep the GIL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelyard.cli.main import main
from modelyard.cli.runtime import set_gil_switch_interval
from modelyard.cli.serve_flags import DEFAULT_GIL_SWITCH_INTERVAL_US, MAX_GIL_SWITCH_INTERVAL_US
from modelyard.errors import ConfigError


@pytest.fixture(autouse=True)
def python_default_restored() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_the_interval_is_set_in_microseconds() -> None:
    set_gil_switch_interval(DEFAULT_GIL_SWITCH_INTERVAL_US)
    assert sys.getswitchinterval() == pytest.approx(DEFAULT_GIL_SWITCH_INTERVAL_US / 1e6)
    set_gil_switch_interval(2500)
    assert sys.getswitchinterval() == pytest.approx(0.0025)
    set_gil_switch_interval(MAX_GIL_SWITCH_INTERVAL_US)
    assert sys.getswitchinterval() == pytest.approx(1.0)


@pytest.mark.parametrize("value", [0, -100, 10**12])  # 10**12 us would wrap to 0 in Python
def test_serve_refuses_an_interval_out_of_range_before_starting_anything(
    value: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sys.getswitchinterval()
    with pytest.raises(ConfigError) as refused:
        set_gil_switch_interval(value)
    assert refused.value.rule == "serve/gil-switch-interval"
    code = main(
        ["serve", "--model-repository", str(tmp_path), "--http-port", "0",
         "--gil-switch-interval-us", str(value)]
    )  # fmt: skip
    assert code == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == refused.value.line()
    assert f"got {value}" in line and "change: modelyard serve --gil-switch-interval-us" in line
    assert sys.getswitchinterval() == before
