"""Disaster recovery per group: what losing a data centre or a queue does to each group,
and whether the surviving data centres' quotas can take the replacements."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modelyard.control.apply import State
from modelyard.control.disaster import after_loss, evaluate
from modelyard.control.failover import (
    check_place,
    cluster_replicas,
    fail_over_on_cluster,
    restore_on_cluster,
)
from modelyard.control.ledger import expand
from modelyard.control.release import history
from modelyard.control.spec import parse_platform_spec
from modelyard.errors import ConfigError
from tests.unit.control.test_ledger import BASE


def _by_group(text: str, lose: str) -> dict[str, dict[str, object]]:
    return {r.group: r.to_json() for r in evaluate(parse_platform_spec(text), lose)}


def test_losing_a_data_centre_counts_what_each_group_loses_and_what_the_rest_can_hold() -> None:
    # dc2 holds 4 A30 cards, 3 of them used by the gpu group: 1 free for dc1's 3 instances
    lost_dc1 = _by_group(BASE, "dc1")
    assert lost_dc1["preprocess"]["state"] == "lost"  # it runs in dc1 only
    gpu = lost_dc1["gpu"]
    assert (gpu["lost_instances"], gpu["lost_cards"], gpu["replaced"]) == (3, 3, 1)
    assert gpu["state"] == "degraded" and gpu["capacity"] == round(4 / 6, 4)
    assert "quota search-gpu has 0 free A30-24G cards in dc2, needs 1" in gpu["shortfall"][0]
    # dc1 holds 8 cards, 3 used: dc2's 3 instances fit there
    lost_dc2 = _by_group(BASE, "dc2")
    assert lost_dc2["gpu"]["state"] == "whole" and lost_dc2["gpu"]["replaced"] == 3
    assert lost_dc2["preprocess"]["lost_instances"] == 0
    # a bigger dc2 quota makes losing dc1 survivable for the GPU group
    roomy = BASE.replace("dc2: {A30-24G: 4}", "dc2: {A30-24G: 6}")
    assert _by_group(roomy, "dc1")["gpu"]["state"] == "whole"


def test_losing_one_queue_and_the_cpu_and_memory_a_quota_holds() -> None:
    assert _by_group(BASE, "dc1-gpu")["preprocess"]["state"] == "whole"
    tight = BASE.replace("cpu_cores: 256", "cpu_cores: 112")  # 2x8 + 6x16 = 112 used
    gpu = _by_group(tight.replace("dc2: {A30-24G: 4}", "dc2: {A30-24G: 8}"), "dc1-gpu")["gpu"]
    assert gpu["state"] == "whole"  # dc1's three free their 48 cores for dc2's three
    one_gpu = evaluate(parse_platform_spec(BASE), "dc1", "com.example.search.ranker/gpu")
    assert [r.group for r in one_gpu] == ["gpu"]


def test_the_cli_exit_codes_say_whether_every_group_is_whole(tmp_path: Path) -> None:
    spec = tmp_path / "platform.yaml"
    spec.write_text(BASE)

    def dr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "modelyard.cli.main", "platform", "dr", "evaluate",
             "-f", str(spec), *args], capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    whole = dr("--lose", "dc2", "com.example.search.ranker/gpu", "--json")
    assert whole.returncode == 0 and json.loads(whole.stdout)[0]["state"] == "whole"
    degraded = dr("--lose", "dc1")
    assert degraded.returncode == 1 and "gpu: degraded" in degraded.stdout
    wrong = dr("--lose", "dc9")
    assert wrong.returncode == 2 and "rule=platform/dr" in wrong.stderr


def test_a_replacement_tries_the_next_surviving_data_centre_when_one_is_full() -> None:
    three = (
        BASE.replace("dc2: {A30-24G: 4}}", "dc2: {A30-24G: 3}, dc3: {A30-24G: 3}}")
        .replace("  dc2-gpu: {data_center: dc2, pool: gpu, gpu_models: [A30-24G]}\n",
                 "  dc2-gpu: {data_center: dc2, pool: gpu, gpu_models: [A30-24G]}\n"
                 "  dc3-gpu: {data_center: dc3, pool: gpu, gpu_models: [A30-24G]}\n")
        .replace("data_centers: [dc1, dc2]", "data_centers: [dc1, dc2, dc3]")
        .replace("queues: {dc1: dc1-gpu, dc2: dc2-gpu}, replicas: 3",
                 "queues: {dc1: dc1-gpu, dc2: dc2-gpu, dc3: dc3-gpu}, replicas: 1")
        .replace("total_cards: 6", "total_cards: 3").replace("cards: 6", "cards: 3")
    )  # fmt: skip
    # one instance per data centre; dc2 holds one card, its own instance's: it is full
    crowded = three.replace("dc2: {A30-24G: 3}", "dc2: {A30-24G: 1}")
    gpu = _by_group(crowded, "dc1")["gpu"]
    assert gpu["state"] == "whole" and gpu["replaced"] == 1  # dc2 full, dc3 took it


def test_after_a_loss_the_plan_holds_the_survivors_and_the_replacements_at_new_indices() -> None:
    spec = parse_platform_spec(BASE)
    planned, recoveries = after_loss(spec, {"dc2"})
    (gpu,) = [r for r in recoveries if r.group == "gpu"]
    gpu_slots = sorted((p.data_center, p.index) for p in planned if p.group == "gpu")
    # dc2's three instances of the gpu group run in dc1 after its own three: indices 3 to 5
    assert gpu_slots == [("dc1", i) for i in range(6)]
    assert [(p.data_center, p.index) for p in gpu.placed] == [("dc1", 3), ("dc1", 4), ("dc1", 5)]
    assert gpu.to_json()["placed"] == {"dc1": 3}
    # the same with the autoscaler's 2 replicas: dc2's two follow dc1's two
    planned, _ = after_loss(spec, {"dc2"}, {"com.example.search.ranker/gpu/a30": 2})
    assert sorted(p.index for p in planned if p.group == "gpu") == [0, 1, 2, 3]
    # nothing lost: the spec's own instances
    assert after_loss(spec, set()) == (expand(spec), [])


def test_a_place_is_one_the_spec_has_or_one_declared_lost_before_the_spec_dropped_it(
    tmp_path: Path,
) -> None:
    spec = parse_platform_spec(BASE)
    check_place(spec, State(tmp_path), "dc2")
    check_place(spec, State(tmp_path), "dc1-gpu")  # a queue
    with pytest.raises(ConfigError, match="'dc9' is neither a data centre nor a queue"):
        check_place(spec, State(tmp_path), "dc9")
    check_place(spec, State(tmp_path, lost={"dc9": {"at": "then", "how": "declared"}}), "dc9")


class RecordingScaler:
    """A cluster's Deployments' scale as a fail-over sets it (or a refusal, ``failing``)."""

    def __init__(self, failing: bool = False) -> None:
        self.failing = failing
        self.counts: list[dict[tuple[str, str, str, str], int]] = []

    def scale(self, *args: object, **kwargs: object) -> list[str]:
        raise AssertionError("a fail-over sets each Deployment on its own")

    def replicas(self, *args: object, **kwargs: object) -> list[int | None]:
        raise AssertionError("not read")

    def scale_deployments(
        self, spec: object, counts: dict[tuple[str, str, str, str], int]
    ) -> list[str]:
        if self.failing:
            raise ConfigError("the cluster refused PATCH", rule="platform/kubernetes-apply")
        self.counts.append(dict(counts))
        return [f"applied {key}" for key in counts]


def test_on_a_cluster_a_lost_data_centre_s_deployments_go_to_none_and_the_rest_take_them(
    tmp_path: Path,
) -> None:
    spec, state = parse_platform_spec(BASE), State.load(tmp_path)
    ranker = "com.example.search.ranker"
    dc1, dc2 = (ranker, "gpu", "a30", "dc1"), (ranker, "gpu", "a30", "dc2")
    counts, _ = cluster_replicas(spec, state)
    assert counts == {(ranker, "preprocess", "cpu", "dc1"): 2, dc1: 3, dc2: 3}
    scaler = RecordingScaler()
    fail_over_on_cluster(spec, state, scaler, "dc2")
    # dc1 holds 8 cards, 3 used: all 3 of dc2's instances are placed there
    assert scaler.counts[-1] == {(ranker, "preprocess", "cpu", "dc1"): 2, dc1: 6, dc2: 0}
    assert set(State.load(tmp_path).lost) == {"dc2"}
    (event,) = history(tmp_path, f"{ranker}/gpu")
    assert event["action"] == "dr fail-over" and event["to"] == {"placed": {"dc1": 3}}
    assert event["numbers"]["replicas"] == {"a30/dc1": 6, "a30/dc2": 0}
    restore_on_cluster(spec, state, scaler, "dc2")
    assert scaler.counts[-1] == counts and State.load(tmp_path).lost == {}
    assert history(tmp_path, f"{ranker}/gpu")[-1]["action"] == "dr restore"


def test_on_a_cluster_a_refused_fail_over_is_recorded_and_the_loss_kept_to_run_again(
    tmp_path: Path,
) -> None:
    spec, state = parse_platform_spec(BASE), State.load(tmp_path)
    with pytest.raises(ConfigError, match="the cluster refused PATCH"):
        fail_over_on_cluster(spec, state, RecordingScaler(failing=True), "dc1")
    assert set(State.load(tmp_path).lost) == {"dc1"}  # run again, it finishes the job
    event = history(tmp_path, "com.example.search.ranker/preprocess")[-1]
    assert event["action"] == "dr fail-over failed"
    assert "rule=platform/kubernetes-apply" in event["numbers"]["error"]
    fail_over_on_cluster(spec, state, RecordingScaler(), "dc1")
    with pytest.raises(ConfigError, match="the cluster refused PATCH"):
        restore_on_cluster(spec, state, RecordingScaler(failing=True), "dc1")
    # the Deployments still hold the fail-over's counts: the place stays lost
    assert set(State.load(tmp_path).lost) == {"dc1"} and set(state.lost) == {"dc1"}
    assert history(tmp_path, "com.example.search.ranker/preprocess")[-1]["action"] == (
        "dr restore failed"
    )


def test_losing_a_place_while_another_is_lost_counts_from_where_instances_run_now() -> None:
    spec = parse_platform_spec(BASE)
    # from the spec's placement: dc1 holds 3 of the gpu group's instances, dc2 takes 1
    (gpu,) = [r for r in evaluate(spec, "dc1") if r.group == "gpu"]
    assert (gpu.lost_instances, gpu.replaced) == (3, 1)
    # with dc2 already lost, its 3 run in dc1 now: losing dc1 loses all 6, and nowhere is left
    (gpu,) = [r for r in evaluate(spec, "dc1", already_lost={"dc2"}) if r.group == "gpu"]
    assert (gpu.lost_instances, gpu.replaced, len(gpu.shortfall)) == (6, 0, 6)
    assert "runs in no other data centre" in gpu.shortfall[0]
