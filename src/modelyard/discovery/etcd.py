"""The etcd registry: instances as keys under leases, over etcd's JSON gateway.

Each instance is ``/modelyard/services/<service>/instances/<instance_id>``
holding the Instance JSON, attached to a lease that ``heartbeat`` keeps alive.
When etcd has lost the lease (it expired during a partition, or the cluster
came back without its data) ``heartbeat`` and ``update`` grant a new one and
put the entry again, so an instance survives an etcd restart on its own.

``watch`` watches the service's key range from the next revision; on a
compacted start revision, a cancelled watch or a broken stream it lists the
service again and watches on from the revision of that list, so no change is
lost. It talks HTTP/1.1 JSON to ``/v3/...`` (web_client): the gRPC clients either
do not resume watches or need another protobuf than tritonclient allows.

``EtcdRulesStore`` keeps central governance rules under
``/modelyard/rules/<service>/``: ``current`` and ``history/<revision>`` each
hold a whole revision; a put is one txn that compares ``current``'s
mod_revision with the one it read and writes both keys, so a restart or a
concurrent writer can never leave half a change.
"""

from __future__ import annotations

import asyncio
import base64
import math
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import orjson
import structlog

from modelyard import error_rules
from modelyard.discovery import RegistryError, deregistered_error
from modelyard.discovery.registry import Instance, Lease, Registry, Snapshot
from modelyard.discovery.rules_store import RulesConflict, RulesRevision, RulesStore
from modelyard.errors import Code
from modelyard.web_client import WebError, WebSession

log = structlog.get_logger("modelyard.discovery")

_NOT_FOUND = 5  # gRPC status etcd answers for a lease it does not have
_RETRY_MIN = 0.1
_RETRY_MAX = 1.0


class EtcdRefused(RegistryError):
    """etcd answered, with an error status."""

    def __init__(self, detail: str, grpc_code: int) -> None:
        super().__init__(
            detail,
            code=Code.NOT_FOUND if grpc_code == _NOT_FOUND else Code.UNAVAILABLE,
            rule="discovery/etcd",
            where="etcd's own log says why",
        )
        self.grpc_code = grpc_code


@dataclass
class _Held:
    instance: Instance
    etcd_lease: int


class _EtcdKeys:
    """Keys under ``prefix`` in the etcd cluster at ``endpoints``, reached through its gateway."""

    def __init__(
        self, endpoints: list[str], *, prefix: str = "/modelyard", timeout: float = 5.0
    ) -> None:
        if not endpoints:
            raise ValueError("etcd needs at least one endpoint")
        self.endpoints = endpoints
        self.prefix = prefix.rstrip("/")
        self._gateway = _Gateway(endpoints, timeout)

    async def aclose(self) -> None:
        await self._gateway.aclose()


