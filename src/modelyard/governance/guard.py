"""The guard contract: one call in, admit or raise.

A guard's ``check`` admits a call by returning None, or refuses it by raising
``GovernanceError`` (or ``Degraded`` to ask for a fallback answer). A guard that
cannot decide without I/O (cluster-qps when its lease is spent) returns an
awaitable instead, which admits or refuses the same way: every other decision
is made without creating a coroutine, on the path of every request. Guards that
learn from outcomes (breakers, adaptive concurrency) also get ``record`` once
the handler has answered; the others set ``learns_from_outcomes = False`` and
the chain neither times the handler nor calls them back. Guards run in order:
auth, rate limit, breaker.

Guards that learn nothing may also offer ``quick``: given one call, what is
left to decide for every call like it (same interface, model, version and
credentials). The chain keeps that as a ``Ticket`` (see chain.py), so a
repeated call is decided by a few counter updates instead of the whole chain.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from modelyard.errors import Code, ConfigError, GovernanceError


@dataclass(slots=True)
class Call:
    """What governance knows of one call, protocol-neutral."""

    service: str
    # what its rules name: a protocol interface ("infer" | "metadata" | "admin" | "health"),
    # or the service's own that the model belongs to (ServiceConfig.interface_of)
    interface: str
    model: str | None = None
    version: str | None = None
    request_id: str | None = None
    api_key: str | None = None
    bearer_token: str | None = None
    principal: str | None = None  # set by auth once it admits the call
    notes: dict[str, Any] = field(default_factory=dict)  # guards' own per-call state
    protocol: str | None = None  # the protocol interface, where ``interface`` is declared

    @property
    def protocol_interface(self) -> str:
        """The protocol interface of the call: what auth's allow-lists name."""
        return self.protocol or self.interface

    def take_header(self, name: str, value: str) -> None:
        """Note what one HTTP header or gRPC metadata entry (lower-case ``name``) says of
        the caller: its API key, its bearer token, its request id."""
        if name == "x-api-key":
            self.api_key = value
        elif name == "authorization":
            self.bearer_token = bearer_token(value)
        elif name == "x-request-id":
            self.request_id = value


# the headers (metadata keys) that ``Call.take_header`` reads
CALL_HEADERS = frozenset(("x-api-key", "authorization", "x-request-id"))


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value; None for another scheme."""
    return authorization[7:].strip() if authorization[:7].lower() == "bearer " else None


@dataclass(frozen=True, slots=True)
class Fallback:
    """A degraded answer: a static response, or another model/version."""

    static_outputs: dict[str, Any] | None = None  # output name -> {"datatype","shape","data"}
    model: str | None = None
    version: str | None = None


class Degraded(GovernanceError):
    """The breaker is open and a fallback is configured: answer with it."""

    def __init__(self, error: GovernanceError, fallback: Fallback) -> None:
        super().__init__(
            error.detail,
            code=error.code,
            rule=error.rule,
            where=error.where,
            retry_after=error.retry_after,
        )
        self.fallback = fallback


Quick = Callable[[int], bool]
"""``take(n)``: admit ``n`` calls at once (True), or change nothing (False).

With n = 1, False leaves the call to the guard's ``check``. With n > 1 the guard
takes them only far from its limit, where taking n calls' tokens early refuses
nobody; near the limit every call is decided on its own."""


class Guard(Protocol):
    def check(self, call: Call) -> Awaitable[None] | None:
        """Admit the call (return None) or refuse it (raise GovernanceError); else wait."""
        ...

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        """Learn from the outcome of an admitted call."""
        ...


@runtime_checkable
class QuickGuard(Guard, Protocol):
    def quick(self, call: Call) -> Quick | None:
        """What is left to decide per call for calls like ``call``: None when this guard
        admits each of them with no work, else a ``Quick``. Raise GovernanceError, counting
        nothing, when such calls are refused: they go through ``check`` every time."""
        ...


def rejected(
    detail: str,
    *,
    rule: str,
    where: str,
    code: Code = Code.RESOURCE_EXHAUSTED,
    retry_after: float | None = None,
) -> GovernanceError:
    return GovernanceError(
        f"request rejected: {detail}", code=code, rule=rule, where=where, retry_after=retry_after
    )


def require_unique_ids(ids: list[str], section: str, service_file: str) -> None:
    """Rule ids name rules in error lines and commands, so each must name one rule."""
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        family = section.rstrip("s")  # breakers -> breaker; concurrency stays
        raise ConfigError(
            f"{family} rule ids must be unique: {', '.join(duplicates)} repeated",
            code=Code.INVALID_ARGUMENT,
            rule=f"{family}/{duplicates[0]}",
            where=f"{section} in {service_file}",
        )
