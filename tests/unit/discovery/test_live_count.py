"""The live-instance count a serving instance divides its cluster limit by."""

from __future__ import annotations

import asyncio

from modelyard.discovery.live_count import LiveInstanceCount
from modelyard.discovery.registry import Instance
from tests.support.memory_registry import MemoryRegistry


def entry(instance_id: str, service: str = "svc") -> Instance:
    return Instance(service=service, group="g", instance_id=instance_id)


async def settle(predicate, timeout: float = 2.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the count did not follow the registry")


def test_the_count_follows_the_registry_and_always_includes_this_instance() -> None:
    async def scenario() -> None:
        registry = MemoryRegistry()
        live = LiveInstanceCount(registry, "svc")
        assert live.count() == 1  # nothing read yet: this instance alone
        live.start()
        await registry.register(entry("other"), ttl=60)
        await registry.register(entry("elsewhere", service="another"), ttl=60)
        await settle(lambda: live.count() == 2)  # the other one, and this one not yet listed
        live.own_id = "me"
        mine = await registry.register(entry("me"), ttl=60)
        await asyncio.sleep(0.05)
        assert live.count() == 2  # listed now: not counted twice
        third = await registry.register(entry("third"), ttl=60)
        await settle(lambda: live.count() == 3)
        await registry.deregister(third)
        await settle(lambda: live.count() == 2)

        registry.reachable = False  # the last count stands while the registry is down
        await asyncio.sleep(0.3)
        assert live.count() == 2
        registry.reachable = True  # and the follower picks up again
        await registry.deregister(mine)
        await registry.register(entry("fourth"), ttl=60)
        await registry.register(entry("fifth"), ttl=60)
        await settle(lambda: live.count() == 4)
        await live.aclose()

    asyncio.run(scenario())
