"""Governance at run time: the chain in force, reloads, fallbacks and rules.

``Governance`` builds the guard chain from a service file and swaps in a new
chain when the file changes; an invalid file is refused with its file:line and
the rules in force stay in force. With a service and a registry it also
follows the service's central rules (``follow``): each new revision is built
whole, with the local file's auth, and swapped in; one that fails to build is
logged and the rules in force stay; ``--rules-source`` says which rules win.

Front doors call ``guard`` for every call and ``infer`` for inference, which
answers a ``Degraded`` rejection with the configured fallback (a static
answer, or another model or version) marked as degraded in the response
parameters. Every rejection is kept in a bounded ``RejectionLog`` for
``modelyard explain``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import structlog

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.dataplane import Infers, StreamResponse, Streams
from modelyard.discovery.rules_store import RulesRevision, RulesStore
from modelyard.errors import (
    Code,
    ConfigError,
    GovernanceError,
    ModelyardError,
    retry_after_header,
)
from modelyard.generation import Generation
from modelyard.governance.auth import PERMISSION_RULE, AuthGuard, Principal, permission_denied
from modelyard.governance.breaker import BREAKER_RULES, BreakerGuard
from modelyard.governance.chain import GuardChain, rejection_event
from modelyard.governance.cluster import ClusterQpsGuard
from modelyard.governance.concurrency import AdaptiveConcurrencyGuard
from modelyard.governance.explain import rule_setting
from modelyard.governance.guard import Call, Degraded, Fallback, Guard
from modelyard.governance.ratelimit import InstanceQpsGuard, limit_key, qps_limits
from modelyard.governance.rejections import RejectionLog, rejection_not_found
from modelyard.governance.rule_checks import breaker_rules, concurrency_rules, redis_url
from modelyard.governance.rules_source import RulesSource
from modelyard.governance.service_config import (
    ServiceConfig,
    central_filename,
    empty_service_config,
    parse_rules_document,
    read_service_config,
)
from modelyard.tasks import cancel_and_wait
from modelyard.types import InferRequest, InferResponse, OutputTensor, numpy_dtype

log = structlog.get_logger("modelyard.governance")

T = TypeVar("T")

_RETIRE_AFTER = 2.0  # seconds a replaced chain's guards stay open for calls it admitted


def build_guards(
    config: ServiceConfig,
    clock: Clock,
    live_instances: Callable[[], int],
    limiting_locally: Callable[[], int] = lambda: 0,
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
        guards.append(
            ClusterQpsGuard(
                config.service,
                cluster,
                redis_url(config),
                clock,
                live_instances,
                file,
                limiting_locally=limiting_locally,
                chunk=int(config.cluster.get("lease_chunk", 20)),
            )
        )
    rules = breaker_rules(config)
    if rules:
        guards.append(BreakerGuard(rules, clock, file))
    limits = concurrency_rules(config)
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


class _StreamRelay:
    """A data plane to governance, which relays a stream's responses as they come and
    gives the call's outcome: the last response, or the error that ended the stream."""

    def __init__(self, dataplane: Streams, put: Callable[[StreamResponse], None]) -> None:
        self.dataplane = dataplane
        self.put = put
        self.relayed = False
        self.final_sent = False

    async def infer(self, request: InferRequest) -> InferResponse:
        last = InferResponse(request.model_name, request.model_version or "", [])
        async for item in self.dataplane.infer_stream(request):
            self.relayed = True
            self.final_sent = item.final
            self.put(item)
            if item.response is not None:
                last = item.response
            if item.final and isinstance(item.error, ModelyardError):
                raise item.error  # sent already; the guards that learn count it
        return last


