"""One contract for every Registry backend: embedded (SQLite) and etcd (a real etcd-server).

The embedded backend runs on a fake clock; etcd keeps time itself, so its TTL
tests wait real seconds (etcd raises leases under 2 s to 2 s).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from modelyard.clock import FakeClock
from modelyard.discovery import Instance, Registry, RegistryError, Snapshot, open_registry
from modelyard.discovery.embedded import EmbeddedRegistry
from modelyard.discovery.etcd import EtcdRegistry
from modelyard.errors import ConfigError
from tests.support.etcd_server import EtcdServer, running_etcd

WAIT = 5.0  # seconds a watcher may take to report a change


@dataclass
class Backend:
    name: str
    open: Callable[[], Registry]  # a fresh client, as another process would hold
    elapse: Callable[[float], Awaitable[None]]  # let time pass for TTLs


@pytest.fixture(params=["embedded", "etcd"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        clock = FakeClock(start=time.time())
        path = tmp_path / "registry.db"

        async def advance(seconds: float) -> None:
            clock.advance(seconds)

        return Backend(
            "embedded", lambda: EmbeddedRegistry(path, clock=clock, poll_interval=0.02), advance
        )
    server: EtcdServer = request.getfixturevalue("etcd")
    return Backend("etcd", lambda: open_registry(server.url), asyncio.sleep)


def service_name() -> str:
    return f"com.example.test.s{uuid.uuid4().hex[:8]}"


def instance(service: str, instance_id: str = "a", **changes: object) -> Instance:
    doc: dict[str, object] = {
        "service": service,
        "group": "g1",
        "instance_id": instance_id,
        "http": f"127.0.0.1:{8000 + len(instance_id)}",
        "grpc": "127.0.0.1:8001",
        "models": {"iris": {"1": "READY"}},
        "labels": {"data_center": "dc1", "queue": "q1"},
        "spec": "8C/32G",
        "weight": 2.0,
        **changes,
    }
    return Instance.from_json(doc)


def ids(snapshot: Snapshot) -> list[str]:
    return sorted(i.instance_id for i in snapshot.instances)


async def next_snapshot(watcher: AsyncIterator[Snapshot], timeout: float = WAIT) -> Snapshot:
    return await asyncio.wait_for(anext(watcher), timeout)


async def until_ids(
    watcher: AsyncIterator[Snapshot], expected: list[str], timeout: float = WAIT
) -> Snapshot:
    """The first snapshot whose instances are ``expected``; earlier ones are stale."""
    deadline = time.monotonic() + timeout
    while True:
        snapshot = await next_snapshot(watcher, max(0.01, deadline - time.monotonic()))
        if ids(snapshot) == expected:
            return snapshot


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())  # type: ignore[arg-type]


# ---- the contract ---------------------------------------------------------


def test_register_then_resolve(backend: Backend) -> None:
    async def scenario() -> None:
        registry, reader = backend.open(), backend.open()
        service = service_name()
        written = instance(service)
        lease = await registry.register(written, ttl=10)
        assert (lease.service, lease.instance_id) == (service, "a")

        snapshot = await reader.resolve(service)
        assert [i.to_json() for i in snapshot.instances] == [written.to_json()]
        assert snapshot.instances[0].serves("iris", "1")
        assert snapshot.revision > 0
        assert (await reader.resolve(service_name())).instances == []
        await registry.deregister(lease)
        await registry.aclose()
        await reader.aclose()

    run(scenario)


def test_entries_expire_after_ttl_unless_heartbeats_keep_them(backend: Backend) -> None:
    async def scenario() -> None:
        registry = backend.open()
        service = service_name()
        kept = await registry.register(instance(service, "kept"), ttl=2)
        await registry.register(instance(service, "dropped"), ttl=2)
        assert ids(await registry.resolve(service)) == ["dropped", "kept"]
        for _ in range(5):
            await backend.elapse(0.7)
            await registry.heartbeat(kept)
        assert ids(await registry.resolve(service)) == ["kept"]
        await registry.deregister(kept)
        await registry.aclose()

    run(scenario)


def test_update_replaces_the_entry_under_the_same_lease(backend: Backend) -> None:
    async def scenario() -> None:
        registry = backend.open()
        service = service_name()
        lease = await registry.register(instance(service), ttl=10)
        before = await registry.resolve(service)
        changed = instance(service, models={"iris": {"1": "READY", "2": "READY"}}, weight=0.5)
        await registry.update(lease, changed)
        after = await registry.resolve(service)
        assert after.revision > before.revision
        assert [i.to_json() for i in after.instances] == [changed.to_json()]
        await registry.heartbeat(lease)
        assert [i.to_json() for i in (await registry.resolve(service)).instances] == [
            changed.to_json()
        ]
        await registry.deregister(lease)
        await registry.aclose()

    run(scenario)


def test_deregister_removes_the_entry_at_once_and_for_good(backend: Backend) -> None:
    async def scenario() -> None:
        registry = backend.open()
        service = service_name()
        lease = await registry.register(instance(service), ttl=10)
        other = await registry.register(instance(service, "b"), ttl=10)
        await registry.deregister(lease)
        assert ids(await registry.resolve(service)) == ["b"]
        await registry.heartbeat(lease)  # a late heartbeat must not bring it back
        assert ids(await registry.resolve(service)) == ["b"]
        await registry.deregister(other)
        await registry.aclose()

    run(scenario)


def test_watch_yields_a_snapshot_after_each_change(backend: Backend) -> None:
    async def scenario() -> None:
        registry, reader = backend.open(), backend.open()
        service = service_name()
        start = await reader.resolve(service)
        watcher = reader.watch(service, start.revision)
        pending = asyncio.ensure_future(next_snapshot(watcher))
        await asyncio.sleep(0.2)  # the watcher is waiting before the change
        lease = await registry.register(instance(service), ttl=10)
        first = await pending
        assert ids(first) == ["a"]
        assert first.revision > start.revision

        await registry.update(lease, instance(service, state="DRAINING"))
        second = await next_snapshot(watcher)
        assert second.instances[0].state == "DRAINING"
        assert second.revision > first.revision

        await registry.deregister(lease)
        assert ids(await until_ids(watcher, [])) == []
        await watcher.aclose()  # type: ignore[attr-defined]
        await registry.aclose()
        await reader.aclose()

    run(scenario)


def test_watch_from_a_resolved_revision_loses_no_change(backend: Backend) -> None:
    async def scenario() -> None:
        registry, reader = backend.open(), backend.open()
        service = service_name()
        seen = await reader.resolve(service)
        lease = await registry.register(instance(service), ttl=10)  # between resolve and watch
        watcher = reader.watch(service, seen.revision)
        assert ids(await next_snapshot(watcher)) == ["a"]
        await watcher.aclose()  # type: ignore[attr-defined]
        await registry.deregister(lease)
        await registry.aclose()
        await reader.aclose()

    run(scenario)


def test_watch_reports_an_expiry(backend: Backend) -> None:
    async def scenario() -> None:
        registry, reader = backend.open(), backend.open()
        service = service_name()
        await registry.register(instance(service), ttl=2)
        watcher = reader.watch(service, (await reader.resolve(service)).revision)
        await backend.elapse(3.0)
        assert ids(await until_ids(watcher, [])) == []
        await watcher.aclose()  # type: ignore[attr-defined]
        await registry.aclose()
        await reader.aclose()

    run(scenario)


# ---- etcd only: compaction and restarts ------------------------------------


def test_etcd_watch_from_a_compacted_revision_lists_again_and_continues(
    etcd: EtcdServer,
) -> None:
    async def scenario() -> None:
        registry, reader = open_registry(etcd.url), open_registry(etcd.url)
        service = service_name()
        seen = await reader.resolve(service)
        first = await registry.register(instance(service, "a"), ttl=10)
        second = await registry.register(instance(service, "b"), ttl=10)
        await registry.deregister(first)
        now = (await reader.resolve(service)).revision
        async with httpx.AsyncClient() as client:
            compacted = await client.post(
                f"{etcd.endpoint}/v3/kv/compaction", json={"revision": str(now)}
            )
        assert compacted.status_code == 200, compacted.text

        watcher = reader.watch(service, seen.revision)
        relisted = await next_snapshot(watcher)
        assert ids(relisted) == ["b"]
        assert relisted.revision >= now
        third = await registry.register(instance(service, "c"), ttl=10)
        assert ids(await next_snapshot(watcher)) == ["b", "c"]
        await watcher.aclose()  # type: ignore[attr-defined]
        for lease in (second, third):
            await registry.deregister(lease)
        await registry.aclose()
        await reader.aclose()

    run(scenario)


def test_etcd_restart_keeps_instances_and_watchers_without_restarting_them(
    tmp_path: Path,
) -> None:
    with running_etcd(tmp_path) as server:

        async def scenario() -> None:
            registry, reader = open_registry(server.url), open_registry(server.url)
            service = service_name()
            lease = await registry.register(instance(service, "a"), ttl=2)
            views: list[list[str]] = []

            async def follow() -> None:
                async for snapshot in reader.watch(service, 0):
                    views.append(ids(snapshot))

            async def watcher_sees(expected: list[str]) -> None:
                deadline = time.monotonic() + WAIT
                while not views or views[-1] != expected:
                    assert time.monotonic() < deadline, f"watcher saw {views}"
                    await asyncio.sleep(0.02)

            following = asyncio.create_task(follow())
            await watcher_sees(["a"])

            # a restart with its data: the lease survives with its TTL reset
            await asyncio.to_thread(server.stop)
            with pytest.raises(RegistryError):
                await registry.heartbeat(lease)
            await asyncio.to_thread(server.start)
            await registry.heartbeat(lease)
            other = await registry.register(instance(service, "b"), ttl=10)
            await watcher_sees(["a", "b"])
            await registry.deregister(other)
            await watcher_sees(["a"])

            # a crash that loses the data: heartbeat grants a new lease and puts the entry back
            await asyncio.to_thread(server.kill)
            shutil.rmtree(server.data_dir)
            await asyncio.to_thread(server.start)
            assert ids(await reader.resolve(service)) == []
            await registry.heartbeat(lease)
            regranted = await reader.resolve(service)
            assert ids(regranted) == ["a"]
            await watcher_sees(["a"])
            for _ in range(4):  # past the TTL: heartbeats keep the new lease alive
                await asyncio.sleep(0.7)
                await registry.heartbeat(lease)
            kept = await reader.resolve(service)
            assert (ids(kept), kept.revision) == (["a"], regranted.revision)  # not put again

            await registry.deregister(lease)
            await watcher_sees([])
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
            await registry.aclose()
            await reader.aclose()

        run(scenario)


# ---- embedded only: many processes on one machine -------------------------

REGISTER_ELSEWHERE = """
import asyncio, sys
from modelyard.discovery import Instance, open_registry

