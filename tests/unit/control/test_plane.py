"""The control plane follows the spec file's autoscaling rules as they are edited."""

from __future__ import annotations

import os
from pathlib import Path

from modelyard.control.plane import ControlPlane, PlaneConfig
from tests.support.platform import SERVICE, double_spec

MAIN = f"{SERVICE}/main"


def write(path: Path, text: str, tick: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(tick * 10**9, tick * 10**9))  # a new stamp, however fast the edit


def test_an_edited_added_or_removed_rule_holds_from_the_next_decision(tmp_path: Path) -> None:
    spec = tmp_path / "platform.yaml"
    write(spec, double_spec(2, 2, "{min: 1, max: 2, target_in_flight: 8}"), 1)
    plane = ControlPlane(PlaneConfig(spec_file=spec, state_dir=tmp_path / "state"))
    assert [c.split(":")[0] for c in plane.follow_rules()] == [MAIN]
    scaler = plane.scaling[MAIN].scaler
    scaler.observe(5.0)
    assert plane.follow_rules() == []  # nothing changed

    write(spec, double_spec(2, 2, "{min: 1, max: 2, target_in_flight: 3}"), 2)
    (change,) = plane.follow_rules()
    assert change.startswith(MAIN) and "target_in_flight=3" in change
    assert plane.scaling[MAIN].scaler is scaler  # the observations so far are kept
    assert scaler.rule.target_in_flight == 3 and scaler.peak() == 5.0

    # an edit whose numbers cannot make decisions leaves the rule in force
    write(spec, double_spec(2, 2, "{min: 3, max: 2, target_in_flight: 8}"), 3)
    assert plane.follow_rules() == []
    assert scaler.rule.target_in_flight == 3
    write(spec, double_spec(2, 2, "{min: 1, max: ten}"), 4)
    assert plane.follow_rules() == [] and plane.scaling[MAIN].scaler is scaler

    write(spec, double_spec(2, 2), 5)
    assert plane.follow_rules() == [f"{MAIN}: autoscaling removed"]
    assert plane.scaling == {}
