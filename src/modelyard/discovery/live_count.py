"""How many live instances the registry shows for a serving instance's service.

``LiveInstanceCount`` resolves the service once, then follows ``Registry.watch``;
``count()`` is what the cluster-qps guard reads (its share of the limit without
Redis, and its chunk cap with it); ``limiting_locally()`` counts the other
instances whose entries say they enforce their share without Redis. The
instance always counts itself, also before its own entry is written (``own_id``
unset or not listed yet) and while the registry cannot be read: then the last
count stands, and the follower resolves again with backoff.
"""

from __future__ import annotations

import asyncio

import structlog

from modelyard.discovery.registry import Registry, Snapshot
from modelyard.tasks import cancel_and_wait

log = structlog.get_logger("modelyard.discovery")

RETRY_MIN_SECS = 0.5
RETRY_MAX_SECS = 5.0


class LiveInstanceCount:
    """The live instances of ``service``, followed from ``registry`` (which it owns)."""

    def __init__(self, registry: Registry, service: str) -> None:
        self.registry = registry
        self.service = service
        self.own_id: str | None = None  # this instance's entry, once its id is known
        self._ids: frozenset[str] = frozenset()
        self._local: frozenset[str] = frozenset()  # entries that enforce cluster limits alone
        self._task: asyncio.Task[None] | None = None
        self._logged: int | None = None
        self._failing = False

    def count(self) -> int:
        ids = self._ids
        return len(ids) if self.own_id in ids else len(ids) + 1

    def limiting_locally(self) -> int:
        return len(self._local - {self.own_id})

    def start(self) -> None:
        self._task = asyncio.create_task(self._follow())

    async def aclose(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        await self.registry.aclose()

    def _apply(self, snapshot: Snapshot) -> None:
        self._ids = frozenset(i.instance_id for i in snapshot.instances)
        self._local = frozenset(i.instance_id for i in snapshot.instances if i.cluster_limit_local)
        count = self.count()
        if count != self._logged:
            self._logged = count
            log.info("live_instances", service=self.service, count=count)

    async def _follow(self) -> None:
        delay = RETRY_MIN_SECS
        while True:
            try:
                snapshot = await self.registry.resolve(self.service)
                self._apply(snapshot)
                delay, self._failing = RETRY_MIN_SECS, False
                watched = self.registry.watch(self.service, snapshot.revision)
                try:
                    async for snapshot in watched:
                        self._apply(snapshot)
                finally:
                    aclose = getattr(watched, "aclose", None)
                    if aclose is not None:
                        await aclose()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the registry's trouble must not end the following
                if not self._failing:  # once per outage, not every retry
                    self._failing = True
                    log.warning(
                        "live_instances_unreadable",
                        service=self.service,
                        error=f"{type(exc).__name__}: {exc}",
                        counting=self.count(),
                    )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECS)
