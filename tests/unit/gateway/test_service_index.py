"""The gateway's view of its service's models: every instance's versions in one index, as
the front doors read a model server's, and no repository actions."""

from __future__ import annotations

import asyncio

import pytest

from modelyard.client import ClientError
from modelyard.client.client import AsyncClient
from modelyard.discovery.registry import Instance
from modelyard.errors import Code
from modelyard.gateway.forward import ServiceIndex
from tests.support.memory_registry import MemoryRegistry

SERVICE = "com.example.gateway.index"


def test_the_index_merges_the_instances_versions_and_refuses_repository_actions() -> None:
    async def run() -> None:
        registry = MemoryRegistry()
        one = {"m": {"1": "UNAVAILABLE", "10": "READY"}, "n": {"2": "READY"}}
        two = {"m": {"1": "READY", "2": "LOADING"}}
        for name, models in (("one", one), ("two", two)):
            entry = Instance(SERVICE, "a", name, http=f"10.0.0.{len(name)}:8000", models=models)
            await registry.register(entry, ttl=300)
        client = AsyncClient(SERVICE, registry)
        await client.start()
        try:
            index = ServiceIndex(client)
            # READY anywhere is READY; versions in number order, not text order
            assert index.index() == [
                {"name": "m", "version": "1", "state": "READY"},
                {"name": "m", "version": "2", "state": "LOADING"},
                {"name": "m", "version": "10", "state": "READY"},
                {"name": "n", "version": "2", "state": "READY"},
            ]
            assert [(r["name"], r["version"]) for r in index.index(ready_only=True)] == [
                ("m", "1"), ("m", "10"), ("n", "2")
            ]  # fmt: skip
            assert index.is_ready()
            for action in (index.load("m"), index.unload("m")):
                with pytest.raises(ClientError) as error:
                    await action
                assert error.value.code is Code.UNIMPLEMENTED
                assert "the gateway forwards inference" in str(error.value)
                assert "rule=gateway/repository" in str(error.value)
        finally:
            await client.aclose()

    asyncio.run(run())


def test_a_service_with_no_instance_is_not_ready_and_indexes_nothing() -> None:
    async def run() -> None:
        client = AsyncClient(SERVICE, MemoryRegistry())
        await client.start()
        try:
            index = ServiceIndex(client)
            assert index.index() == [] and not index.is_ready()
        finally:
            await client.aclose()

    asyncio.run(run())
