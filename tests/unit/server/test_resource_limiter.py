"""The rate limiter's resources: sized by flags or by the largest need, taken whole, and
given to the waiter of the lowest priority value first."""

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
    assert needs[1] == needs[0] and needs[2] is None


def test_an_unsized_resource_holds_the_largest_need_and_a_sized_one_its_flag() -> None:
    limiter = ResourceLimiter([("R", 5, None)])
    limiter.add([_needs("R", 2), _needs("S", 3), _needs("S", 1), None])
    assert limiter.available() == {("R", "cpu"): 5, ("S", "cpu"): 3}


def test_the_lowest_priority_value_goes_first_when_resources_free_up() -> None:
    limiter = ResourceLimiter([("R", 1, None)])
    first, low, high = _needs("R", 1, 1), _needs("R", 1, 5), _needs("R", 1, 2)
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


def test_a_need_over_the_sized_count_is_refused_at_load() -> None:
    """It could never execute: its requests would wait for ever."""
    from modelyard.errors import ConfigError

    limiter = ResourceLimiter([("R", 1, None)])
    with pytest.raises(ConfigError) as refused:
        limiter.add([_needs("R", 2)], "big")
    assert "needs 2 of resource 'R'" in refused.value.line()


def test_a_model_loaded_while_resources_are_held_adds_only_what_it_brings() -> None:
    limiter = ResourceLimiter()
    limiter.add([_needs("R", 2)])
    with limiter.held(_needs("R", 2)):
        limiter.add([_needs("R", 3)])  # the pool grows from 2 to 3 while 2 are held
        assert limiter.available() == {("R", "cpu"): 1}
    assert limiter.available() == {("R", "cpu"): 3}
