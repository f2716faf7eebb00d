"""Tickets: a repeated call shape decided by the guards' quick paths, as the chain would."""

from __future__ import annotations

import pytest

from modelyard.clock import FakeClock
from modelyard.errors import GovernanceError
from modelyard.governance.auth import AuthConfig, AuthGuard, Principal, hash_secret
from modelyard.governance.breaker import BreakerGuard, BreakerRule
from modelyard.governance.chain import AHEAD, GuardChain
from modelyard.governance.guard import Call
from modelyard.governance.ratelimit import InstanceQpsGuard, QpsLimit

START = 1_000.0
KEY = "ranker-key"


def auth() -> AuthGuard:
    principal = Principal("ranker", {"infer": ("ranker",)})
    return AuthGuard(AuthConfig(enabled=True, by_digest={hash_secret(KEY): principal}))


def limited_chain(clock: FakeClock, qps: float = 100) -> GuardChain:
    limit = QpsLimit(qps, reserved_qps={"ranker": 40})
    return GuardChain([auth(), InstanceQpsGuard({"infer": limit}, clock, "service.yaml")], clock)


def through_tickets(chain: GuardChain, calls: int) -> list[GovernanceError]:
    """What the HTTP frontend does: the ticket first, the guards from where it stopped."""
    errors = []
    for _ in range(calls):
        ticket = chain.ticket("infer", "ranker", None, KEY, None)
        assert ticket is not None
        first = ticket.admit()
        if first is None:
            continue
        call = Call("shop", "infer", "ranker", api_key=KEY, principal=ticket.principal)
        try:
            assert chain.admit(call, first) is None
        except GovernanceError as error:
            errors.append(error)
    return errors


def through_the_chain(chain: GuardChain, calls: int) -> list[GovernanceError]:
    errors = []
    for _ in range(calls):
        try:
            assert chain.admit(Call("shop", "infer", "ranker", api_key=KEY)) is None
        except GovernanceError as error:
            errors.append(error)
    return errors


def test_tickets_admit_and_refuse_exactly_what_the_whole_chain_does() -> None:
    ticketed, whole = limited_chain(FakeClock(START)), limited_chain(FakeClock(START))
    by_ticket, by_chain = through_tickets(ticketed, 131), through_the_chain(whole, 131)

    for chain in (ticketed, whole):
        limit = chain.guards[1]
        assert isinstance(limit, InstanceQpsGuard)
        assert chain.admitted == 100 and chain.admitted_by_interface == {"infer": 100}
        assert limit.admitted == 100
        assert chain.rejected == {"ratelimit/instance-qps": 31}
    assert len(by_ticket) == len(by_chain) == 31
    # the refusal is check()'s own: the window counted every call once, quick path or not
    assert by_ticket[-1].line() == by_chain[-1].line()
    assert "instance-qps 131/s over limit 100/s" in by_ticket[-1].line()


def test_near_a_large_limit_tickets_still_admit_exactly_what_the_whole_chain_does() -> None:
    # two call shapes (versions) share 2,000 tokens: far from the limit each ticket takes
    # 16 calls' worth at a time, but from 64 x 16 tokens left every call is decided alone,
    # so no ticket holds credit that the other shape's calls would have had
    ticketed, whole = limited_chain(FakeClock(START), 2000), limited_chain(FakeClock(START), 2000)
    by_ticket: list[int] = []
    by_chain: list[int] = []
    for index in range(2010):
        version = "1" if index % 3 else "2"
        ticket = ticketed.ticket("infer", "ranker", version, KEY, None)
        assert ticket is not None
        first = ticket.admit()
        if first is not None:
            call = Call("shop", "infer", "ranker", version, api_key=KEY, principal="ranker")
            with pytest.raises(GovernanceError):
                ticketed.admit(call, first)
            by_ticket.append(index)
        try:
            whole.admit(Call("shop", "infer", "ranker", version, api_key=KEY))
        except GovernanceError:
            by_chain.append(index)
    assert by_ticket == by_chain == list(range(2000, 2010))
    for chain in (ticketed, whole):
        assert chain.admitted == chain.guards[1].admitted == 2000  # type: ignore[attr-defined]