class Governance:
    """The chain in force for one instance, rebuilt when its rules change.

    ``local`` is the instance's own service file (or no rules at all); auth
    always comes from it. ``central`` is the service's central revision in
    force. Which one's rules apply is ``rules_source``.
    """

    def __init__(
        self,
        config: ServiceConfig,
        path: Path | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        live_instances: Callable[[], int] = lambda: 1,
        limiting_locally: Callable[[], int] = lambda: 0,
        rules_source: RulesSource = RulesSource.LOCAL,
        registry_url: str | None = None,
        rejections_kept: int = 1000,
        generation: Generation | None = None,
    ) -> None:
        self.path = path
        self.clock = clock
        # bumped when the chain is replaced (a rule change) or forgets its tickets
        self.generation = generation or Generation()
        self.live_instances = live_instances
        self.limiting_locally = limiting_locally
        self.rules_source = RulesSource(rules_source)
        self.registry_url = registry_url
        self.rejections = RejectionLog(rejections_kept)
        self.local = config
        self.central: RulesRevision | None = None
        self.rejected_revision: int | None = None
        self.config = self._compose(config, None)
        self.chain = self._chain(self.config)
        self.applied_at = clock.wall()
        self._mtime = self._stat()
        self._retired: list[GuardChain] = []
        self._earlier = _Counts()  # what chains no longer in force counted
        self.counted_since = clock.wall()
        self._closers: set[asyncio.Task[None]] = set()
        self.reloads = 0
        self.rejected_reloads = 0

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> Governance:
        return cls(read_service_config(path), path, **kwargs)

    @property
    def service(self) -> str:
        return self.config.service

    @property
    def in_force(self) -> str:
        """'central', 'local' (the service file) or 'none'."""
        if self.rules_source is RulesSource.CENTRAL or (
            self.rules_source is RulesSource.AUTO and self.central is not None
        ):
            return "central"
        return "local" if self.path is not None else "none"

    def _stat(self) -> int | None:
        try:
            return self.path.stat().st_mtime_ns if self.path else None
        except OSError:
            return None

    def _compose(self, local: ServiceConfig, central: RulesRevision | None) -> ServiceConfig:
        """The config in force: the local file, or the central rules with the local auth."""
        if self.rules_source is RulesSource.LOCAL or (
            self.rules_source is RulesSource.AUTO and central is None
        ):
            return local
        auth_set_at = local.document.where(("auth",)) if local.document else local.auth_set_at
        if central is None:
            return replace(
                empty_service_config(local.service),
                interfaces=local.interfaces,
                declared=local.declared,
                auth=local.auth,
                auth_set_at=auth_set_at,
            )
        filename = central_filename(local.service, central.revision)
        # the document's own interfaces where it declares any, else the service file's
        rules = parse_rules_document(central.document, filename, local.service, local.declared)
        return replace(rules, interfaces=local.interfaces, auth=local.auth, auth_set_at=auth_set_at)

    def _chain(self, config: ServiceConfig) -> GuardChain:
        guards = build_guards(config, self.clock, self.live_instances, self.limiting_locally)
        return GuardChain(
            guards,
            self.clock,
            on_rejected=self._record_rejection,
            interface_of=config.interface_of,
            generation=self.generation,
        )

    def cluster_limits_local(self) -> bool:
        """Whether this instance enforces its share of the cluster limits itself (its Redis
        is unreachable): its registry entry says so, and the others lease less from Redis."""
        return any(
            isinstance(guard, ClusterQpsGuard) and guard.in_fallback for guard in self.chain.guards
        )

    # ---- calls ------------------------------------------------------------

    def call(self, protocol: str, model: str | None, version: str | None) -> Call:
        """A call as the rules in force see it: on the interface its model belongs to."""
        interface = self.chain.interface_of(protocol, model)
        call = Call(self.service, interface, model, version)
        if interface != protocol:
            call.protocol = protocol
        return call

    async def guard(self, call: Call, handler: Callable[[], Awaitable[T]]) -> T:
        return await self.chain.run(call, handler)

    async def infer(
        self, call: Call, decode: Callable[[], InferRequest], dataplane: Infers
    ) -> InferResponse:
        chain = self.chain
        if self.config.auth.enabled:  # the principal is known once admitted, when it decodes
            decode = functools.partial(_for_caller, decode, call)
        try:
            if chain.learns:
                return await chain.run(call, lambda: dataplane.infer(decode()))
            pending = chain.admit(call)  # the common case: decided without awaiting
            if pending is not None:
                await pending
            return await dataplane.infer(decode())
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

    async def stream(
        self,
        call: Call,
        decode: Callable[[], InferRequest],
        dataplane: Streams,
        put: Callable[[StreamResponse], None],
    ) -> None:
        """A streamed call (a decoupled model's): admitted once, the whole stream its outcome
        for the guards that learn; each response goes to ``put`` as it comes. A fallback's
        response, when a guard degrades the call, goes as the stream's one response."""
        relay = _StreamRelay(dataplane, put)
        try:
            response = await self.infer(call, decode, relay)
        except ModelyardError:
            if relay.final_sent:  # the stream's own last answer: sent
                return
            raise
        if not relay.relayed:
            put(StreamResponse(response, None, True))

    def authorize_model_call(self, caller: str) -> Callable[[tuple[str, ...], str], None]:
        """What lets a model's own call (Triton's BLS) through where auth is on (read at
        each call: a reload may turn it on or change it): each principal the calling
        requests are for must be allowed to infer on the model called."""

        def authorize(principals: tuple[str, ...], model: str) -> None:
            auth = self.config.auth  # as it is now: a reload may have changed it
            if not auth.enabled:
                return
            if not principals:
                raise GovernanceError(
                    f"a model's call to model '{model}' is for no known caller, and auth is on",
                    code=Code.PERMISSION_DENIED,
                    rule=PERMISSION_RULE,
                    where=f"call '{model}' from execute() of a request admitted with a key",
                )
            for name in principals:
                principal = auth.principal(name) or Principal(name, {})
                if not principal.may("infer", model):
                    through = f", which a model of {caller} calls from its own code (BLS)"
                    raise permission_denied(principal, "infer", model, auth.service_file, through)

        return authorize

    def authorize_model_control(
        self, caller: str
    ) -> Callable[[tuple[str, ...], str, str], Callable[..., None] | None]:
        """What lets a model's own repository call (Triton's ``pb_utils.load_model``,
        ``unload_model``, ``is_model_ready``) through where auth is on (read at each
        call): each principal the calling requests are for must be allowed ``interface``
        (``admin``, ``health``) on the model, as a caller of the API would be; a call for
        no known caller (from ``initialize``, or a model's own thread) is refused. Returns
        the check of the models a load reaches (``authorize_load``'s, for each principal);
        None where auth is off."""

        def authorize(
            principals: tuple[str, ...], interface: str, model: str
        ) -> Callable[..., None] | None:
            auth = self.config.auth
            if not auth.enabled:
                return None
            if not principals:
                raise GovernanceError(
                    f"a model's call to the repository API ({interface}) for model '{model}' "
                    "is for no known caller, and auth is on",
                    code=Code.PERMISSION_DENIED,
                    rule=PERMISSION_RULE,
                    where=f"call it from execute() of requests whose keys may call {interface} "
                    f"on '{model}', or load '{model}' through the repository API",
                )
            chosen = [auth.principal(name) or Principal(name, {}) for name in principals]
            through = f", which a model of {caller} asks for from its own code (pb_utils)"
            for principal in chosen:
                if not principal.may(interface, model):
                    raise permission_denied(principal, interface, model, auth.service_file,
                                            through)  # fmt: skip

            def reached(models: list[str], interface: str = "infer") -> None:
                for principal in chosen:
                    for name in models:
                        if not principal.may(interface, name):
                            raise permission_denied(
                                principal, interface, name, auth.service_file,
                                f", which the config of '{model}' a model loads reaches",
                            )  # fmt: skip

            return reached

        return authorize

    def visible(self, call: Call) -> Callable[[str], bool] | None:
        """Which models an admitted call may see in a listing (statistics, the index): those
        its principal may name on the call's interface. None: all of them, auth is off."""
        auth = self.config.auth
        if not auth.enabled:
            return None
        principal = auth.principal(call.principal)
        if principal is None:
            return lambda model: False
        return lambda model: principal.may(call.protocol_interface, model)

    def authorize_load(self, call: Call) -> Callable[..., None] | None:
        """For an admitted load of ``call.model``: refuses (PERMISSION_DENIED) unless the
        principal may infer on every model the loaded config reaches, since whoever infers
        on the loaded model reads their outputs (and may administer, with ``"admin"``, the
        models the load loads with it). None: auth is off."""
        auth = self.config.auth
        if not auth.enabled:
            return None

        def authorize(models: list[str], interface: str = "infer") -> None:
            principal = auth.principal(call.principal) or Principal(call.principal or "?", {})
            for model in models:
                if not principal.may(interface, model):
                    through = (
                        f", which the config of '{call.model}' reaches as an ensemble step"
                        if interface == "infer"
                        else f", which loading the ensemble '{call.model}' loads"
                    )
                    raise permission_denied(principal, interface, model, auth.service_file, through)

        return authorize

    def rate_limit_headers(self, call: Call, error: ModelyardError) -> dict[str, str]:
        """IETF RateLimit-* fields for a rate-limit rejection."""
        key = limit_key(error.rule) if isinstance(error, GovernanceError) else None
        if key is None:
            return {}
        limit = (self.config.limits.get(call.interface) or {}).get(key)
        reset = retry_after_header(1.0 if error.retry_after is None else error.retry_after)
        headers = {"RateLimit-Remaining": "0", "RateLimit-Reset": reset}
        if limit is not None:
            headers["RateLimit-Limit"] = f"{limit:g}"
            headers["RateLimit-Policy"] = f'{limit:g};w=1;name="{key}"'
        return headers

    # ---- rejections ---------------------------------------------------------

    def record_refusal(self, call: Call, error: ModelyardError) -> None:
        """A refusal of the model server's that ``modelyard explain`` should find too (a
        request refused for the time its model's load takes, or for the memory budget),
        kept with the rejections; not counted as the guards' own."""
        event = rejection_event(
            call,
            error,
            (error.rule or "").partition("/")[2],
            "the model server refused the request",
            fallback=False,
        )
        event["time"] = self.clock.wall()
        self.rejections.add(event)

    def _record_rejection(self, event: dict[str, Any]) -> None:
        setting = rule_setting(
            _sections(self.config), event.get("rule"), event.get("interface"), event.get("model")
        )
        central = self.central if self.in_force == "central" else None
        event["rules_in_force"] = self.in_force
        event["rules_revision"] = central.revision if central else None
        if setting is not None:
            event["setting"] = {"key": setting.key, "value": setting.value}
        self.rejections.add(event)

    def rejection(self, request_id: str) -> dict[str, Any]:
        """The recorded rejection of ``request_id``; NOT_FOUND once it left the ring."""
        event = self.rejections.get(request_id)
        if event is None:
            raise rejection_not_found(request_id, self.rejections.capacity)
        return event

    # ---- reloads ------------------------------------------------------------

    async def reload_if_changed(self) -> bool:
        mtime = self._stat()
        if self.path is None or mtime is None or mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            local = read_service_config(self.path)
            if local.service != self.local.service:
                raise ConfigError.of(
                    error_rules.SERVICE_NAME_CHANGED,
                    f"{self.path.name} now names {local.service}, "
                    f"but this instance serves {self.local.service}",
                    where=f"restore 'service: {self.local.service}' in {self.path}",
                )
            config = self._compose(local, self.central)
            chain = self._chain(config)
        except ModelyardError as error:
            self.rejected_reloads += 1
            log.error("service_config_rejected", keeps="the rules in force", **error.fields())
            return False
        self.local = local
        self._swap(config, chain)
        log.info("service_config_reloaded", service=config.service, file=str(self.path))
        return True

    async def apply_central(self, revision: RulesRevision | None) -> bool:
        """Enforce a newer central revision; one that fails to build leaves the rules in force."""
        if revision is None or revision.service != self.service:
            return False
        if self.central is not None and revision.revision <= self.central.revision:
            return False
        if self.rules_source is RulesSource.LOCAL:
            self.central = revision
            return False
        try:
            config = self._compose(self.local, revision)
            chain = self._chain(config)
        except ModelyardError as error:
            self.rejected_revision = revision.revision
            log.error(
                "central_rules_rejected",
                revision=revision.revision,
                keeps="the rules in force",
                **error.fields(),
            )
            return False
        self.central = revision
        self._swap(config, chain)
        log.info(
            "central_rules_applied",
            service=self.service,
            revision=revision.revision,
            author=revision.author,
            action=revision.action,
        )
        return True

    def _swap(self, config: ServiceConfig, chain: GuardChain) -> None:
        old = self.chain
        self.config, self.chain = config, chain
        self.generation.bump()  # what front doors kept of the old chain's tickets is stale
        self.applied_at = self.clock.wall()
        self.reloads += 1
        # calls the old chain admitted may still be talking to its Redis: close it a bit later
        self._retired.append(old)
        task = asyncio.get_running_loop().create_task(self._close_later(old))
        self._closers.add(task)
        task.add_done_callback(self._closers.discard)

    async def _close_later(self, chain: GuardChain) -> None:
        await asyncio.sleep(_RETIRE_AFTER)
        if chain in self._retired:
            self._retired.remove(chain)
            self._earlier.add(chain.by_interface())
            await _close_guards(chain)

    async def follow(self, store: RulesStore, retry: float = 1.0) -> None:
        """Apply each new central revision of the service as the store reports it."""
        while True:
            since = self.central.revision if self.central else 0
            try:
                async for revision in store.watch(self.service, since):
                    await self.apply_central(revision)
            except Exception:  # a broken watch must never stop following
                log.exception("central_rules_watch_failed", service=self.service)
            await asyncio.sleep(retry)

    async def watch(self, interval: float = 1.0, store: RulesStore | None = None) -> None:
        """Reload the service file on change and, given a store, follow the central rules."""
        follower = None
        if store is not None and self.rules_source is not RulesSource.LOCAL:
            follower = asyncio.create_task(self.follow(store))
        try:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.reload_if_changed()
                except Exception:  # a reload failure must never stop watching
                    log.exception("service_config_watch_failed")
        finally:
            if follower is not None:
                await cancel_and_wait(follower)

    async def aclose(self) -> None:
        for task in list(self._closers):
            task.cancel()
        retired, self._retired = self._retired, []
        for chain in [*retired, self.chain]:
            await _close_guards(chain)

    def rules(self) -> dict[str, Any]:
        central = self.central
        in_central = self.in_force == "central"
        source = str(self.path) if self.path else None
        if in_central:
            source = central_filename(self.service, central.revision) if central else None
        return {
            "service": self.config.service,
            "source": source,
            "rules_source": {
                "mode": str(self.rules_source),
                "in_force": self.in_force,
                "local_file": str(self.path) if self.path else None,
                "registry": self.registry_url,
                "central": None
                if central is None
                else {
                    "revision": central.revision,
                    "digest": central.digest,
                    "author": central.author,
                    "time": central.time,
                    "action": central.action,
                },
                "rejected_revision": self.rejected_revision,
            },
            "revision": central.revision if in_central and central else None,
            "applied_at": self.applied_at,
            "rules": self.config.rules(),
            "decisions": self.chain.describe(),
        }

    def live_stats(self) -> dict[str, Any]:
        """The governance block of ``GET /v2/modelyard/stats``.

        Decisions are counted since the instance started (``counted_since``), over
        every chain that was in force: a rule change does not reset them. Breakers
        exist per (rule, model) once a call's outcome
        counted for them; ``rule`` is the name rejections carry
        (``breaker/<id>``), ``since`` the wall time of its last state change
        (None while it has never left CLOSED).
        """
        chain = self.chain
        now, wall = self.clock.monotonic(), self.clock.wall()
        breakers: list[dict[str, Any]] = []
        for guard in chain.guards:
            if not isinstance(guard, BreakerGuard):
                continue
            for breaker in guard.breakers():
                changed = breaker.changed_at
                breakers.append(
                    {
                        "rule": f"{BREAKER_RULES}{breaker.rule.id}",
                        "interface": breaker.interface,
                        "model": breaker.model,
                        "state": breaker.state.value,
                        "since": None if changed is None else wall - (now - changed),
                    }
                )
        breakers.sort(key=lambda b: (b["rule"], b["interface"], b["model"] or ""))
        counts = _Counts()
        counts.add(self._earlier.as_dict())
        for counted in (*self._retired, chain):
            counts.add(counted.by_interface())
        return {
            "service": self.service,
            **counts.as_dict(),
            "rejections_total": counts.total_rejected(),
            "counted_since": self.counted_since,
            "breakers": breakers,
        }