class EtcdRegistry(_EtcdKeys, Registry):
    def __init__(
        self, endpoints: list[str], *, prefix: str = "/modelyard", timeout: float = 5.0
    ) -> None:
        super().__init__(endpoints, prefix=prefix, timeout=timeout)
        self._held: dict[str, _Held] = {}

    # ---- Registry -------------------------------------------------------

    async def register(self, instance: Instance, ttl: float) -> Lease:
        etcd_lease, granted = await self._grant(ttl)
        await self._put(instance, etcd_lease)
        lease = Lease(instance.service, instance.instance_id, str(etcd_lease), granted)
        self._held[lease.lease_id] = _Held(instance, etcd_lease)
        return lease

    async def heartbeat(self, lease: Lease) -> None:
        held = self._held.get(lease.lease_id)
        if held is None:
            return  # deregistered: nothing to keep alive
        answer = await self._gateway.call("/v3/lease/keepalive", {"ID": str(held.etcd_lease)})
        if int(answer.get("result", {}).get("TTL", 0)) <= 0:
            await self._regrant(lease, held)

    async def update(self, lease: Lease, instance: Instance) -> None:
        held = self._held.get(lease.lease_id)
        if held is None:
            raise deregistered_error(lease)
        held.instance = instance
        try:
            await self._put(instance, held.etcd_lease)
        except EtcdRefused as exc:
            if exc.grpc_code != _NOT_FOUND:
                raise
            await self._regrant(lease, held)

    async def deregister(self, lease: Lease) -> None:
        held = self._held.pop(lease.lease_id, None)
        await self._gateway.call("/v3/kv/deleterange", {"key": _b64(self._key(lease))})
        if held is not None:
            try:
                await self._gateway.call("/v3/lease/revoke", {"ID": str(held.etcd_lease)})
            except EtcdRefused as exc:
                if exc.grpc_code != _NOT_FOUND:
                    raise

    async def resolve(self, service: str) -> Snapshot:
        start = self._service_prefix(service)
        answer = await self._gateway.call(
            "/v3/kv/range", {"key": _b64(start), "range_end": _b64(_prefix_end(start))}
        )
        instances = [
            Instance.from_json(orjson.loads(base64.b64decode(kv["value"])))
            for kv in answer.get("kvs", [])
        ]
        return Snapshot(instances, int(answer["header"]["revision"]))

    async def watch(self, service: str, since_revision: int) -> AsyncIterator[Snapshot]:
        start = since_revision + 1
        seen: list[dict[str, Any]] | None = None  # the instances last yielded
        retry = _RETRY_MIN
        while True:
            try:
                key = self._service_prefix(service)
                watched = self._gateway.changes(key, _prefix_end(key), start, service)
                async with aclosing(watched) as changes:
                    async for _ in changes:
                        snapshot = await self.resolve(service)
                        start = snapshot.revision + 1
                        seen = [i.to_json() for i in snapshot.instances]
                        retry = _RETRY_MIN
                        yield snapshot
            except (WebError, RegistryError, ValueError) as exc:
                log.info("registry_watch_broken", service=service, error=str(exc))
            # compacted, cancelled or broken: list again, then watch on from that list
            await asyncio.sleep(retry)
            retry = min(retry * 2, _RETRY_MAX)
            try:
                snapshot = await self.resolve(service)
            except RegistryError:
                continue
            start = snapshot.revision + 1
            current = [i.to_json() for i in snapshot.instances]
            if current != seen:
                seen = current
                yield snapshot

    # ---- internals ------------------------------------------------------

    def _service_prefix(self, service: str) -> str:
        return f"{self.prefix}/services/{service}/instances/"

    def _key(self, lease: Lease | Instance) -> str:
        return self._service_prefix(lease.service) + lease.instance_id

    async def _grant(self, ttl: float) -> tuple[int, float]:
        answer = await self._gateway.call("/v3/lease/grant", {"TTL": str(max(1, math.ceil(ttl)))})
        return int(answer["ID"]), float(answer["TTL"])

    async def _put(self, instance: Instance, etcd_lease: int) -> None:
        await self._gateway.call(
            "/v3/kv/put",
            {
                "key": _b64(self._key(instance)),
                "value": base64.b64encode(orjson.dumps(instance.to_json())).decode(),
                "lease": str(etcd_lease),
            },
        )

    async def _regrant(self, lease: Lease, held: _Held) -> None:
        held.etcd_lease, _ = await self._grant(lease.ttl)
        await self._put(held.instance, held.etcd_lease)
        log.info(
            "registry_lease_regranted",
            service=lease.service,
            instance_id=lease.instance_id,
            etcd_lease=held.etcd_lease,
        )