def test_far_from_its_limit_a_ticket_admits_calls_ahead_and_counts_only_those_made() -> None:
    chain = limited_chain(FakeClock(START), 100_000)
    limit = chain.guards[1]
    assert isinstance(limit, InstanceQpsGuard)
    ticket = chain.ticket("infer", "ranker", None, KEY, None)
    assert ticket is not None
    assert ticket.admit() is None
    assert (limit.admitted, ticket.credit, chain.admitted) == (AHEAD, AHEAD - 1, 1)
    for _ in range(AHEAD - 1):  # the credit: no guard is asked
        assert ticket.admit() is None
    assert (limit.admitted, ticket.credit, chain.admitted) == (AHEAD, 0, AHEAD)
    assert ticket.admit() is None
    assert (limit.admitted, chain.admitted) == (2 * AHEAD, AHEAD + 1)


def test_a_ticket_decided_by_two_limits_admits_one_call_at_a_time() -> None:
    clock = FakeClock(START)
    limits = {"infer": QpsLimit(100_000)}
    first = InstanceQpsGuard(limits, clock, "service.yaml")
    second = InstanceQpsGuard(limits, clock, "service.yaml")
    chain = GuardChain([auth(), first, second], clock)
    ticket = chain.ticket("infer", "ranker", None, KEY, None)
    assert ticket is not None
    for _ in range(3):
        assert ticket.admit() is None
    assert (first.admitted, second.admitted, ticket.credit, chain.admitted) == (3, 3, 0, 3)


def test_a_ticket_goes_back_to_its_quick_path_once_tokens_return() -> None:
    clock = FakeClock(START)
    chain = limited_chain(clock)
    assert len(through_tickets(chain, 101)) == 1
    clock.advance(0.01)  # one token back: the next call takes it, the one after is refused
    assert len(through_tickets(chain, 2)) == 1
    assert chain.admitted == 101
    assert chain.rejected == {"ratelimit/instance-qps": 2}


@pytest.mark.parametrize(
    ("api_key", "model", "rule"),
    [
        (None, "ranker", "auth/unauthenticated"),
        ("wrong-key", "ranker", "auth/unauthenticated"),
        (KEY, "scorer", "auth/permission"),
    ],
)
def test_refused_credentials_get_no_ticket_and_each_refusal_is_counted_once(
    api_key: str | None, model: str, rule: str
) -> None:
    chain = GuardChain([auth()])
    guard = chain.guards[0]
    assert isinstance(guard, AuthGuard)
    for attempt in range(1, 4):
        assert chain.ticket("infer", model, None, api_key, None) is None
        with pytest.raises(GovernanceError) as refused:
            chain.admit(Call("shop", "infer", model, api_key=api_key))
        assert refused.value.rule == rule
        assert guard.rejections[rule] == attempt
        assert chain.rejected == {rule: attempt}


def test_a_ticket_carries_the_principal_and_health_needs_no_credentials() -> None:
    chain = GuardChain([auth()])
    ticket = chain.ticket("infer", "ranker", None, None, KEY)  # a bearer token works alike
    assert ticket is not None and ticket.principal == "ranker"
    assert ticket.admit() is None
    assert chain.ticket("infer", "ranker", None, None, KEY) is ticket
    health = chain.ticket("health", None, None, None, None)
    assert health is not None and health.admit() is None
    assert chain.admitted_by_interface == {"infer": 1, "health": 1}


def test_a_chain_with_a_guard_that_learns_keeps_no_tickets() -> None:
    clock = FakeClock(START)
    rule = BreakerRule(id="errors", interface="infer", kind="error_ratio", threshold=0.5)
    chain = GuardChain([auth(), BreakerGuard([rule], clock, "service.yaml")], clock)
    assert chain.learns
    assert chain.ticket("infer", "ranker", None, KEY, None) is None


def test_tickets_are_bounded_whatever_callers_send() -> None:
    chain = GuardChain([])
    for index in range(5000):
        ticket = chain.ticket("infer", f"model-{index}", None, None, None)
        assert ticket is not None and ticket.admit() is None
    assert len(chain._tickets) <= 1024
    assert chain.admitted == 5000


def test_a_ticket_filed_under_a_frontend_key_is_found_by_that_key_alone() -> None:
    chain = GuardChain([auth()])
    raw = ("/v2/models/ranker/infer", KEY.encode(), None)  # what the HTTP frontend files under
    assert chain.known_ticket(raw) is None
    ticket = chain.ticket("infer", "ranker", None, KEY, None, key=raw)
    assert ticket is not None and chain.known_ticket(raw) is ticket
    assert ticket.admit() is None
    assert chain.ticket("infer", "ranker", None, KEY, None) is not ticket  # the shape's own key
    for index in range(2000):  # folding forgets keyed tickets too, and keeps their counts
        chain.ticket("infer", "ranker", None, KEY, None, key=("other", index))
    assert chain.known_ticket(raw) is None
    assert chain.admitted_by_interface == {"infer": 1}
