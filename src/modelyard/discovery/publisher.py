"""Self-registration: the serving process's entry in the registry, kept true.

``Publisher`` registers the instance once ``ready()`` first says so, then every
``poll_interval`` compares ``describe()`` with what it last wrote and updates
the entry when they differ (a model loaded or unloaded, a version failed), and
heartbeats every ``ttl / 3``. A registry that is down is retried on the next
tick; serving never waits on it. ``stop`` deregisters, so callers stop picking
this instance before it stops accepting requests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from modelyard.discovery.registry import LOADABLE, Instance, Lease, Registry
from modelyard.errors import ModelyardError
from modelyard.tasks import cancel_and_wait

log = structlog.get_logger("modelyard.discovery")


def models_from_index(
    index: Iterable[Mapping[str, Any]], loadable: Iterable[str] = ()
) -> dict[str, dict[str, str]]:
    """``ModelManager.index()`` rows as model → version → state; models with no version drop
    out, but for those the instance loads when asked for (``loadable``: "*" → LOADABLE)."""
    models: dict[str, dict[str, str]] = {}
    for row in index:
        version = row.get("version")
        if not version or not row.get("state"):
            continue
        versions = models.setdefault(str(row["name"]), {})
        # a version being replaced shows twice (new and retiring): the ready one speaks for it
        if versions.get(str(version)) != "READY":
            versions[str(version)] = str(row["state"])
    for name in loadable:
        if not any(state == "READY" for state in models.get(name, {}).values()):
            models.setdefault(name, {})["*"] = LOADABLE
    return models


class Publisher:
    """The registration loop of one instance; it owns ``registry`` and closes it on ``stop``."""

    def __init__(
        self,
        registry: Registry,
        describe: Callable[[], Instance],
        ready: Callable[[], bool],
        *,
        ttl: float = 5.0,
        poll_interval: float = 0.5,
    ) -> None:
        self.registry = registry
        self.ttl = ttl
        self.poll_interval = poll_interval
        self._describe = describe
        self._ready = ready
        self._lease: Lease | None = None
        self._published: Instance | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    @property
    def published(self) -> Instance | None:
        """The entry as last written, None before registration or after ``stop``."""
        return self._published

    def start(self) -> None:
        self._task = asyncio.create_task(self.run())

    async def run(self) -> None:
        while not self._ready():
            await asyncio.sleep(min(self.poll_interval, 0.05))
        next_beat = 0.0
        failing = False
        while True:
            try:
                if self._lease is None:
                    await self._register()
                    next_beat = time.monotonic() + self._lease_ttl() / 3
                else:
                    current = self._describe()
                    if current != self._published:
                        await self.registry.update(self._lease, current)
                        self._published = current
                        log.info("registry_updated", models=_model_states(current))
                    if time.monotonic() >= next_beat:
                        await self.registry.heartbeat(self._lease)
                        next_beat = time.monotonic() + self._lease_ttl() / 3
                if failing:
                    failing = False
                    log.info("registry_publish_recovered")
            except ModelyardError as exc:
                if not failing:  # once per outage, not every tick
                    log.warning("registry_publish_failed", **exc.fields())
                failing = True
            except Exception:  # a dead loop would let the entry expire while serving on
                if not failing:
                    log.exception("registry_publish_crashed")
                failing = True
            wait = self.poll_interval if failing else next_beat - time.monotonic()
            await asyncio.sleep(max(0.0, min(self.poll_interval, wait)))

    async def stop(self, timeout: float = 3.0) -> None:
        """Stop heartbeating and remove the entry now (best effort within ``timeout``)."""
        if self._stopped:
            return
        self._stopped = True
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        lease, self._lease, self._published = self._lease, None, None
        try:
            if lease is not None:
                await asyncio.wait_for(self.registry.deregister(lease), timeout)
                log.info("registry_deregistered", service=lease.service, instance=lease.instance_id)
        except (ModelyardError, TimeoutError) as exc:
            log.warning("registry_deregister_failed", error=str(exc), hint="the TTL removes it")
        finally:
            await self.registry.aclose()

    async def _register(self) -> None:
        instance = self._describe()
        self._lease = await self.registry.register(instance, self.ttl)
        self._published = instance
        log.info(
            "registry_registered",
            service=instance.service,
            instance=instance.instance_id,
            group=instance.group,
            models=_model_states(instance),
            ttl=self._lease.ttl,
        )

    def _lease_ttl(self) -> float:
        return self._lease.ttl if self._lease is not None else self.ttl


def _model_states(instance: Instance) -> list[str]:
    return [f"{m}/{v}:{s}" for m, versions in instance.models.items() for v, s in versions.items()]
