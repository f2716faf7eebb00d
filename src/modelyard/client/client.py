"""The client SDK: name a service and a model, get the outputs from whichever instance can answer.

The client resolves the service once, then follows ``Registry.watch``; each
snapshot becomes the table the hot path reads (instance key -> endpoint, and
per model and version the endpoints that serve it READY, computed on first use).
No request touches the registry. When the registry cannot be reached the client
keeps routing on the last table it had and tries the registry again with
backoff.

A request picks an endpoint with the ``Balancer`` (among the instances of the
caller's own ``data_center`` first, when it names one), sends it over the endpoint's
pooled transport and, on failure, asks the ``RetryPolicy`` and the
``RetryBudget`` whether to try again, on an instance it has not tried yet, or
after the ``retry_after`` a rate limit asked for. An attempt unanswered within
``attempt_timeout`` (a host whose link is cut answers nothing, not even a
refusal) counts as that instance unavailable. The error of the last attempt is
what the caller gets.

``AsyncClient`` runs in the caller's event loop. ``Client`` is the same client
for synchronous code: it owns an event loop in a background thread.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import structlog

from modelyard import error_rules
from modelyard.client.attempts import (
    DEFAULT_ATTEMPT_SECS,
    AttemptPolicy,
    AttemptRule,
    Timeout,
)
from modelyard.client.balancer import Balancer, Host, OutlierPolicy
from modelyard.client.instances_cache import DEFAULT_CACHE, InstancesCache, default_cache_path
from modelyard.client.retry import Action, RetryBudget, RetryPolicy, counts_as_failure
from modelyard.client.transport import (
    DEFAULT_HTTP_POOL_SIZE,
    DEFAULT_MAX_MESSAGE_BYTES,
    ClientError,
    GrpcTransport,
    Transport,
    attempt_timeout_error,
    open_transport,
)
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.discovery.registry import Instance, Registry, Snapshot
from modelyard.errors import ModelyardError
from modelyard.tasks import cancel_and_wait
from modelyard.types import InferRequest, InferResponse, RequestedOutput

log = structlog.get_logger("modelyard.client")

T = TypeVar("T")

DEFAULT_TIMEOUT_SECS = 30.0
REGISTRY_RETRY_MIN_SECS = 0.1
REGISTRY_RETRY_MAX_SECS = 5.0
TRANSPORTS = ("http", "grpc")
# a transport's model_metadata or model_config: (model, version, seconds) -> the document
_MetadataCall = Callable[[str, str | None, float], Awaitable[dict[str, Any]]]


class Endpoint(Host):
    """An instance the client can send to: its registry entry, its balancer state, its pool."""

    __slots__ = ("address", "answered", "instance", "retired", "stream_transport", "transport")

    def __init__(self, key: str, instance: Instance, address: str) -> None:
        super().__init__(key, instance.weight)
        self.instance = instance
        self.address = address
        self.transport: Transport | None = None
        self.stream_transport: GrpcTransport | None = None  # streams, where HTTP is the transport
        self.retired = False
        self.answered = False  # has answered an attempt: its caches are warm


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (-1, version)


def _from_service_file(
    path: Path,
    attempts: Mapping[str, AttemptRule] | None,
    interfaces: Mapping[str, Sequence[str]] | None,
) -> tuple[dict[str, AttemptRule], dict[str, Sequence[str]]]:
    """A service file's attempts and declared interfaces, under what the caller gave."""
    from modelyard.client.attempts import rules_from_sections
    from modelyard.governance.service_config import read_service_config

    config = read_service_config(path)
    declared: dict[str, Sequence[str]] = dict(config.declared)
    return (
        {**rules_from_sections(config.attempts), **(attempts or {})},
        {**declared, **(interfaces or {})},
    )


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}min"
    return f"{seconds / 3600:.1f}h"


