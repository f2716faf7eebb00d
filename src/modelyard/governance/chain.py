"""The guard chain: auth → rate limits → breakers → adaptive concurrency → handler.

``GuardChain.run`` admits a call through every guard in order, runs the
handler, and reports the outcome to every guard that admitted it (also when a
later guard refused, so concurrency slots and breaker probes are given back).
Each rejection is logged once as a structured event carrying the fields of
the classic line ``Request is Degraded ... strategy: cluster-qps, code: 429,
msg: the current limit has been reached``, and handed to ``on_rejected``
(the instance's recent-rejection record) with its wall-clock time.

A chain whose guards all learn nothing also keeps a ``Ticket`` per call shape
(interface, model, version, credentials) it has seen: auth's decision, taken
once, and each rate limit's quick path. A call with a ticket is admitted by
those quick paths alone, without a ``Call``; when one of them cannot decide at
once, the call goes through the guards from that one on, as any other call.
Far from its limit, a ticket decided by one rate limit takes a run of calls'
tokens at once and admits the next calls from that credit (``Ticket``). A
frontend may file a ticket under a key of its own (the HTTP frontend uses
the path and the credential headers as they arrived) and find it again with
``known_ticket``, without decoding anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

import structlog

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.errors import GovernanceError, ModelyardError
from modelyard.generation import Generation
from modelyard.governance.guard import Call, Degraded, Guard, Quick, QuickGuard
from modelyard.governance.ratelimit import RATE_LIMIT_RULES
from modelyard.protocol.status import http_status
from modelyard.refusal_log import REFUSALS

log = structlog.get_logger("modelyard.governance")

T = TypeVar("T")

_MESSAGES = {
    "ratelimit": "the current limit has been reached",
    "concurrency": "the concurrency limit has been reached",
    "breaker": "the circuit breaker is open",
    "auth": "the request is not authorised",
}


_TICKETS_MAX = 1024  # bounded: credentials and model names come from callers
AHEAD = 16  # calls a ticket admits at once, far from its limit


class Ticket:
    """What is left to decide for each call of one shape the chain has admitted before.

    Where one rate limit at most decides such calls, the ticket takes ``AHEAD``
    calls' tokens at once while that limit is far from reached (``Quick``) and
    admits the next calls from that credit: one decrement each. Near the limit
    every call is decided on its own, exactly as ``check`` would.
    """

    __slots__ = ("_ahead", "_quick", "_taken", "credit", "interface", "principal")

    def __init__(
        self, interface: str, principal: str | None, quick: tuple[tuple[int, Quick], ...]
    ) -> None:
        self._quick = quick  # (index of the guard, its quick path)
        self._ahead: Quick | None = quick[0][1] if len(quick) == 1 else None
        self.interface = interface
        self.principal = principal
        self.credit = 0  # calls admitted ahead and not made yet
        self._taken = 0  # calls admitted, made or ahead

    @property
    def admitted(self) -> int:
        return self._taken - self.credit

    def admit(self) -> int | None:
        """None when the call is admitted; else the index of the first guard whose
        ``check`` must decide it (``GuardChain.admit(call, first=...)``)."""
        if self.credit:
            self.credit -= 1
            return None
        ahead = self._ahead
        if not self._quick or (ahead is not None and ahead(AHEAD)):
            self._taken += AHEAD
            self.credit = AHEAD - 1
            return None
        for index, take in self._quick:
            if not take(1):
                return index
        self._taken += 1
        return None


def rejection_event(
    call: Call, error: ModelyardError, strategy: str, msg: str, *, fallback: bool
) -> dict[str, Any]:
    """What the log and ``modelyard explain`` keep of a refused call: the error's fields, what
    refused it and whose call it was (a call without a request id is given one)."""
    if call.request_id is None:
        call.request_id = uuid.uuid4().hex[:16]
    event = error.fields()
    event.update(
        strategy=strategy,
        code=http_status(error.code),
        status=str(error.code),
        msg=msg,
        service=call.service,
        interface=call.interface,
        model=call.model,
        principal=call.principal,
        request_id=call.request_id,
        fallback=fallback,
        line=error.line(),
    )
    return event


def strategy_of(rule: str | None) -> str:
    """'ratelimit/cluster-qps' -> 'cluster-qps'; 'breaker/slow-ranker' -> 'breaker'."""
    if not rule:
        return "unknown"
    if rule.startswith(RATE_LIMIT_RULES):
        return rule.removeprefix(RATE_LIMIT_RULES)
    return rule.partition("/")[0]


class GuardChain:
    def __init__(
        self,
        guards: list[Guard],
        clock: Clock = SYSTEM_CLOCK,
        on_rejected: Callable[[dict[str, Any]], None] | None = None,
        interface_of: Callable[[str, str | None], str] = lambda protocol, model: protocol,
        generation: Generation | None = None,
    ) -> None:
        self.guards = guards
        # bumped when the chain forgets its tickets: what a front door kept of them is stale
        self.generation = generation or Generation()
        # the interface a call of (protocol interface, model) counts on: its rules' own name
        self.interface_of = interface_of
        # the guards whose record() does something: breakers, adaptive concurrency
        self._learners = [g for g in guards if getattr(g, "learns_from_outcomes", True)]
        self.learns = bool(self._learners)  # any guard that learns: calls go through run()
        # tickets need every guard to have a quick path, and none to learn from outcomes
        quick_guards = [g for g in guards if isinstance(g, QuickGuard)]
        every_guard_quick = len(quick_guards) == len(guards) and not self.learns
        self._quick_guards = quick_guards if every_guard_quick else None
        self._tickets: dict[Hashable, Ticket] = {}
        # the ticket filed under a key, or None; dict.get itself, with no Python frame
        self.known_ticket: Callable[[Hashable], Ticket | None] = self._tickets.get
        self.clock = clock
        self.on_rejected = on_rejected
        self.rejected: dict[str, int] = {}  # rule -> count
        self.fallbacks: dict[str, int] = {}
        # the same decisions by interface, for GET /v2/modelyard/stats; calls admitted
        # through a ticket are counted on the ticket (see ``admitted_by_interface``)
        self._admitted_by_interface: dict[str, int] = {}
        self.rejected_by_interface: dict[str, dict[str, int]] = {}  # interface -> rule -> count
        self.fallbacks_by_interface: dict[str, dict[str, int]] = {}

    def admit(self, call: Call, first: int = 0) -> Awaitable[None] | None:
        """Run the guards in order: None when all admitted the call at once, else an
        awaitable that finishes the decision. A refusal raises. ``first``: the guard to
        start from, when the call's ticket admitted it through the ones before."""
        return self._admit_from(call, first)

    def ticket(
        self,
        interface: str,
        model: str | None,
        version: str | None,
        api_key: str | None,
        bearer_token: str | None,
        key: Hashable | None = None,
    ) -> Ticket | None:
        """The ticket of calls of this shape; None when they must go through ``admit``.

        ``key``: where to file it for ``known_ticket``; by default, the shape itself.
        """
        if key is None:
            key = (interface, model, version, api_key, bearer_token)
        ticket = self._tickets.get(key)
        if ticket is not None or self._quick_guards is None:
            return ticket
        declared = self.interface_of(interface, model)
        call = Call("", declared, model, version, api_key=api_key, bearer_token=bearer_token)
        if declared != interface:
            call.protocol = interface
        quick: list[tuple[int, Quick]] = []
        try:
            for index, guard in enumerate(self._quick_guards):
                take = guard.quick(call)
                if take is not None:
                    quick.append((index, take))
        except GovernanceError:  # refused whatever the load: check() refuses and counts it
            return None
        if len(self._tickets) >= _TICKETS_MAX:
            self._fold_tickets()
        ticket = self._tickets[key] = Ticket(declared, call.principal, tuple(quick))
        return ticket

    def _fold_tickets(self) -> None:
        """Forget every ticket, keeping what they admitted."""
        counts = self._admitted_by_interface
        for ticket in self._tickets.values():
            counts[ticket.interface] = counts.get(ticket.interface, 0) + ticket.admitted
        self._tickets.clear()
        self.generation.bump()

    @property
    def admitted_by_interface(self) -> dict[str, int]:
        counts = dict(self._admitted_by_interface)
        for ticket in self._tickets.values():
            if ticket.admitted:
                counts[ticket.interface] = counts.get(ticket.interface, 0) + ticket.admitted
        return counts

    @property
    def admitted(self) -> int:
        return sum(self.admitted_by_interface.values())

    def _admit_from(self, call: Call, first: int) -> Awaitable[None] | None:
        guards = self.guards
        for index in range(first, len(guards)):
            try:
                pending = guards[index].check(call)
            except GovernanceError as error:
                self._refused(call, index, error)
                raise
            if pending is not None:
                return self._admit_after(call, index, pending)
        by_interface = self._admitted_by_interface
        by_interface[call.interface] = by_interface.get(call.interface, 0) + 1
        return None

    async def _admit_after(self, call: Call, index: int, pending: Awaitable[None]) -> None:
        try:
            await pending
        except GovernanceError as error:
            self._refused(call, index, error)
            raise
        rest = self._admit_from(call, index + 1)
        if rest is not None:
            await rest

    def _refused(self, call: Call, index: int, error: GovernanceError) -> None:
        for guard in self.guards[:index]:  # those that admitted it hear the outcome
            guard.record(call, 0.0, error)
        self._rejected(call, error)

    async def run(self, call: Call, handler: Callable[[], Awaitable[T]]) -> T:
        pending = self.admit(call)
        if pending is not None:
            await pending
        learners = self._learners
        if not learners:  # auth and rate limits learn nothing from the outcome
            return await handler()
        start = self.clock.monotonic()
        try:
            result = await handler()
        except BaseException as error:
            latency = self.clock.monotonic() - start
            for guard in learners:
                guard.record(call, latency, error)
            raise
        latency = self.clock.monotonic() - start
        for guard in learners:
            guard.record(call, latency, None)
        return result

    def _rejected(self, call: Call, error: GovernanceError) -> None:
        rule = error.rule or "unknown"
        if isinstance(error, Degraded):
            self.fallbacks[rule] = self.fallbacks.get(rule, 0) + 1
            by_rule = self.fallbacks_by_interface.setdefault(call.interface, {})
        else:
            self.rejected[rule] = self.rejected.get(rule, 0) + 1
            by_rule = self.rejected_by_interface.setdefault(call.interface, {})
        by_rule[rule] = by_rule.get(rule, 0) + 1
        family = rule.partition("/")[0]
        event = rejection_event(
            call,
            error,
            strategy_of(rule),
            _MESSAGES.get(family, "the request was refused"),
            fallback=isinstance(error, Degraded),
        )
        REFUSALS.warning(log, "Request is Degraded", **event)
        if self.on_rejected is not None:
            self.on_rejected({**event, "time": self.clock.wall()})

    def describe(self) -> dict[str, Any]:
        return {
            "admitted": self.admitted,
            "rejected": dict(self.rejected),
            "fallbacks": dict(self.fallbacks),
        }

    def by_interface(self) -> dict[str, Any]:
        """Admitted by interface; rejected and fallbacks by interface, then rule."""
        return {
            "admitted": self.admitted_by_interface,
            "rejected": {i: dict(r) for i, r in self.rejected_by_interface.items()},
            "fallbacks": {i: dict(r) for i, r in self.fallbacks_by_interface.items()},
        }