class _Counts:
    """Decisions by interface (admitted) and by interface and rule (rejected, fallbacks),
    summed over chains."""

    def __init__(self) -> None:
        self.admitted: dict[str, int] = {}
        self.rejected: dict[str, dict[str, int]] = {}
        self.fallbacks: dict[str, dict[str, int]] = {}

    def add(self, counts: dict[str, Any]) -> None:
        for interface, count in counts["admitted"].items():
            self.admitted[interface] = self.admitted.get(interface, 0) + count
        for kind in ("rejected", "fallbacks"):
            mine = getattr(self, kind)
            for interface, rules in counts[kind].items():
                by_rule = mine.setdefault(interface, {})
                for rule, count in rules.items():
                    by_rule[rule] = by_rule.get(rule, 0) + count

    def total_rejected(self) -> int:
        return sum(sum(rules.values()) for rules in self.rejected.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "admitted": dict(self.admitted),
            "rejected": {i: dict(r) for i, r in self.rejected.items()},
            "fallbacks": {i: dict(r) for i, r in self.fallbacks.items()},
        }


async def open_governance(
    service_file: Path | None,
    service: str | None,
    *,
    rules_source: RulesSource,
    store: RulesStore | None,
    registry_url: str | None,
    live_instances: Callable[[], int] = lambda: 1,
    limiting_locally: Callable[[], int] = lambda: 0,
    generation: Generation | None = None,
) -> Governance | None:
    """The governance of a serving instance, with the central revision current at start.

    None when nothing could ever be enforced: no service file, and no service
    whose central rules could apply. A store that cannot be read at start is
    logged; the follower picks the rules up once it answers. ``live_instances`` counts the
    service's instances in the registry, this one included (cluster-qps divides by it);
    ``limiting_locally`` the others that enforce their share without Redis.
    """
    uses_central = (
        service is not None and store is not None and rules_source is not RulesSource.LOCAL
    )
    if rules_source is RulesSource.CENTRAL and not uses_central:
        raise ConfigError.of(
            error_rules.RULES_SOURCE, "--rules-source central needs --service (and --registry)"
        )
    if service_file is None and not uses_central:
        return None
    if service_file is not None:
        local = read_service_config(service_file)
    else:
        local = empty_service_config(service or "")
    if service is not None and local.service != service:
        raise ConfigError.of(
            error_rules.SERVICE_NAME,
            f"the service file {service_file} names {local.service}, but --service is {service}",
        )
    governance = Governance(
        local,
        service_file,
        rules_source=rules_source,
        registry_url=registry_url,
        live_instances=live_instances,
        limiting_locally=limiting_locally,
        generation=generation,
    )
    if uses_central:
        assert store is not None
        try:
            await governance.apply_central(await store.get(local.service))
        except ModelyardError as error:
            log.warning(
                "central_rules_unreadable",
                hint="following them once the registry answers",
                **error.fields(),
            )
    return governance


