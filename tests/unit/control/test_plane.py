"""The control plane follows the spec file's autoscaling rules as they are edited, and
decides for each template of a group on that template's own load."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from modelyard.control.apply import State
from modelyard.control.collector import InstanceView, Target
from modelyard.control.plane import ControlPlane, PlaneConfig
from tests.support.platform import SERVICE, double_spec

MAIN = f"{SERVICE}/main/t"  # the group's one template


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


TWO_TEMPLATES = """
quotas:
  q:
    cpu_cores: 64
    memory_gb: 64
    cards: {dc1: {A30-24G: 2}}
queues:
  dc1-gpu: {data_center: dc1, pool: gpu, gpu_models: [A30-24G]}
  dc1-cpu: {data_center: dc1, pool: cpu}
services:
  com.example.double:
    interfaces: [infer]
    quota: q
    data_centers: [dc1]
    total_cards: 2
    models: [slow_double]
    groups:
      main:
        models: [slow_double]
        cards: 2
        autoscaling: {min: 1, max: 4, target_in_flight: 2}
        templates:
          gpu: {spec: 1C/1G/A30-24G*1, queues: {dc1: dc1-gpu}, replicas: 1, loads: [slow_double]}
          cpu: {spec: 2C/2G, queues: {dc1: dc1-cpu}, replicas: 1, loads: [slow_double]}
"""


def test_each_template_is_decided_on_its_own_load_within_what_the_quota_holds(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "platform.yaml"
    spec.write_text(TWO_TEMPLATES)
    config = PlaneConfig(spec_file=spec, state_dir=tmp_path / "state", autoscale="dry-run")
    plane = ControlPlane(config)
    plane.follow_rules()
    gpu, cpu = f"{SERVICE}/main/gpu", f"{SERVICE}/main/cpu"
    assert list(plane.scaling) == [gpu, cpu]

    # the GPU instance holds 8 requests in flight, the CPU one 1
    for name, template, in_flight in (("a", "gpu", 8), ("b", "cpu", 1)):
        view = InstanceView(Target(name, SERVICE, "main", "127.0.0.1:1", template), up=True)
        view.stats = {"instance": {"in_flight": in_flight}}
        plane.collector.views[name] = view
    plane.observe_load()

    gpu_decision = asyncio.run(plane.autoscale_once(gpu))
    cpu_decision = asyncio.run(plane.autoscale_once(cpu))
    # gpu wants 8 / 2 = 4 replicas; the quota's 2 cards hold 2; cpu wants 1 / 2 → 1: stays
    assert (gpu_decision.desired, gpu_decision.replicas, gpu_decision.bound_by) == (4, 2, "quota")
    assert (cpu_decision.desired, cpu_decision.replicas) == (1, 1)
    (action,) = plane.scaling[gpu].actions
    assert action["template"] == "gpu" and (action["from"], action["to"]) == (1, 2)
    assert action["outcome"] == "recommended (dry run)"
    assert not plane.scaling[cpu].actions


def test_decisions_are_held_while_a_place_is_declared_lost(tmp_path: Path) -> None:
    spec = tmp_path / "platform.yaml"
    spec.write_text(TWO_TEMPLATES)
    state_dir = tmp_path / "state"
    State(state_dir, lost={"dc1-cpu": {"at": "now", "how": "declared"}}).save()
    plane = ControlPlane(PlaneConfig(spec_file=spec, state_dir=state_dir))
    plane.follow_rules()
    gpu = f"{SERVICE}/main/gpu"
    plane.scaling[gpu].scaler.observe(8.0)
    decision = asyncio.run(plane.autoscale_once(gpu))
    assert decision.replicas == 2  # what it wants, within the quota
    (action,) = plane.scaling[gpu].actions
    # the replacements hold quota a decision would not count: nothing changes until restore
    assert action["outcome"] == "held: dc1-cpu declared lost (until platform dr restore)"
    assert "done" not in action