async def main():
    registry = open_registry(sys.argv[1])
    instance = Instance(service=sys.argv[2], group="g2", instance_id="other-process",
                        http="127.0.0.1:9000", models={"iris": {"1": "READY"}})
    await registry.register(instance, ttl=30)
    await registry.aclose()

asyncio.run(main())
"""


def test_embedded_sees_instances_registered_by_another_process(tmp_path: Path) -> None:
    url = f"embedded://{tmp_path / 'shared' / 'registry.db'}"
    service = service_name()

    async def scenario() -> None:
        reader = open_registry(url)
        watcher = reader.watch(service, (await reader.resolve(service)).revision)
        pending = asyncio.ensure_future(next_snapshot(watcher, timeout=30))
        completed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", textwrap.dedent(REGISTER_ELSEWHERE), url, service],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert completed.returncode == 0, completed.stderr
        assert ids(await pending) == ["other-process"]
        resolved = await reader.resolve(service)
        assert resolved.instances[0].group == "g2"
        assert resolved.instances[0].serves("iris")
        await watcher.aclose()  # type: ignore[attr-defined]
        await reader.aclose()

    run(scenario)


# ---- URLs -----------------------------------------------------------------


def test_open_registry_parses_each_url_form(tmp_path: Path) -> None:
    embedded = open_registry(f"embedded://{tmp_path}/r.db")
    assert isinstance(embedded, EmbeddedRegistry)
    assert embedded.path == tmp_path / "r.db"
    assert isinstance(open_registry("embedded"), EmbeddedRegistry)
    cluster = open_registry("etcd://10.0.0.1:2379,etcd-2.local:2379")
    assert isinstance(cluster, EtcdRegistry)
    assert cluster.endpoints == ["http://10.0.0.1:2379", "http://etcd-2.local:2379"]
    asyncio.run(cluster.aclose())


@pytest.mark.parametrize(
    "url",
    [
        "zookeeper://host:2181",
        "/var/run/registry.db",
        "embedded://host/registry.db",
        "embedded:relative.db",
        "etcd://",
        "etcd://host",
        "etcd://host:port",
        "etcd://host:2379/path",
    ],
)
def test_open_registry_rejects_bad_urls_with_the_forms_it_takes(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_registry(url)
    assert "--registry takes embedded" in caught.value.line()
