"""The gateway's dataplane: the V2 front doors' calls, answered by forwarding through the client.

``ForwardingDataPlane`` implements ``modelyard.dataplane.DataPlane``, so both
front doors run unchanged in front of a whole service: callers without the SDK
(curl, tritonclient, perf_analyzer) get discovery, balancing, ejection and
retries too.

``infer`` forwards, and counts what it forwarded and how each call ended
(``live_stats``: calls, answers, governance refusals and other errors by rule),
so a console can hold the gateway's count beside the instances'. The other
calls are synchronous in the front doors, so they are answered from what the
gateway already knows: readiness and the repository
index from the registry snapshot; model metadata and config from a cache that
is filled for every model version the service serves as soon as a snapshot
shows it; statistics summed over the instances, refreshed every
``refresh_interval`` seconds. Loading and unloading are an instance's business:
those calls answer UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import structlog

from modelyard import __version__, error_rules
from modelyard.client import AsyncClient, ClientError
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.dataplane import INSTANCE_EXTENSIONS, StreamResponse
from modelyard.errors import ModelyardError
from modelyard.generation import Generation
from modelyard.tasks import cancel_and_wait
from modelyard.types import InferRequest, InferResponse

log = structlog.get_logger("modelyard.gateway")

# the repository API and shared memory are an instance's own: the gateway forwards
# inference; a sequence's requests are not kept on one instance by it
EXTENSIONS = [
    name
    for name in INSTANCE_EXTENSIONS
    if not name.startswith(("model_repository", "system_shared_memory", "cuda_shared_memory"))
    and name != "sequence"
]
REFRESH_SECS = 1.0
FETCH_TIMEOUT_SECS = 5.0

Key = tuple[str, str | None]


def _use_an_instance(action: str) -> ClientError:
    return ClientError.of(
        error_rules.GATEWAY_REPOSITORY, f"the gateway forwards inference; it cannot {action} models"
    )


class ServiceIndex:
    """The ``manager`` the front doors read: the service's models, from the registry."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    def index(self, ready_only: bool = False) -> list[dict[str, Any]]:
        states: dict[tuple[str, str], str] = {}
        for instance in self.client.instances():
            for model, versions in instance.models.items():
                for version, state in versions.items():
                    if states.get((model, version)) != "READY":
                        states[(model, version)] = state
        rows = [
            {"name": model, "version": version, "state": state}
            for (model, version), state in states.items()
            if state == "READY" or not ready_only
        ]
        rows.sort(key=lambda row: (row["name"], _version_key(row["version"])))
        return rows

    def is_ready(self) -> bool:
        return any(i.state == "SERVING" for i in self.client.instances())

    async def load(
        self, name: str, override: Any = None, authorize: Any = None, files: Any = None
    ) -> None:
        raise _use_an_instance("load")

    async def unload(self, name: str, unload_dependents: bool = False) -> None:
        raise _use_an_instance("unload")

    def register_repository(self, root: Path, mapping: dict[str, str]) -> None:
        raise _use_an_instance("register repositories of")

    def unregister_repository(self, root: Path) -> None:
        raise _use_an_instance("unregister repositories of")


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (-1, version)