class AsyncClient:
    def __init__(
        self,
        service: str,
        registry: Registry | str,
        *,
        transport: str = "http",
        timeout: float = DEFAULT_TIMEOUT_SECS,
        attempt_timeout: Timeout | str = "auto",
        hedge: bool = False,
        attempts: Mapping[str, AttemptRule] | None = None,
        interfaces: Mapping[str, Sequence[str]] | None = None,
        service_config: Path | str | None = None,
        data_center: str | None = None,
        max_attempts: int = 3,
        wait_on_rate_limit: bool = True,
        outlier: OutlierPolicy | None = None,
        retry_budget: RetryBudget | None = None,
        http_pool_size: int = DEFAULT_HTTP_POOL_SIZE,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        instances_cache: Path | str | None = DEFAULT_CACHE,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        """``attempt_timeout``: how long one attempt may take before another instance is
        tried ("auto": from the model's observed latency, see ``client.attempts``; seconds;
        "off" or None: an attempt may take the whole timeout); ``hedge``: a second attempt
        after the model's observed p95; ``attempts``: per interface (``infer``, ``metadata``,
        or one of ``interfaces``, declared interface → model patterns), over those two;
        ``service_config``: a service file whose ``attempts`` and declared interfaces are
        read (``attempts`` and ``interfaces`` given here win).
        ``wait_on_rate_limit``: a rate limit's rejection is tried again after the wait it
        asks for, while the deadline allows (off: it is the caller's at once, as a gateway
        hands it on). ``instances_cache``: the file that keeps the last instances read from
        the registry, served from when the registry cannot be read at start (default: one
        per service and registry URL in the user's cache; None: none)."""
        if transport not in TRANSPORTS:
            raise ClientError.of(error_rules.CLIENT_TRANSPORT, f"unknown transport '{transport}'")
        self.service = service
        self.transport = transport
        if isinstance(attempt_timeout, str) and attempt_timeout.lower() in ("off", "none"):
            attempt_timeout = None
        try:
            default_rule = AttemptRule(attempt_timeout, hedge)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ClientError.of(
                error_rules.ATTEMPT_TIMEOUT_VALUE,
                str(exc).replace("an attempt timeout", "attempt_timeout"),
            ) from None
        self.timeout = timeout
        if service_config is not None:
            attempts, interfaces = _from_service_file(Path(service_config), attempts, interfaces)
        self.attempts = AttemptPolicy(default_rule, attempts, interfaces)
        self.data_center = data_center
        self.clock = clock
        self.balancer = Balancer(outlier, clock=clock, rng=rng)
        self.policy = RetryPolicy(max_attempts, wait_on_rate_limit)
        self.budget = retry_budget or RetryBudget(clock=clock)
        self._registry_url = registry if isinstance(registry, str) else None
        self._registry: Registry | None = None if isinstance(registry, str) else registry
        if instances_cache is DEFAULT_CACHE:
            instances_cache = (
                default_cache_path(service, self._registry_url) if self._registry_url else None
            )
        self.cache = InstancesCache(Path(instances_cache), service) if instances_cache else None
        self._http_pool_size = http_pool_size
        self._max_message_bytes = max_message_bytes
        self._endpoints: dict[str, Endpoint] = {}
        self._retired: set[Endpoint] = set()  # gone from the registry, requests still in flight
        self._routes: dict[tuple[str, str | None], list[Endpoint]] = {}
        # routes to instances that load the model when asked for: no instance holds it
        self._cold: set[tuple[str, str | None]] = set()
        self._instances: list[Instance] = []
        self._revision: int | None = None
        self._registry_error: BaseException | None = None
        self.cached_age: float | None = None  # serving from the cache: its age at start
        self._started = False
        self._start_task: asyncio.Task[None] | None = None
        self._follower: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._listeners: list[Callable[[], None]] = []

    @property
    def attempt_timeout(self) -> Timeout:
        """The deadline of an attempt where no interface's rule says otherwise."""
        return self.attempts.default.timeout

    # ---- lifecycle ------------------------------------------------------

    async def start(self) -> None:
        """Resolve the service and follow its changes; the first call does, later calls wait."""
        if self._start_task is None:
            self._start_task = asyncio.ensure_future(self._start())
        await asyncio.shield(self._start_task)

    async def _start(self) -> None:
        if self._registry is None:
            from modelyard.discovery import open_registry

            assert self._registry_url is not None
            self._registry = open_registry(self._registry_url, clock=self.clock)
        try:
            self._apply(await self._registry.resolve(self.service))
        except Exception as exc:
            self._registry_error = exc
            log.warning("registry_unreachable", service=self.service, error=str(exc))
            self._serve_cached()
        self._follower = asyncio.create_task(self._follow())
        self._started = True

    async def _follow(self) -> None:
        assert self._registry is not None
        registry = self._registry
        delay = REGISTRY_RETRY_MIN_SECS
        relist = self._revision is None
        while True:
            try:
                if relist:
                    self._apply(await registry.resolve(self.service))
                    relist = False
                assert self._revision is not None
                snapshots = registry.watch(self.service, self._revision)
                try:
                    async for snapshot in snapshots:
                        self._apply(snapshot)
                        delay = REGISTRY_RETRY_MIN_SECS
                finally:
                    aclose: Callable[[], Awaitable[None]] | None = getattr(
                        snapshots, "aclose", None
                    )
                    if aclose is not None:
                        await aclose()
                raise ClientError.of(error_rules.REGISTRY_WATCH, "the registry's watch ended")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._registry_error = exc
                log.warning(
                    "registry_unreachable",
                    service=self.service,
                    error=str(exc),
                    routing_on=len(self._endpoints),
                    retry_in=delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, REGISTRY_RETRY_MAX_SECS)
                relist = True  # a watch from an old revision may be refused

    def _serve_cached(self) -> None:
        """The registry could not be read at start: route on the instances last read from
        it, kept on disk, until it can be (the follower lists it again meanwhile)."""
        if self.cache is None:
            return
        cached = self.cache.load()
        if cached is None:
            return
        instances, saved_at = cached
        self.cached_age = max(0.0, time.time() - saved_at)
        log.warning(
            "serving_cached_instances",
            service=self.service,
            instances=len(instances),
            age_s=round(self.cached_age, 1),
            cache=str(self.cache.path),
            hint=f"the registry could not be read; these instances were read from it "
            f"{_age(self.cached_age)} ago",
        )
        self._apply(Snapshot(instances, -1), cached=True)

    async def aclose(self) -> None:
        if self._follower is not None:
            await cancel_and_wait(self._follower)
        for endpoint in [*self._endpoints.values(), *self._retired]:
            self._close(endpoint)
        self._endpoints = {}
        self._retired = set()
        self._routes = {}
        self._cold = set()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        if self._registry is not None and self._registry_url is not None:
            await self._registry.aclose()  # opened here from a URL: ours to close

    async def __aenter__(self) -> AsyncClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ---- the routing table ------------------------------------------------

    def _apply(self, snapshot: Snapshot, cached: bool = False) -> None:
        old = self._endpoints
        endpoints: dict[str, Endpoint] = {}
        for instance in snapshot.instances:
            if instance.service != self.service:
                continue
            address = instance.http if self.transport == "http" else instance.grpc
            if not address:
                continue
            key = f"{instance.instance_id}@{address}"
            endpoint = old.get(key)
            if endpoint is None:
                endpoint = Endpoint(key, instance, address)
                self.balancer.add(endpoint)
            else:
                endpoint.instance = instance
                endpoint.weight = instance.weight
            endpoint.local = self.data_center is not None and (
                instance.labels.get("data_center") == self.data_center
            )
            endpoints[key] = endpoint
        for key, endpoint in old.items():
            if key not in endpoints:
                self.balancer.remove(key)
                endpoint.retired = True
                if endpoint.outstanding == 0:
                    self._close(endpoint)
                else:
                    self._retired.add(endpoint)
        if self._revision is not None and endpoints.keys() != old.keys():  # not the first view
            log.info(
                "service_instances",
                service=self.service,
                joined=sorted(endpoints.keys() - old.keys()),
                left=sorted(old.keys() - endpoints.keys()),
                instances=len(endpoints),
            )
        self._endpoints = endpoints
        self._routes = {}
        self._cold = set()
        self._instances = list(snapshot.instances)
        for listener in self._listeners:
            listener()
        if cached:  # the registry is still unread: the follower lists it, not watches
            return
        self._revision = snapshot.revision
        self._registry_error = None
        self.cached_age = None
        if self.cache is not None:
            self.cache.save(self._instances)

    def _route(self, model: str, version: str | None) -> list[Endpoint]:
        serving: list[Endpoint] = []
        draining: list[Endpoint] = []
        loading: list[Endpoint] = []
        for endpoint in self._endpoints.values():
            instance = endpoint.instance
            if instance.serves(model, version):
                (serving if instance.state == "SERVING" else draining).append(endpoint)
            elif instance.state == "SERVING" and instance.loads(model):
                loading.append(endpoint)
        if serving or draining:  # a draining instance still answers until it goes
            return serving or draining
        if loading:  # a cold model: every caller sends it to the same one (``_pick``)
            self._cold.add((model, version))
        return loading

    def candidates(self, model: str, version: str | None = None) -> list[Endpoint]:
        """The endpoints that serve the model (and version) READY, from the current table."""
        key = (model, version)
        found = self._routes.get(key)
        if found is None:
            found = self._route(model, version)
            if found or len(self._routes) < 1024:
                self._routes[key] = found
        return found

    def instances(self) -> list[Instance]:
        """The service's instances in the last snapshot read from the registry."""
        return list(self._instances)

    def ready_versions(self, model: str) -> list[str]:
        """The versions of the model READY on at least one instance, oldest first."""
        versions = {
            version
            for instance in self._instances
            for version, state in instance.models.get(model, {}).items()
            if state == "READY"
        }
        return sorted(versions, key=_version_key)

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (in the client's loop) after each new registry snapshot."""
        self._listeners.append(callback)

    def _transport(self, endpoint: Endpoint) -> Transport:
        transport = endpoint.transport
        if transport is None:
            transport = endpoint.transport = open_transport(
                self.transport,
                endpoint.address,
                http_pool_size=self._http_pool_size,
                max_message_bytes=self._max_message_bytes,
            )
        return transport

    def _close(self, endpoint: Endpoint) -> None:
        transport, endpoint.transport = endpoint.transport, None
        streams, endpoint.stream_transport = endpoint.stream_transport, None
        for each in (transport, streams):
            if each is not None:
                task = asyncio.ensure_future(each.aclose())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    def no_instance_error(self, model: str, version: str | None) -> ClientError:
        """Why no endpoint serves the model: registry unread, no instance, or no such model."""
        what = f"model '{model}'" + (f" version {version}" if version else "")
        if self._revision is None:
            return ClientError.of(
                error_rules.CLIENT_REGISTRY,
                f"no instances of service '{self.service}' known: the registry could not be "
                f"read ({self._registry_error})",
            )
        if not self._endpoints:
            return ClientError.of(
                error_rules.NO_INSTANCE,
                f"service '{self.service}' has no live instance with a {self.transport} "
                "address in the registry",
                where=f"start instances with modelyard serve --service {self.service}",
            )
        return ClientError.of(
            error_rules.NO_INSTANCE_FOR_MODEL,
            f"no instance of service '{self.service}' has {what} READY "
            f"({len(self._endpoints)} instances known)",
        )

    # ---- calls ----------------------------------------------------------

    async def _call(
        self,
        model: str,
        version: str | None,
        send: Callable[[Transport, float], Awaitable[T]],
        timeout: float | None,
        deadline: float | None = None,
        affinity: str | None = None,
        streamed: bool = False,
        interface: str = "infer",
    ) -> T:
        """``affinity``: a key whose calls all go to one instance while it serves (a sequence
        id: a stateful model keeps the sequence's state there); such a call is never hedged,
        and bounded per attempt only by an explicit timeout. ``streamed``: ``send`` opens a
        stream, which no attempt deadline bounds (a stream lasts as its caller wants)."""
        if not self._started:
            await self.start()
        clock = self.clock
        limit = clock.monotonic() + (self.timeout if timeout is None else timeout)
        deadline = limit if deadline is None else min(deadline, limit)
        self.budget.on_request()
        rule = self.attempts.rule(self.attempts.interface(model, interface))
        bounded = not streamed and (affinity is None or rule.timeout != "auto")
        hedged = rule.hedge and not streamed and affinity is None
        tried: list[Endpoint] = []
        error: ModelyardError | None = None
        attempts = 0
        while True:
            endpoint = self._pick(model, version, affinity, tried)
            if endpoint is None:
                raise error if error is not None else self.no_instance_error(model, version)
            remaining = deadline - clock.monotonic()
            # a cold model's attempt waits for its load: not cut short to try another
            cold = (model, version) in self._cold
            attempt_secs = (
                self._attempt_secs(rule, model, version, endpoint, remaining, attempts, tried)
                if bounded and not cold
                else remaining
            )
            hedge_after = self.attempts.hedge_after(rule, model) if hedged else None
            if hedge_after is not None and hedge_after < attempt_secs:
                ok, outcome, used = await self._hedged(
                    endpoint, model, version, send, attempt_secs, hedge_after, deadline, tried
                )
            else:
                used = [endpoint]
                ok, outcome = await self._attempt(endpoint, model, send, attempt_secs, deadline)
            if ok:
                return cast(T, outcome)
            error = cast(ModelyardError, outcome)
            attempts += len(used)
            if await self._retry_elsewhere(error, attempts, deadline, affinity):
                tried.extend(used)

    def _attempt_secs(
        self,
        rule: AttemptRule,
        model: str,
        version: str | None,
        endpoint: Endpoint,
        remaining: float,
        attempts: int,
        tried: list[Endpoint],
    ) -> float:
        """How long an attempt on ``endpoint`` may take: the rule's attempt deadline, or
        all that the call has left (``remaining``)."""
        per_attempt = self.attempts.timeout(rule, model)
        if per_attempt is not None and rule.timeout == "auto" and not endpoint.answered:
            # an instance's first answers come slower (lazy loads, cold caches): until
            # it has answered once, it gets the default rather than the model's history
            per_attempt = max(per_attempt, DEFAULT_ATTEMPT_SECS)
        if per_attempt is None or per_attempt >= remaining:
            return remaining
        if rule.timeout != "auto":
            return per_attempt
        # a derived deadline bounds an attempt only where another instance is left to
        # try after it: the last one may take what the call has left, so a model slower
        # than its history (or than the default) still answers
        others_left = attempts + 1 < self.policy.max_attempts and self._others(
            model, version, [*tried, endpoint]
        )
        return per_attempt if others_left else remaining

    async def _retry_elsewhere(
        self, error: ModelyardError, attempts: int, deadline: float, affinity: str | None
    ) -> bool:
        """After a failed attempt: raise ``error`` when the policy or the retry budget says
        so, else whether the next try goes to another instance (False: the same pick,
        after the wait a rate limit asks for)."""
        decision = self.policy.decide(error, attempts, deadline - self.clock.monotonic())
        if decision.action is Action.FAIL or not self.budget.try_spend():
            raise error
        if decision.action is Action.WAIT_AND_RETRY:
            await asyncio.sleep(decision.delay)
            return False
        if affinity is not None:  # another instance has not the sequence's state
            raise error
        return True

    def _pick(
        self, model: str, version: str | None, affinity: str | None, tried: list[Endpoint]
    ) -> Endpoint | None:
        candidates = self.candidates(model, version)
        if not candidates:
            return None
        if affinity is None and (model, version) in self._cold:
            # no instance holds it: one loads it, the same for every caller (rendezvous on
            # the model's name), the next one only when that one fails
            affinity = f"model:{model}"
        if affinity is not None:
            return self.balancer.pick_for(affinity, candidates, tried)
        if self.data_center is not None:
            return self.balancer.pick_nearby(candidates, tried)
        return self.balancer.pick(candidates, tried)

    def _others(self, model: str, version: str | None, tried: list[Endpoint]) -> bool:
        """Whether an instance that serves the model is left untried."""
        return any(e not in tried for e in self.candidates(model, version))

    async def _attempt(
        self,
        endpoint: Endpoint,
        model: str,
        send: Callable[[Transport, float], Awaitable[T]],
        attempt_secs: float,
        deadline: float,
    ) -> tuple[bool, T | ModelyardError]:
        """One attempt on ``endpoint``: (True, its result) or (False, its error), counted by
        the balancer (and, answered, in the model's latency)."""
        clock = self.clock
        self.balancer.start(endpoint)
        started = clock.monotonic()
        try:
            result = await send(self._transport(endpoint), attempt_secs)
        except ModelyardError as exc:
            error = exc
            if (
                attempt_secs < deadline - started
                and isinstance(exc, ClientError)
                and exc.rule == error_rules.DEADLINE.id
                and deadline > clock.monotonic()  # the request's own time is left
            ):
                error = attempt_timeout_error(endpoint.address, attempt_secs)
            self._finish(endpoint, counts_as_failure(error))
            return False, error
        except BaseException:  # cancelled (a hedge that lost, the caller gone), or a bug
            self._finish(endpoint, None)
            raise
        self._finish(endpoint, False)
        endpoint.answered = True
        self.attempts.answered(model, clock.monotonic() - started)
        return True, result

    async def _hedged(
        self,
        first: Endpoint,
        model: str,
        version: str | None,
        send: Callable[[Transport, float], Awaitable[T]],
        attempt_secs: float,
        hedge_after: float,
        deadline: float,
        tried: list[Endpoint],
    ) -> tuple[bool, T | ModelyardError, list[Endpoint]]:
        """``first``'s attempt, and another instance's once ``hedge_after`` has passed with
        no answer (paid from the retry budget): the first answer wins, the other is
        cancelled; both failing gives the last error."""
        running = {asyncio.ensure_future(self._attempt(first, model, send, attempt_secs, deadline))}
        used = [first]
        try:
            done, _ = await asyncio.wait(running, timeout=hedge_after)
            if not done:
                second = self._pick(model, version, None, [*tried, first])
                if second is not None and self.budget.try_spend():
                    secs = max(0.0, min(attempt_secs, deadline - self.clock.monotonic()))
                    running.add(
                        asyncio.ensure_future(self._attempt(second, model, send, secs, deadline))
                    )
                    used.append(second)
            outcome: tuple[bool, T | ModelyardError] | None = None
            while running:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    outcome = task.result()
                    if outcome[0]:
                        return outcome[0], outcome[1], used
            assert outcome is not None
            return outcome[0], outcome[1], used
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    def _finish(self, endpoint: Endpoint, failed: bool | None) -> None:
        self.balancer.finish(endpoint, failed)
        if endpoint.retired and endpoint.outstanding == 0:
            self._retired.discard(endpoint)
            self._close(endpoint)

    async def infer_request(
        self, request: InferRequest, timeout: float | None = None
    ) -> InferResponse:
        """Send a protocol-level request (what a gateway forwards); honours ``request.deadline``."""

        def send(transport: Transport, remaining: float) -> Awaitable[InferResponse]:
            return transport.infer(request, remaining)

        sequence = request.parameters.get("sequence_id")
        affinity = None if sequence in (None, 0, "") else f"{type(sequence).__name__}:{sequence}"
        return await self._call(
            request.model_name, request.model_version, send, timeout, request.deadline, affinity
        )

    async def stream_request(
        self, request: InferRequest, timeout: float | None = None
    ) -> AsyncIterator[tuple[InferResponse | None, ModelyardError | None, bool]]:
        """A streamed call (a decoupled model's many responses) on one instance, over its
        gRPC stream whatever the client's transport: ``(response, error, final)`` as they
        come. Only a failure before the stream begins tries another instance."""
        sequence = request.parameters.get("sequence_id")
        affinity = None if sequence in (None, 0, "") else f"{type(sequence).__name__}:{sequence}"
        opened: list[Any] = []

        async def first(transport: Transport, remaining: float) -> Any:
            stream_transport = self._stream_transport(transport)
            # a stream lasts as long as its caller wants, unless the request has a deadline
            limit = remaining if request.deadline is not None else None
            stream = stream_transport.stream_infer(request, limit).__aiter__()
            opened.append(stream)
            return await stream.__anext__()

        try:
            head = await self._call(
                request.model_name, request.model_version, first, timeout, request.deadline,
                affinity, streamed=True,
            )  # fmt: skip
            yield head
            if not head[2]:
                async for item in opened[-1]:
                    yield item
        finally:
            for stream in opened:  # the gRPC call ends with its stream, whoever stops first
                await stream.aclose()

    def _stream_transport(self, transport: Transport) -> GrpcTransport:
        """The gRPC transport of the instance ``transport`` reaches (streams are gRPC's)."""
        if isinstance(transport, GrpcTransport):
            return transport
        for endpoint in self._endpoints.values():
            if endpoint.transport is transport:
                if endpoint.stream_transport is None:
                    if not endpoint.instance.grpc:
                        raise ClientError.of(
                            error_rules.STREAM_NEEDS_GRPC,
                            "the instance serves no gRPC, which streams need",
                        )
                    endpoint.stream_transport = GrpcTransport(
                        endpoint.instance.grpc, max_message_bytes=self._max_message_bytes
                    )
                return endpoint.stream_transport
        raise ClientError.of(
            error_rules.STREAM_INSTANCE_LEFT,
            "the instance left the registry before its stream began",
            retry_after=1.0,
        )

    async def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        version: str | int | None = None,
        timeout: float | None = None,
        outputs: Iterable[str] | None = None,
    ) -> dict[str, np.ndarray]:
        """Run ``model`` on ``inputs`` on an instance of the service; the outputs by name."""
        request = InferRequest(
            model_name=model,
            model_version=None if version is None else str(version),
            inputs=dict(inputs),
            input_datatypes={},
            outputs=None if outputs is None else [RequestedOutput(name) for name in outputs],
            binary_output_default=True,
        )
        response = await self.infer_request(request, timeout)
        return {tensor.name: tensor.data for tensor in response.outputs}

    async def model_metadata(
        self, model: str, version: str | int | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """The V2 metadata; ``versions`` lists the versions READY on any instance of the service."""
        doc = await self._metadata(lambda t: t.model_metadata, model, version, timeout)
        doc["versions"] = self.ready_versions(model) or doc.get("versions", [])
        return doc

    async def model_config(
        self, model: str, version: str | int | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        return await self._metadata(lambda t: t.model_config, model, version, timeout)

    async def _metadata(
        self,
        call_of: Callable[[Transport], _MetadataCall],
        model: str,
        version: str | int | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        """A call of the metadata interface: ``call_of(transport)`` on the instance chosen."""
        v = None if version is None else str(version)

        def send(transport: Transport, remaining: float) -> Awaitable[dict[str, Any]]:
            return call_of(transport)(model, v, remaining)

        return await self._call(model, v, send, timeout, interface="metadata")

    async def statistics(
        self, model: str | None = None, version: str | int | None = None, timeout: float = 5.0
    ) -> dict[str, Any]:
        """V2 statistics summed over every instance that answers (``{"model_stats": [...]}``)."""
        if not self._started:
            await self.start()
        v = None if version is None else str(version)
        if model is None:
            endpoints = list(self._endpoints.values())
        else:
            endpoints = self.candidates(model, v)
            if not endpoints:
                raise self.no_instance_error(model, v)
        results = await asyncio.gather(
            *(self._transport(e).statistics(model, v, timeout) for e in endpoints),
            return_exceptions=True,
        )
        docs = [r for r in results if isinstance(r, dict)]
        failures = [r for r in results if isinstance(r, BaseException)]
        if not docs and failures:
            raise failures[0]
        return merge_statistics(docs)


_DURATIONS = (
    "success",
    "fail",
    "queue",
    "compute_input",
    "compute_infer",
    "compute_output",
    "cache_hit",
    "cache_miss",
)
_BATCH_DURATIONS = ("compute_input", "compute_infer", "compute_output")


def _add_duration(into: dict[str, int], value: Any) -> None:
    if isinstance(value, dict):
        into["count"] += int(value.get("count", 0))
        into["ns"] += int(value.get("ns", 0))


def merge_statistics(docs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Sum per-instance V2 statistics into one document, model version by model version."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    batches: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for doc in docs:
        for row in doc.get("model_stats") or ():
            key = (str(row.get("name", "")), str(row.get("version", "")))
            merged = rows.get(key)
            if merged is None:
                merged = rows[key] = {
                    "name": key[0],
                    "version": key[1],
                    "last_inference": 0,
                    "inference_count": 0,
                    "execution_count": 0,
                    "inference_stats": {name: {"count": 0, "ns": 0} for name in _DURATIONS},
                }
                batches[key] = {}
            merged["last_inference"] = max(
                merged["last_inference"], int(row.get("last_inference", 0))
            )
            merged["inference_count"] += int(row.get("inference_count", 0))
            merged["execution_count"] += int(row.get("execution_count", 0))
            stats = row.get("inference_stats") or {}
            for name in _DURATIONS:
                _add_duration(merged["inference_stats"][name], stats.get(name))
            for batch in row.get("batch_stats") or ():
                size = int(batch.get("batch_size", 0))
                slot = batches[key].get(size)
                if slot is None:
                    slot = batches[key][size] = {"batch_size": size} | {
                        name: {"count": 0, "ns": 0} for name in _BATCH_DURATIONS
                    }
                for name in _BATCH_DURATIONS:
                    _add_duration(slot[name], batch.get(name))
    out = []
    for key in sorted(rows, key=lambda k: (k[0], _version_key(k[1]))):
        row = rows[key]
        row["batch_stats"] = [batches[key][size] for size in sorted(batches[key])]
        out.append(row)
    return {"model_stats": out}


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class Client:
    """``AsyncClient`` for synchronous code: the same calls, on an event loop in a thread.

    Safe to call from many threads at once; ``close()`` (or ``with``) ends the thread.
    """

    def __init__(self, service: str, registry: Registry | str, **options: Any) -> None:
        self._loop = _new_loop()
        self._thread = threading.Thread(
            target=self._run, name=f"modelyard-client-{service}", daemon=True
        )
        self._thread.start()
        try:
            self._client = self._wait(self._create(service, registry, options))
            self._wait(self._client.start())
        except BaseException:
            self.close()
            raise

    @staticmethod
    async def _create(
        service: str, registry: Registry | str, options: dict[str, Any]
    ) -> AsyncClient:
        return AsyncClient(service, registry, **options)

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def async_client(self) -> AsyncClient:
        """The client underneath; use it only from coroutines run on ``self.loop``."""
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        version: str | int | None = None,
        timeout: float | None = None,
        outputs: Iterable[str] | None = None,
    ) -> dict[str, np.ndarray]:
        return self._wait(self._client.infer(model, inputs, version, timeout, outputs))

    def infer_request(self, request: InferRequest, timeout: float | None = None) -> InferResponse:
        return self._wait(self._client.infer_request(request, timeout))

    def model_metadata(
        self, model: str, version: str | int | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        return self._wait(self._client.model_metadata(model, version, timeout))

    def model_config(
        self, model: str, version: str | int | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        return self._wait(self._client.model_config(model, version, timeout))

    def statistics(
        self, model: str | None = None, version: str | int | None = None, timeout: float = 5.0
    ) -> dict[str, Any]:
        return self._wait(self._client.statistics(model, version, timeout))

    def instances(self) -> list[Instance]:
        return self._client.instances()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        client = getattr(self, "_client", None)
        try:
            if client is not None:
                self._wait(client.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
