"""One contract for every RulesStore backend: embedded (SQLite) and etcd (a real etcd-server)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelyard.discovery.embedded import EmbeddedRulesStore
from modelyard.discovery.rules_store import (
    RulesConflict,
    RulesRevision,
    RulesStore,
    open_rules_store,
)
from modelyard.governance.rules_document import commit_change, load_rules, set_key
from tests.support.etcd_server import EtcdServer

WAIT = 5.0
BREAKER = {"interface": "infer", "kind": "error_count", "threshold": 3}


@dataclass
class Backend:
    name: str
    open: Callable[[], RulesStore]  # a fresh client, as another process would hold


@pytest.fixture(params=["embedded", "etcd"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        path = tmp_path / "registry.db"
        return Backend("embedded", lambda: EmbeddedRulesStore(path, poll_interval=0.02))
    server: EtcdServer = request.getfixturevalue("etcd")
    return Backend("etcd", lambda: open_rules_store(server.url))


def service_name() -> str:
    return f"com.example.test.r{uuid.uuid4().hex[:8]}"


def revision(service: str, number: int, qps: int) -> RulesRevision:
    document = f"limits:\n  infer:\n    instance_qps: {qps}\n"
    return RulesRevision(service, number, document, "alice@host", 1000.0 + number, "set", "")


def test_put_get_and_history(backend: Backend) -> None:
    service = service_name()

    async def go() -> None:
        store = backend.open()
        try:
            assert await store.get(service) is None
            assert await store.history(service) == []
            first = revision(service, 1, 10)
            await store.put(first)
            assert await store.get(service) == first
            await store.put(revision(service, 2, 20))
            assert (await store.get(service, 1)) == first
            assert [r.revision for r in await store.history(service)] == [2, 1]
            assert [r.revision for r in await store.history(service, limit=1)] == [2]
            assert await store.get(service, 9) is None
            assert await store.get(service_name()) is None  # services do not mix
        finally:
            await store.aclose()

    asyncio.run(go())


def test_a_put_from_a_stale_revision_changes_nothing(backend: Backend) -> None:
    service = service_name()

    async def go() -> None:
        store = backend.open()
        try:
            await store.put(revision(service, 1, 10))
            for stale in (revision(service, 1, 99), revision(service, 3, 99)):
                with pytest.raises(RulesConflict) as lost:
                    await store.put(stale)
                assert lost.value.found == 1
            current = await store.get(service)
            assert current is not None and "instance_qps: 10" in current.document
            assert len(await store.history(service)) == 1
        finally:
            await store.aclose()

    asyncio.run(go())


def test_concurrent_writers_each_get_a_revision_and_lose_no_change(backend: Backend) -> None:
    service = service_name()

    async def writer(index: int) -> None:
        store = backend.open()
        try:
            await commit_change(
                store,
                service,
                lambda d: set_key(d, f"breakers.b{index}", BREAKER),
                author=f"writer{index}",
                action=f"set breakers.b{index}",
            )
        finally:
            await store.aclose()

    async def go() -> RulesRevision | None:
        await asyncio.gather(*(writer(i) for i in range(4)))
        store = backend.open()
        try:
            history = await store.history(service)
            assert [r.revision for r in history] == [4, 3, 2, 1]
            return await store.get(service)
        finally:
            await store.aclose()

    current = asyncio.run(go())
    assert current is not None
    assert sorted(load_rules(current.document)["breakers"]) == ["b0", "b1", "b2", "b3"]


def test_watch_yields_each_new_current_revision(backend: Backend) -> None:
    service = service_name()

    async def go() -> None:
        writer, reader = backend.open(), backend.open()
        try:
            await writer.put(revision(service, 1, 10))
            seen: list[int] = []
            watch = reader.watch(service, 0)
            seen.append((await asyncio.wait_for(anext(watch), WAIT)).revision)
            await writer.put(revision(service, 2, 20))
            got = await asyncio.wait_for(anext(watch), WAIT)
            seen.append(got.revision)
            assert "instance_qps: 20" in got.document
            await watch.aclose()  # type: ignore[attr-defined]
            assert seen == [1, 2]
            # from the current revision: nothing until the next one
            quiet = reader.watch(service, 2)
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(anext(quiet), 0.3)
            await quiet.aclose()  # type: ignore[attr-defined]
        finally:
            await writer.aclose()
            await reader.aclose()

    asyncio.run(go())


def test_etcd_watch_survives_a_restart_and_reads_the_revision_written_meanwhile(
    etcd: EtcdServer,
) -> None:
    service = service_name()

    async def go() -> None:
        writer, reader = open_rules_store(etcd.url), open_rules_store(etcd.url)
        try:
            await writer.put(revision(service, 1, 10))
            watch = reader.watch(service, 0)
            assert (await asyncio.wait_for(anext(watch), WAIT)).revision == 1
            await asyncio.to_thread(etcd.kill)
            await asyncio.to_thread(etcd.start)
            await writer.put(revision(service, 2, 20))
            got = await asyncio.wait_for(anext(watch), WAIT)
            assert got.revision == 2 and "instance_qps: 20" in got.document
            await watch.aclose()  # type: ignore[attr-defined]
        finally:
            await writer.aclose()
            await reader.aclose()

    asyncio.run(go())
