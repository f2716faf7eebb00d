"""Governance at run time: the chain in force, reloads, fallbacks and rules.

``Governance`` builds the guard chain from a service file and swaps in a new
chain when the file changes; an invalid file is refused with its file:line and
the rules in force stay in force. Front doors call ``guard`` for every call and
``infer`` for inference, which answers a ``Degraded`` rejection with the
configured fallback (a static answer, or another model or version) marked as
degraded in the response parameters.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import structlog

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.errors import ConfigError, GovernanceError, ModelyardError
from modelyard.governance.auth import AuthGuard
from modelyard.governance.breaker import BreakerGuard, BreakerRule
from modelyard.governance.chain import GuardChain
from modelyard.governance.cluster import ClusterQpsGuard
from modelyard.governance.concurrency import AdaptiveConcurrencyGuard, ConcurrencyRule
from modelyard.governance.guard import Call, Degraded, Fallback, Guard
from modelyard.governance.ratelimit import InstanceQpsGuard, qps_limits
from modelyard.governance.service_config import ServiceConfig, read_service_config
from modelyard.server.dataplane import DataPlane
from modelyard.types import InferRequest, InferResponse, OutputTensor, numpy_dtype

log = structlog.get_logger("modelyard.governance")

T = TypeVar("T")

_BREAKER_FIELDS = {
    "interface", "model", "kind", "threshold", "slow_call_ms", "window_s", "min_requests",
    "recovery_s", "fallback",
}  # fmt: skip


def _fallback(config: ServiceConfig, rule_id: str, raw: Any) -> Fallback | None:
    if raw is None:
        return None
    doc = config.document
    path = ("breakers", rule_id, "fallback")
    if not isinstance(raw, dict) or not ({"model", "static"} & set(raw)):
        if doc:
            raise doc.error(path, "fallback needs 'model' (and optional 'version') or 'static'")
        raise ConfigError(f"breakers.{rule_id}.fallback is invalid")
    if "static" in raw:
        outputs = raw["static"].get("outputs") if isinstance(raw["static"], dict) else None
        if not isinstance(outputs, dict) or not outputs:
            if doc:
                raise doc.error(
                    (*path, "static"),
                    "static fallback needs outputs: {NAME: {datatype, shape, data}}",
                )
            raise ConfigError(f"breakers.{rule_id}.fallback.static is invalid")
        return Fallback(static_outputs=outputs)
    version = raw.get("version")
    return Fallback(model=str(raw["model"]), version=None if version is None else str(version))


def _relocate(config: ServiceConfig, error: ConfigError, section: str, rule_id: str) -> ConfigError:
    """Give a rule's validation error the file:line of the field it names."""
    doc = config.document
    if doc is None:
        return error
    field = (error.where or "").rsplit(".", 1)[-1]
    path: tuple[str, ...] = (section, rule_id, field) if field else (section, rule_id)
    return doc.error(path, error.detail)


def build_guards(
    config: ServiceConfig, clock: Clock, live_instances: Callable[[], int]
) -> list[Guard]:
    guards: list[Guard] = []
    file = config.filename
    if config.auth.enabled:
        guards.append(AuthGuard(config.auth))
    instance = qps_limits(config.limits, "instance_qps")
    if instance:
        guards.append(InstanceQpsGuard(instance, clock, file))
    cluster = qps_limits(config.limits, "cluster_qps")
    if cluster:
        redis_url = config.cluster.get("redis_url")
        if not redis_url:
            doc = config.document
            message = "cluster_qps needs cluster.redis_url (the Redis that counts for the service)"
            raise doc.error(("limits",), message) if doc else ConfigError(message)
        guards.append(
            ClusterQpsGuard(
                config.service,
                cluster,
                str(redis_url),
                clock,
                live_instances,
                file,
                chunk=int(config.cluster.get("lease_chunk", 20)),
            )
        )
    rules: list[BreakerRule] = []
    for rule_id, raw in config.breakers.items():
        unknown = set(raw) - _BREAKER_FIELDS
        if unknown and config.document:
            field = sorted(unknown)[0]
            raise config.document.error(("breakers", rule_id, field), f"unknown field '{field}'")
        fields = {k: v for k, v in raw.items() if k != "fallback"}
        try:
            rules.append(
                BreakerRule(
                    id=rule_id, fallback=_fallback(config, rule_id, raw.get("fallback")), **fields
                )
            )
        except ConfigError as error:
            raise _relocate(config, error, "breakers", rule_id) from None
        except TypeError as error:
            raise _relocate(config, ConfigError(str(error)), "breakers", rule_id) from None
    if rules:
        guards.append(BreakerGuard(rules, clock, file))
    limits: list[ConcurrencyRule] = []
    for rule_id, raw in config.concurrency.items():
        try:
            limits.append(ConcurrencyRule(id=rule_id, **raw))
        except ConfigError as error:
            raise _relocate(config, error, "concurrency", rule_id) from None
        except TypeError as error:
            raise _relocate(config, ConfigError(str(error)), "concurrency", rule_id) from None
    if limits:
        guards.append(AdaptiveConcurrencyGuard(limits, clock, file))
    return guards


