"""Which idle models residency unloads to make room: by recency (lru) or by cost."""

from __future__ import annotations

import pytest

from modelyard.server.residency import (
    COST,
    LRU,
    PLACED_S,
    PROTECTED_S,
    RATE_HALF_LIFE_S,
    Residency,
)

MB = 1 << 20


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def loaded(residency: Residency, clock: Clock, name: str, load_s: float) -> None:
    state = residency.of(name)
    state.loads += 1
    state.loaded_at = clock.now - 2 * PROTECTED_S  # long enough ago not to be protected
    state.load_seconds = load_s


def asked(residency: Residency, clock: Clock, name: str, times: int) -> None:
    for _ in range(times):
        residency.count_request(name)
        clock.now += 0.01


def idle(_: str) -> bool:
    return True


def test_lru_unloads_the_least_recently_used_whatever_its_size_or_rate() -> None:
    clock = Clock()
    residency = Residency(40 * MB, now=clock, policy=LRU)
    for name in ("small_hot", "large_rare"):
        loaded(residency, clock, name, load_s=0.5)
    asked(residency, clock, "small_hot", 50)
    asked(residency, clock, "large_rare", 1)
    held = {"small_hot": 5 * MB, "large_rare": 30 * MB}
    assert residency.victims(10 * MB, held, idle, keep=set()) == ["small_hot"]


def test_cost_unloads_the_model_whose_rate_times_load_time_per_byte_is_least() -> None:
    clock = Clock()
    residency = Residency(40 * MB, now=clock, policy=COST)
    for name in ("small_hot", "large_rare"):
        loaded(residency, clock, name, load_s=0.5)
    asked(residency, clock, "small_hot", 50)
    asked(residency, clock, "large_rare", 1)  # the most recently used, but rarely
    held = {"small_hot": 5 * MB, "large_rare": 30 * MB}
    assert residency.victims(10 * MB, held, idle, keep=set()) == ["large_rare"]


def test_cost_weighs_a_slow_load_and_forgets_an_old_rate() -> None:
    clock = Clock()
    residency = Residency(40 * MB, now=clock, policy=COST)
    loaded(residency, clock, "slow", load_s=2.0)
    loaded(residency, clock, "quick", load_s=0.2)
    asked(residency, clock, "slow", 4)
    asked(residency, clock, "quick", 4)
    held = {"slow": 10 * MB, "quick": 10 * MB}
    # the same rate and size: the one that loads quickly is cheaper to lose
    assert residency.victims(25 * MB, held, idle, keep=set()) == ["quick"]
    # four half-lives without a request weigh its rate a sixteenth: now it goes first
    clock.now += 4 * RATE_HALF_LIFE_S
    asked(residency, clock, "quick", 4)
    assert residency.victims(25 * MB, held, idle, keep=set()) == ["slow"]


@pytest.mark.parametrize("policy", [LRU, COST])
def test_no_policy_unloads_a_pinned_a_kept_or_a_busy_model(policy: str) -> None:
    clock = Clock()
    residency = Residency(30 * MB, now=clock, policy=policy)
    for name in ("pinned", "kept", "busy", "free"):
        loaded(residency, clock, name, load_s=0.5)
        asked(residency, clock, name, 1)
    residency.pinned.add("pinned")
    held = {name: 10 * MB for name in ("pinned", "kept", "busy", "free")}
    chosen = residency.victims(
        20 * MB, held, lambda name: name != "busy", keep={"kept"}
    )
    assert chosen is None  # only "free" may go, and 10 MB is not enough
    assert residency.victims(
        0, held, lambda name: name != "busy", keep={"kept"}
    ) == ["free"]


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of"):
        Residency(MB, policy="random")


@pytest.mark.parametrize("policy", [LRU, COST])
def test_a_model_the_repository_api_placed_goes_last_for_a_while(policy: str) -> None:
    clock = Clock()
    residency = Residency(30 * MB, now=clock, policy=policy)
    for name in ("placed", "used"):
        loaded(residency, clock, name, load_s=0.5)
    residency.placed("placed")  # a hot model's copy, not asked for here yet
    asked(residency, clock, "used", 5)
    held = {"placed": 10 * MB, "used": 10 * MB}
    assert residency.victims(15 * MB, held, idle, keep=set()) == ["used"]
    assert residency.victims(25 * MB, held, idle, keep=set()) == ["used", "placed"]
    clock.now += PLACED_S
    assert residency.victims(15 * MB, held, idle, keep=set()) == ["placed"]


def test_cost_reads_a_model_that_just_turned_hot_as_hot() -> None:
    clock = Clock()
    residency = Residency(40 * MB, now=clock, policy=COST)
    for name in ("was_hot", "now_hot"):
        loaded(residency, clock, name, load_s=0.5)
    for _ in range(600):  # ten a second for a minute
        residency.count_request("was_hot")
        clock.now += 0.1
    clock.now += 2 * RATE_HALF_LIFE_S  # then none for two half-lives
    for _ in range(40):  # while the other is asked for twenty a second for two seconds
        residency.count_request("now_hot")
        clock.now += 0.05
    was = residency.rate(residency.of("was_hot"), clock.now)
    now = residency.rate(residency.of("now_hot"), clock.now)
    assert 1.5 < was < 3.0  # ten a second, about a quarter left
    assert 7.0 < now < 9.0  # forty requests over the least window (RATE_MIN_WINDOW_S)
    held = {"was_hot": 10 * MB, "now_hot": 10 * MB}
    assert residency.victims(25 * MB, held, idle, keep=set()) == ["was_hot"]