class ForwardingDataPlane:
    forwards_requests = True

    def __init__(
        self,
        client: AsyncClient,
        *,
        clock: Clock = SYSTEM_CLOCK,
        refresh_interval: float = REFRESH_SECS,
    ) -> None:
        self.client = client
        self.clock = clock
        self.generation = Generation()  # it keeps no lanes: nothing to count
        self.manager = ServiceIndex(client)
        self.refresh_interval = refresh_interval
        self._metadata: dict[Key, dict[str, Any]] = {}
        self._config: dict[Key, dict[str, Any]] = {}
        self._served: dict[str, list[str]] = {}  # model -> versions READY, as last cached
        self._stats: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.draining = False  # handing its port over: not ready for new callers
        self.standby = False  # started, not serving the service's port yet
        self.started_at = time.time()
        self.calls = 0  # infer calls forwarded (streams included)
        self.answered = 0
        self.in_flight = 0
        self.refused: dict[str, int] = {}  # governance rejections handed on, by rule
        self.errors: dict[str, int] = {}  # every other error, by rule

    async def start(self) -> None:
        """Follow the registry, fill the caches once, and keep them fresh in the background."""
        await self.client.start()
        self.client.add_listener(self._changed.set)
        await self.refresh()
        self._task = asyncio.create_task(self._refresh_forever())

    async def aclose(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
        await self.client.aclose()

    # ---- caches ---------------------------------------------------------

    async def _refresh_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), self.refresh_interval)
            self._changed.clear()
            try:
                await self.refresh()
            except Exception:  # a failed refresh must not end the refreshing
                log.exception("gateway_refresh_failed")

    async def refresh(self) -> None:
        """Fetch what is missing from the metadata and config caches, and the statistics."""
        served = {
            model: self.client.ready_versions(model)
            for model in {m for i in self.client.instances() for m in i.models}
        }
        served = {model: versions for model, versions in served.items() if versions}
        wanted: list[Key] = []
        for model, versions in served.items():
            if self._served.get(model) != versions:
                self._metadata.pop((model, None), None)  # the latest version may have changed
                self._config.pop((model, None), None)
            wanted.append((model, None))
            wanted.extend((model, version) for version in versions)
        missing = [key for key in wanted if key not in self._metadata or key not in self._config]
        await asyncio.gather(*(self._fetch(key) for key in missing), self._fetch_stats())
        keep = set(wanted)
        for cache in (self._metadata, self._config):
            for key in [k for k in cache if k not in keep]:
                del cache[key]
        self._served = served

    async def _fetch(self, key: Key) -> None:
        model, version = key
        try:
            metadata, config = await asyncio.gather(
                self.client.model_metadata(model, version, FETCH_TIMEOUT_SECS),
                self.client.model_config(model, version, FETCH_TIMEOUT_SECS),
            )
        except ModelyardError as error:
            log.warning(
                "gateway_metadata_fetch_failed", model=model, version=version, **error.fields()
            )
            return
        self._metadata[key] = metadata
        self._config[key] = config

    async def _fetch_stats(self) -> None:
        try:
            doc = await self.client.statistics(timeout=FETCH_TIMEOUT_SECS)
        except ModelyardError as error:
            log.warning("gateway_statistics_fetch_failed", **error.fields())
            return
        self._stats = doc["model_stats"]

    def _cached(
        self, cache: dict[Key, dict[str, Any]], name: str, version: str | None
    ) -> dict[str, Any]:
        doc = cache.get((name, version or None))
        if doc is not None:
            return doc
        if not self.client.candidates(name, version or None):
            raise self.client.no_instance_error(name, version or None)
        self._changed.set()
        raise ClientError.of(
            error_rules.METADATA_CACHE,
            f"the gateway has not fetched the metadata of model '{name}' yet",
            retry_after=self.refresh_interval,
        )

    # ---- the DataPlane contract ------------------------------------------

    def server_live(self) -> bool:
        return True

    def server_ready(self) -> bool:
        return not (self.draining or self.standby) and self.manager.is_ready()

    def server_metadata(self) -> dict[str, Any]:
        return {"name": "modelyard", "version": __version__, "extensions": EXTENSIONS}

    def model_ready(self, name: str, version: str | None) -> bool:
        return bool(self.client.candidates(name, version or None))

    def model_metadata(self, name: str, version: str | None) -> dict[str, Any]:
        doc = dict(self._cached(self._metadata, name, version))
        doc["versions"] = self.client.ready_versions(name) or doc.get("versions", [])
        return doc

    def model_config(self, name: str, version: str | None) -> dict[str, Any]:
        return self._cached(self._config, name, version)

    def statistics(self, name: str | None, version: str | None) -> dict[str, Any]:
        rows = self._stats
        if name is not None:
            rows = [
                r for r in rows if r["name"] == name and (not version or r["version"] == version)
            ]
            if not rows and not self.client.candidates(name, version or None):
                raise self.client.no_instance_error(name, version or None)
        return {"model_stats": rows}

    def live_stats(self, governance: dict[str, Any] | None) -> dict[str, Any]:
        """This gateway process's own counters (the models' statistics are the instances':
        ``GET /v2/modelyard/stats`` on each of them)."""
        client = self.client
        return {
            "gateway": {
                "service": client.service,
                "pid": os.getpid(),
                "started_at": self.started_at,
                "draining": self.draining,
                "standby": self.standby,
                "calls": self.calls,
                "answered": self.answered,
                "in_flight": self.in_flight,
                "refused": dict(self.refused),
                "errors": dict(self.errors),
                "instances": len(client.instances()),
                "ejected": len(client.balancer.ejected()),
                "cached_instances_age_s": client.cached_age,
            }
        }

    def _ended(self, error: ModelyardError | None) -> None:
        self.in_flight -= 1
        if error is None:
            self.answered += 1
            return
        counts = self.refused if error.layer == "governance" else self.errors
        rule = error.rule or error.code.value
        counts[rule] = counts.get(rule, 0) + 1

    async def infer(self, request: InferRequest) -> InferResponse:
        self.calls += 1
        self.in_flight += 1
        try:
            response = await self.client.infer_request(request)
        except ModelyardError as error:
            self._ended(error)
            raise
        except BaseException:
            self.in_flight -= 1
            raise
        self._ended(None)
        return response

    async def infer_stream(self, request: InferRequest) -> AsyncIterator[StreamResponse]:
        """A streamed call, forwarded on an instance's gRPC stream: each response (a
        decoupled model's many) relayed as it comes, the last one final."""
        self.calls += 1
        self.in_flight += 1
        ended: ModelyardError | None = None
        try:
            async for response, error, final in self.client.stream_request(request):
                ended = error if error is not None else ended
                yield StreamResponse(response, error, final)
        except ModelyardError as error:
            ended = error
            raise
        finally:
            self._ended(ended)

    def lane(self, request: InferRequest) -> None:
        """None: each request is forwarded whole; an instance validates it."""
        return None