def _static_response(fallback: Fallback, request: InferRequest) -> InferResponse:
    outputs = []
    for name, spec in (fallback.static_outputs or {}).items():
        datatype = str(spec.get("datatype", "FP32"))
        data = spec.get("data", [])
        if datatype == "BYTES":
            array = np.array([str(v).encode() for v in np.ravel(data)], dtype=object)
        else:
            array = np.asarray(data, dtype=numpy_dtype(datatype))
        shape = spec.get("shape")
        if shape is not None:
            array = array.reshape(shape)
        outputs.append(OutputTensor(name, datatype, array, request.binary_output_default))
    return InferResponse(request.model_name, "", outputs, id=request.id)


class Governance:
    def __init__(
        self,
        config: ServiceConfig,
        path: Path | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        live_instances: Callable[[], int] = lambda: 1,
    ) -> None:
        self.path = path
        self.clock = clock
        self.live_instances = live_instances
        self.config = config
        self.chain = GuardChain(build_guards(config, clock, live_instances), clock)
        self._mtime = self._stat()
        self.reloads = 0
        self.rejected_reloads = 0

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> Governance:
        return cls(read_service_config(path), path, **kwargs)

    @property
    def service(self) -> str:
        return self.config.service

    def _stat(self) -> int | None:
        try:
            return self.path.stat().st_mtime_ns if self.path else None
        except OSError:
            return None

    # ---- calls ------------------------------------------------------------

    async def guard(self, call: Call, handler: Callable[[], Awaitable[T]]) -> T:
        return await self.chain.run(call, handler)

    async def infer(
        self, call: Call, decode: Callable[[], InferRequest], dataplane: DataPlane
    ) -> InferResponse:
        async def handler() -> InferResponse:
            return await dataplane.infer(decode())

        try:
            return await self.chain.run(call, handler)
        except Degraded as degraded:
            request = decode()
            fallback = degraded.fallback
            if fallback.static_outputs is not None:
                response = _static_response(fallback, request)
            else:
                rerouted = copy.copy(request)
                rerouted.model_name = fallback.model or request.model_name
                rerouted.model_version = fallback.version
                response = await dataplane.infer(rerouted)
            response.parameters = {
                **response.parameters,
                "degraded": True,
                "degraded_rule": degraded.rule or "",
            }
            return response

    def rate_limit_headers(self, call: Call, error: ModelyardError) -> dict[str, str]:
        """IETF RateLimit-* fields for a rate-limit rejection."""
        if not isinstance(error, GovernanceError) or not (error.rule or "").startswith(
            "ratelimit/"
        ):
            return {}
        key = "cluster_qps" if error.rule == "ratelimit/cluster-qps" else "instance_qps"
        limit = (self.config.limits.get(call.interface) or {}).get(key)
        reset = max(1, round(error.retry_after or 1))
        headers = {"RateLimit-Remaining": "0", "RateLimit-Reset": str(reset)}
        if limit is not None:
            headers["RateLimit-Limit"] = f"{limit:g}"
            headers["RateLimit-Policy"] = f'{limit:g};w=1;name="{key}"'
        return headers

    # ---- reloads ------------------------------------------------------------

    async def reload_if_changed(self) -> bool:
        mtime = self._stat()
        if self.path is None or mtime is None or mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            config = read_service_config(self.path)
            chain = GuardChain(build_guards(config, self.clock, self.live_instances), self.clock)
        except ModelyardError as error:
            self.rejected_reloads += 1
            log.error("service_config_rejected", keeps="the rules in force", **error.fields())
            return False
        old = self.chain
        self.config, self.chain = config, chain
        self.reloads += 1
        log.info("service_config_reloaded", service=config.service, file=str(self.path))
        await _close_guards(old)
        return True

    async def watch(self, interval: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reload_if_changed()
            except Exception:  # a reload failure must never stop watching
                log.exception("service_config_watch_failed")

    async def aclose(self) -> None:
        await _close_guards(self.chain)

    def rules(self) -> dict[str, Any]:
        return {
            "service": self.config.service,
            "source": str(self.path) if self.path else None,
            "rules": self.config.rules(),
            "decisions": self.chain.describe(),
        }


async def _close_guards(chain: GuardChain) -> None:
    for guard in chain.guards:
        closer = getattr(guard, "aclose", None)
        if closer is not None:
            await closer()
