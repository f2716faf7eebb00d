"""A Registry held in one process's memory, for tests that need no backend.

A real implementation of the contract: leases expire ``ttl`` seconds after the
last heartbeat on the injected clock (checked whenever the registry is read or
a watcher wakes), every change bumps one revision, and ``watch`` yields a
snapshot after each change of the service. It is safe across threads and event
loops: a test thread may register while a client's loop in another thread
watches. ``reachable = False`` makes every call fail, as an unreachable backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.discovery.registry import Instance, Lease, Registry, Snapshot
from modelyard.errors import Code, ModelyardError

EXPIRY_CHECK_SECS = 0.2


class RegistryDown(ModelyardError):
    layer = "discovery"


@dataclass
class _Entry:
    lease: Lease
    instance: Instance
    expires: float


@dataclass
class _Watcher:
    service: str
    loop: asyncio.AbstractEventLoop
    wake: asyncio.Event


class MemoryRegistry(Registry):
    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.reachable = True
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._revision = 0
        self._changed_at: dict[str, int] = {}  # service -> revision of its last change
        self._watchers: list[_Watcher] = []

    # ---- Registry -------------------------------------------------------

    async def register(self, instance: Instance, ttl: float) -> Lease:
        self._check()
        lease = Lease(instance.service, instance.instance_id, uuid.uuid4().hex, ttl)
        with self._lock:
            self._put(lease, instance)
        self._notify()
        return lease

    async def heartbeat(self, lease: Lease) -> None:
        self._check()
        with self._lock:
            entry = self._entries.get((lease.service, lease.instance_id))
            if entry is not None and entry.lease.lease_id == lease.lease_id:
                entry.expires = self.clock.monotonic() + lease.ttl
                return
        raise RegistryDown(
            f"lease {lease.lease_id} of {lease.service}/{lease.instance_id} is gone",
            code=Code.FAILED_PRECONDITION,
            rule="discovery/lease",
            where="register the instance again",
        )

    async def update(self, lease: Lease, instance: Instance) -> None:
        self._check()
        with self._lock:
            entry = self._entries.get((lease.service, lease.instance_id))
            if entry is None or entry.lease.lease_id != lease.lease_id:
                raise RegistryDown(
                    f"lease {lease.lease_id} is gone",
                    code=Code.FAILED_PRECONDITION,
                    rule="discovery/lease",
                    where="register the instance again",
                )
            self._put(lease, instance)
        self._notify()

    async def deregister(self, lease: Lease) -> None:
        self._check()
        with self._lock:
            key = (lease.service, lease.instance_id)
            entry = self._entries.get(key)
            if entry is None or entry.lease.lease_id != lease.lease_id:
                return
            del self._entries[key]
            self._bump(lease.service)
        self._notify()

    async def resolve(self, service: str) -> Snapshot:
        self._check()
        snapshot, _ = self._read(service)
        return snapshot

    async def watch(self, service: str, since_revision: int) -> AsyncIterator[Snapshot]:
        self._check()
        watcher = _Watcher(service, asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._watchers.append(watcher)
        try:
            while True:
                snapshot, changed_at = self._read(service)
                if changed_at > since_revision:
                    since_revision = snapshot.revision
                    yield snapshot
                watcher.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watcher.wake.wait(), EXPIRY_CHECK_SECS)
                self._check()
        finally:
            with self._lock:
                self._watchers.remove(watcher)

    # ---- internals ------------------------------------------------------

    def _check(self) -> None:
        if not self.reachable:
            raise RegistryDown(
                "memory registry is unreachable (the test said so)",
                code=Code.UNAVAILABLE,
                rule="discovery/memory",
                where="MemoryRegistry.reachable",
            )

    def _put(self, lease: Lease, instance: Instance) -> None:
        stored = copy.deepcopy(instance)  # callers may keep mutating theirs
        self._entries[(lease.service, lease.instance_id)] = _Entry(
            lease, stored, self.clock.monotonic() + lease.ttl
        )
        self._bump(lease.service)

    def _bump(self, service: str) -> None:
        self._revision += 1
        self._changed_at[service] = self._revision

    def _read(self, service: str) -> tuple[Snapshot, int]:
        now = self.clock.monotonic()
        expired = False
        with self._lock:
            for key, entry in list(self._entries.items()):
                if entry.expires <= now:
                    del self._entries[key]
                    self._bump(key[0])
                    expired = True
            instances = [
                copy.deepcopy(e.instance)
                for (s, _), e in sorted(self._entries.items())
                if s == service
            ]
            snapshot = Snapshot(instances, self._revision)
            changed_at = self._changed_at.get(service, 0)
        if expired:
            self._notify()
        return snapshot, changed_at

    def _notify(self) -> None:
        with self._lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            with contextlib.suppress(RuntimeError):  # a closed loop: its watch is over
                watcher.loop.call_soon_threadsafe(watcher.wake.set)