class EtcdRulesStore(_EtcdKeys, RulesStore):
    async def get(self, service: str, revision: int | None = None) -> RulesRevision | None:
        if revision is None:
            found, _, _ = await self._read(self._current_key(service))
        else:
            found, _, _ = await self._read(self._history_key(service, revision))
        return found

    async def put(self, revision: RulesRevision) -> None:
        service, expected = revision.service, revision.revision - 1
        current_key = self._current_key(service)
        found, mod_revision, _ = await self._read(current_key)
        if (found.revision if found else 0) != expected:
            raise RulesConflict(service, expected, found.revision if found else 0)
        value = base64.b64encode(orjson.dumps(revision.to_json())).decode()
        history_key = self._history_key(service, revision.revision)
        answer = await self._gateway.call(
            "/v3/kv/txn",
            {
                # a missing key has mod_revision 0, so this also guards the first put
                "compare": [
                    {
                        "key": _b64(current_key),
                        "result": "EQUAL",
                        "target": "MOD",
                        "mod_revision": str(mod_revision),
                    }
                ],
                "success": [
                    {"request_put": {"key": _b64(current_key), "value": value}},
                    {"request_put": {"key": _b64(history_key), "value": value}},
                ],
            },
        )
        if not answer.get("succeeded"):
            now, _, _ = await self._read(current_key)
            raise RulesConflict(service, expected, now.revision if now else 0)

    async def history(self, service: str, limit: int | None = None) -> list[RulesRevision]:
        start = f"{self.prefix}/rules/{service}/history/"
        request: dict[str, Any] = {
            "key": _b64(start),
            "range_end": _b64(_prefix_end(start)),
            "sort_order": "DESCEND",
            "sort_target": "KEY",
        }
        if limit is not None:
            request["limit"] = str(limit)
        answer = await self._gateway.call("/v3/kv/range", request)
        return [_revision(kv) for kv in answer.get("kvs", [])]

    async def watch(self, service: str, since_revision: int) -> AsyncIterator[RulesRevision]:
        key = self._current_key(service)
        retry = _RETRY_MIN
        while True:
            try:
                found, _, listed_at = await self._read(key)
                retry = _RETRY_MIN
                if found is not None and found.revision > since_revision:
                    since_revision = found.revision
                    yield found
                watched = self._gateway.changes(key, None, listed_at + 1, f"rules of {service}")
                async with aclosing(watched) as changes:
                    async for _ in changes:
                        found, _, _ = await self._read(key)
                        if found is not None and found.revision > since_revision:
                            since_revision = found.revision
                            yield found
            except (WebError, RegistryError, ValueError) as exc:
                log.info("rules_watch_broken", service=service, error=str(exc))
            # compacted, cancelled or broken: read the current revision again, then watch on
            await asyncio.sleep(retry)
            retry = min(retry * 2, _RETRY_MAX)

    def _current_key(self, service: str) -> str:
        return f"{self.prefix}/rules/{service}/current"

    def _history_key(self, service: str, revision: int) -> str:
        return f"{self.prefix}/rules/{service}/history/{revision:012d}"

    async def _read(self, key: str) -> tuple[RulesRevision | None, int, int]:
        """The revision at ``key``, the key's mod_revision (0: no such key), etcd's revision."""
        answer = await self._gateway.call("/v3/kv/range", {"key": _b64(key)})
        listed_at = int(answer["header"]["revision"])
        kvs = answer.get("kvs") or []
        if not kvs:
            return None, 0, listed_at
        return _revision(kvs[0]), int(kvs[0]["mod_revision"]), listed_at


def _revision(kv: dict[str, Any]) -> RulesRevision:
    return RulesRevision.from_json(orjson.loads(base64.b64decode(kv["value"])))


class _Gateway:
    """etcd's JSON gateway at ``endpoints``: calls fail over to the next endpoint."""

    def __init__(self, endpoints: list[str], timeout: float) -> None:
        self.endpoints = endpoints
        self._current = 0
        # a watch answer's line holds a revision's events: up to 1 MiB of them
        self._client = WebSession(timeout, max_line_bytes=1 << 20)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST to the current endpoint; on a transport error try the next ones once."""
        last: Exception | None = None
        for _ in range(len(self.endpoints)):
            endpoint = self.endpoints[self._current]
            try:
                response = await self._client.post(endpoint + path, content=orjson.dumps(body))
            except WebError as exc:
                last = exc
                self._current = (self._current + 1) % len(self.endpoints)
                continue
            try:
                answer: dict[str, Any] = response.json()
            except ValueError:
                answer = {"error": response.text[:200] or response.reason, "code": 2}
            if response.status != 200 or "error" in answer:
                raise EtcdRefused(
                    f"etcd {endpoint}{path} answered {response.status}: "
                    f"{answer.get('error') or answer.get('message')}",
                    int(answer.get("code", 2)),
                )
            return answer
        raise RegistryError.of(
            error_rules.ETCD_UNREACHABLE,
            f"etcd is unreachable at {', '.join(self.endpoints)}: {last}",
            retry_after=1.0,
        ) from last

    async def changes(
        self, key: str, range_end: str | None, start: int, subject: str
    ) -> AsyncGenerator[int, None]:
        """The revision of each batch of changes to the keys; ends when etcd cancels the watch."""
        create: dict[str, str] = {"key": _b64(key), "start_revision": str(start)}
        if range_end is not None:
            create["range_end"] = _b64(range_end)
        request = {"create_request": create}
        endpoint = self.endpoints[self._current]
        try:
            async with self._client.lines(
                "POST", endpoint + "/v3/watch", content=orjson.dumps(request)
            ) as (status, lines):
                if status != 200:
                    return
                async for line in lines:
                    if not line.strip():
                        continue
                    result = orjson.loads(line).get("result")
                    if result is None or result.get("canceled"):
                        if result is not None and int(result.get("compact_revision", 0)):
                            log.info("registry_watch_compacted", watching=subject, start=start)
                        return
                    if result.get("events"):
                        yield int(result["header"]["revision"])
        except WebError:
            self._current = (self._current + 1) % len(self.endpoints)
            raise


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _prefix_end(prefix: str) -> str:
    # the range end of a prefix is the prefix with its last byte plus one; ours ends in "/"
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)
