"""The rate limiter's resources: sized by flags or by the largest need, taken whole, and
given to the waiter with the fewest executions weighted by priority (Triton's)."""

from __future__ import annotations

import threading
import time

import pytest
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.server.resource_limiter import InstanceNeeds, ResourceLimiter, instance_needs


def _needs(name: str, count: int, priority: int = 1, device: str = "cpu") -> InstanceNeeds:
    return InstanceNeeds((((name, device), count),), priority)


def test_needs_follow_the_instance_groups_and_global_resources_share_one_pool() -> None:
    config = mc.ModelConfig()
    group = config.instance_group.add(count=2, kind=mc.ModelInstanceGroup.Kind.KIND_CPU)
    group.rate_limiter.resources.add(name="R", count=2)
    shared = group.rate_limiter.resources.add(name="G", count=1)
    setattr(shared, "global", True)
    group.rate_limiter.priority = 3
    config.instance_group.add(count=1, kind=mc.ModelInstanceGroup.Kind.KIND_CPU)
    placed = [("cpu", config.instance_group[0])] * 2 + [("cpu", config.instance_group[1])]
    needs = instance_needs(placed)
    assert needs[0] == InstanceNeeds(((("R", "cpu"), 2), (("G", "global"), 1)), 3)
    assert needs[1] == needs[0] and needs[1] is not needs[0] and needs[2] is None


def test_without_flags_a_resource_holds_the_largest_need_and_with_them_what_they_give() -> None:
    unsized = ResourceLimiter()
    unsized.add([_needs("R", 2), _needs("S", 3), _needs("S", 1), None])
    assert unsized.available() == {("R", "cpu"): 2, ("S", "cpu"): 3}
    sized = ResourceLimiter([("R", 5, None), ("R", 7, "cuda:1"), ("G", 2, "cuda:3")])
    sized.add([_needs("R", 2), _needs("R", 3, device="cuda:1"), _needs("G", 1, device="global")])
    # per device: the flag for every device, or the device's own; global: any flag's
    assert sized.available() == {("R", "cpu"): 5, ("R", "cuda:1"): 7, ("G", "global"): 2}


def test_the_lowest_priority_value_goes_first_among_instances_that_ran_as_often() -> None:
    limiter = ResourceLimiter([("R", 1, None)])
    first, low, high = _needs("R", 1, 1), _needs("R", 1, 5), _needs("R", 1, 2)
    low.executions = high.executions = 1
    limiter.add([first, low, high])
    order: list[str] = []
    holding = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with limiter.held(first):
            holding.set()
            release.wait(5)

    def wait_for(needs: InstanceNeeds, name: str) -> None:
        with limiter.held(needs):
            order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(5)
    waiters = [
        threading.Thread(target=wait_for, args=(low, "priority 5")),
        threading.Thread(target=wait_for, args=(high, "priority 2")),
    ]
    for waiter in waiters:
        waiter.start()
        time.sleep(0.05)  # both wait before the resource frees
    release.set()
    for thread in (holder, *waiters):
        thread.join(5)
    assert order == ["priority 2", "priority 5"]
    assert limiter.available() == {("R", "cpu"): 1}


def test_instances_run_in_proportion_to_their_priorities_while_both_have_work() -> None:
    """Triton's scaled priority: one of priority 2 gets half the turns of one of 1."""
    limiter = ResourceLimiter()
    one, two = _needs("R", 1, 0), _needs("R", 1, 2)  # 0 counts as 1
    limiter.add([one, two])
    turns: list[str] = []
    stop = threading.Event()

    def work(needs: InstanceNeeds, name: str) -> None:
        while not stop.is_set():
            with limiter.held(needs, more=lambda: True):  # it keeps its turn as it releases
                turns.append(name)
                time.sleep(0.002)
            time.sleep(0.001)  # forming its next batch: the other is waiting meanwhile

    workers = [threading.Thread(target=work, args=(n, str(n.priority))) for n in (one, two)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 10
    while len(turns) < 300 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    for worker in workers:
        worker.join(5)
    ratio = turns.count("0") / max(turns.count("2"), 1)
    assert 1.7 < ratio < 2.3, (turns.count("0"), turns.count("2"))


def test_a_need_over_what_the_flags_give_is_refused_at_load_in_triton_s_words() -> None:
    """It could never execute: its requests would wait for ever. A resource no flag names
    has none once flags are given."""
    from modelyard.errors import ConfigError

    limiter = ResourceLimiter([("R", 1, None), ("S", 4, "cuda:10")])
    with pytest.raises(ConfigError) as refused:
        limiter.add([_needs("R", 2)], "big")
    assert refused.value.line().startswith(
        '[config] Resource count for "R" is limited to 1 which will prevent scheduling of one or '
        "more model instances, the minimum required count is 2 (model 'big')"
    )
    with pytest.raises(ConfigError) as unsized:
        both = InstanceNeeds(((("R", "cpu"), 1), (("S", "cuda:0"), 1)), 1)
        limiter.add([both], "elsewhere")
    assert 'Resource count for "S" is limited to 0' in unsized.value.line()
    assert limiter.available() == {}  # a refused model adds none of its resources


def test_a_resource_global_in_one_model_and_per_device_in_another_is_refused() -> None:
    from modelyard.errors import ConfigError

    limiter = ResourceLimiter()
    limiter.add([_needs("G", 2, device="global")], "first")
    with pytest.raises(ConfigError) as refused:
        limiter.add([_needs("G", 2, device="cpu")], "second")
    assert refused.value.line().startswith(
        '[config] Resource "G" is present as both global and device-specific resource in the model '
        "configuration."
    )
    assert "second/config.pbtxt" in refused.value.line()


def test_a_model_loaded_while_resources_are_held_adds_only_what_it_brings() -> None:
    limiter = ResourceLimiter()
    limiter.add([_needs("R", 2)])
    with limiter.held(_needs("R", 2)):
        limiter.add([_needs("R", 3)])  # the pool grows from 2 to 3 while 2 are held
        assert limiter.available() == {("R", "cpu"): 1}
    assert limiter.available() == {("R", "cpu"): 3}


def test_a_kept_turn_that_is_not_taken_lapses() -> None:
    """An instance that said it had more but does not ask again holds no one up for long."""
    limiter = ResourceLimiter()
    first, other = _needs("R", 1, 1), _needs("R", 1, 5)
    other.executions = 1
    limiter.add([first, other])
    with limiter.held(first, more=lambda: True):
        pass
    start = time.monotonic()
    with limiter.held(other):  # first (scaled 1) kept its turn ahead of other (scaled 5)
        waited = time.monotonic() - start
    assert 0.03 < waited < 1.0