def rejections(governance: Governance | None, path: str) -> dict[str, Any]:
    """``GET /v2/modelyard/rejections[/<request_id>]``: one recorded rejection, or the newest."""
    request_id = path.removeprefix("/v2/modelyard/rejections").strip("/")
    if governance is None:
        if request_id:
            raise rejection_not_found(request_id, 0)
        return {"capacity": 0, "total": 0, "recent": []}
    if request_id:
        return governance.rejection(request_id)
    log_ = governance.rejections
    return {"capacity": log_.capacity, "total": log_.total, "recent": log_.recent(100)}


def _sections(config: ServiceConfig) -> dict[str, Any]:
    return {
        "interfaces": {name: list(patterns) for name, patterns in config.declared.items()},
        "limits": config.limits,
        "breakers": config.breakers,
        "concurrency": config.concurrency,
    }


async def _close_guards(chain: GuardChain) -> None:
    for guard in chain.guards:
        closer = getattr(guard, "aclose", None)
        if closer is not None:
            await closer()


def _for_caller(decode: Callable[[], InferRequest], call: Call) -> InferRequest:
    """The decoded request, marked as its admitted caller's (what authorises its model's
    own calls to other models)."""
    request = decode()
    if call.principal is not None:
        request.principals = (call.principal,)
    return request
