"""Power of two choices and outlier ejection on a fake clock and a seeded random source."""

from __future__ import annotations

import random
from collections import Counter

from modelyard.client.balancer import Balancer, Host, OutlierPolicy
from modelyard.clock import FakeClock

POLICY = OutlierPolicy(
    consecutive_failures=3,
    failure_percentage=50.0,
    failure_percentage_min_requests=10,
    interval=10.0,
    base_ejection_time=30.0,
    max_ejection_time=100.0,
    max_ejection_percent=50.0,
    panic_threshold=50.0,
)


def balancer(
    *weights: float, policy: OutlierPolicy = POLICY
) -> tuple[Balancer, list[Host], FakeClock]:
    clock = FakeClock()
    b = Balancer(policy, clock=clock, rng=random.Random(7))
    hosts = [Host(f"h{i}", weight) for i, weight in enumerate(weights)]
    for host in hosts:
        b.add(host)
    return b, hosts, clock


def fail(b: Balancer, host: Host, times: int = 1) -> None:
    for _ in range(times):
        b.start(host)
        b.finish(host, True)


def succeed(b: Balancer, host: Host, times: int = 1) -> None:
    for _ in range(times):
        b.start(host)
        b.finish(host, False)


def picks(b: Balancer, hosts: list[Host], n: int = 4000, nearby: bool = False) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _ in range(n):
        host = b.pick_nearby(hosts) if nearby else b.pick(hosts)
        assert host is not None
        counts[host.key] += 1
    return counts


def test_of_two_hosts_the_one_with_fewer_outstanding_requests_wins() -> None:
    b, (busy, idle), _ = balancer(1, 1)
    busy.outstanding = 5
    assert picks(b, [busy, idle], 200) == Counter({"h1": 200})


def test_p2c_never_picks_the_busiest_of_three() -> None:
    b, hosts, _ = balancer(1, 1, 1)
    hosts[0].outstanding, hosts[1].outstanding, hosts[2].outstanding = 9, 1, 0
    counts = picks(b, hosts)
    assert counts["h0"] == 0
    assert counts["h2"] > counts["h1"] > 0


def test_a_weight_is_a_split_that_load_does_not_bend() -> None:
    # a canary at 10 % beside three loaded stable instances (release._set_weights' weights)
    b, hosts, _ = balancer(1, 1, 1, 10 * 3 / 90)
    for stable in hosts[:3]:
        stable.outstanding = 10
    counts = picks(b, hosts, 10_000)
    assert abs(counts["h3"] / 10_000 - 0.10) < 0.01, counts  # the idle canary gets its 10 %
    # within a weight, the less busy host still wins
    hosts[0].outstanding = 0
    counts = picks(b, hosts, 10_000)
    assert counts["h0"] > 5_000 and abs(counts["h3"] / 10_000 - 0.10) < 0.01, counts


def test_hosts_of_weight_zero_get_nothing_beside_weighted_ones() -> None:
    b, hosts, _ = balancer(0, 1, 2)
    assert "h0" not in picks(b, hosts, 2_000)


def test_an_idle_service_is_spread_in_proportion_to_weight() -> None:
    b, hosts, _ = balancer(1, 2, 5)
    counts = picks(b, hosts, 16_000)
    shares = [counts[h.key] / 16_000 for h in hosts]
    for share, expected in zip(shares, (1 / 8, 2 / 8, 5 / 8), strict=True):
        assert abs(share - expected) < 0.02, shares


def test_under_load_outstanding_requests_settle_in_proportion_to_weight() -> None:
    b, hosts, _ = balancer(1, 3)
    for _ in range(4000):  # requests that never finish: where do they pile up?
        host = b.pick(hosts)
        assert host is not None
        b.start(host)
    assert abs(hosts[1].outstanding / hosts[0].outstanding - 3) < 0.25


def test_consecutive_failures_eject_a_host_and_a_success_resets_the_count() -> None:
    b, (bad, good, other), _ = balancer(1, 1, 1)
    fail(b, bad, 2)
    succeed(b, bad)
    fail(b, bad, 2)
    assert b.ejected() == []
    fail(b, bad)
    assert b.ejected() == [bad]
    assert bad.key not in picks(b, [bad, good, other], 500)


def test_a_failure_percentage_over_the_window_ejects_a_host() -> None:
    b, (flaky, _good, _other), _clock = balancer(1, 1, 1)
    for _ in range(5):  # alternate: never three in a row, but half of them fail
        succeed(b, flaky)
        fail(b, flaky)
    assert b.ejected() == [flaky]


def test_the_failure_window_restarts_after_the_interval() -> None:
    b, (flaky, _good, _other), clock = balancer(1, 1, 1)
    for _ in range(4):
        succeed(b, flaky)
        fail(b, flaky)
    clock.advance(10.0)  # the 8 results so far fall out of the window
    succeed(b, flaky)
    fail(b, flaky)
    assert b.ejected() == []


def test_an_ejected_host_returns_after_the_ejection_time() -> None:
    b, (bad, good), clock = balancer(1, 1)
    fail(b, bad, 3)
    assert b.pick([bad, good]) is good
    clock.advance(29.9)
    assert all(b.pick([bad, good]) is good for _ in range(50))
    clock.advance(0.1)
    assert b.ejected() == []
    assert "h0" in picks(b, [bad, good], 50)


def test_each_ejection_lasts_longer_up_to_the_maximum() -> None:
    b, (bad, _good, _other), clock = balancer(1, 1, 1)
    durations = []
    for _ in range(5):
        fail(b, bad, 3)
        assert b.ejected() == [bad]
        durations.append(bad.ejected_until - clock.now)
        clock.now = bad.ejected_until
    assert durations == [30.0, 60.0, 90.0, 100.0, 100.0]


def test_the_ejection_multiplier_decays_while_a_host_stays_healthy() -> None:
    b, (bad, _good, _other), clock = balancer(1, 1, 1)
    fail(b, bad, 3)
    clock.now = bad.ejected_until
    fail(b, bad, 3)  # second ejection: 60 s
    clock.now = bad.ejected_until
    for _ in range(2):  # two healthy intervals take the multiplier back to zero
        clock.advance(10.0)
        succeed(b, bad)
    fail(b, bad, 3)
    assert bad.ejected_until - clock.now == 30.0


def test_results_of_requests_started_before_an_ejection_do_not_count() -> None:
    b, (bad, _good), clock = balancer(1, 1)
    for _ in range(5):
        b.start(bad)
    for _ in range(5):
        b.finish(bad, True)
    assert bad.outstanding == 0
    clock.now = bad.ejected_until
    fail(b, bad, 2)  # the two late failures did not carry over
    assert b.ejected() == []


def test_no_more_than_the_max_ejection_percent_are_out_at_once() -> None:
    b, hosts, clock = balancer(1, 1, 1, 1, 1)
    for host in hosts:
        fail(b, host, 3)
    assert len(b.ejected()) == 2  # 50 % of 5, rounded down
    clock.now = hosts[0].ejected_until
    fail(b, hosts[2], 3)  # a slot is free again
    assert b.ejected() == [hosts[2]]


def test_one_host_may_always_be_ejected() -> None:
    b, (bad, _good), _ = balancer(1, 1, policy=OutlierPolicy(max_ejection_percent=10.0))
    fail(b, bad, 5)
    assert b.ejected() == [bad]


def test_panic_when_too_few_hosts_are_healthy_uses_them_all() -> None:
    policy = OutlierPolicy(consecutive_failures=1, max_ejection_percent=100.0, panic_threshold=60.0)
    b, hosts, _ = balancer(1, 1, 1, 1, 1, policy=policy)
    fail(b, hosts[0])
    fail(b, hosts[1])  # 3 of 5 healthy: 60 %, no panic yet
    counts = picks(b, hosts, 1000)
    assert counts["h0"] == counts["h1"] == 0
    fail(b, hosts[2])  # 2 of 5: panic, the ejected hosts take traffic again
    counts = picks(b, hosts, 1000)
    assert all(counts[h.key] > 100 for h in hosts), counts


def test_a_retry_goes_to_another_host_even_an_ejected_one() -> None:
    b, (bad, tried), _ = balancer(1, 1)
    fail(b, bad, 3)
    assert b.pick([bad, tried], exclude={tried}) is bad
    assert b.pick([bad, tried], exclude={tried, bad}) is None


def test_a_host_with_weight_zero_gets_nothing_while_others_can_serve() -> None:
    b, (zero, one), _ = balancer(0, 1)
    assert picks(b, [zero, one], 500) == Counter({"h1": 500})


def nearby_picks(b: Balancer, hosts: list[Host], n: int = 50) -> Counter[str]:
    return picks(b, hosts, n, nearby=True)


def test_pick_nearby_keeps_to_the_local_hosts_while_one_is_in_and_untried() -> None:
    b, hosts, clock = balancer(1, 1, 1, 1)
    hosts[0].local = hosts[1].local = True
    counts = nearby_picks(b, hosts, 400)
    assert set(counts) == {"h0", "h1"} and min(counts.values()) > 100  # spread over both
    # a retry after both local hosts were tried spills over
    assert b.pick_nearby(hosts, exclude=[hosts[0], hosts[1]]) in (hosts[2], hosts[3])
    # one local host ejected: the other takes everything
    fail(b, hosts[0], 3)
    assert set(nearby_picks(b, hosts)) == {"h1"}
    # none of them in: the remote ones serve, until the ejections end
    fail(b, hosts[1], 3)
    assert set(nearby_picks(b, hosts)) <= {"h2", "h3"}
    clock.advance(31)
    assert set(nearby_picks(b, hosts)) <= {"h0", "h1"}


def test_pick_nearby_leaves_a_local_host_failing_in_a_row_that_the_cap_keeps_in() -> None:
    b, hosts, _ = balancer(1, 1, 1)
    hosts[0].local = hosts[1].local = True
    fail(b, hosts[0], 3)
    fail(b, hosts[1], 3)  # one of three may be out: h1 stays in, failing
    assert [h.key for h in b.ejected()] == ["h0"]
    assert set(nearby_picks(b, hosts)) <= {"h1", "h2"} and "h2" in nearby_picks(b, hosts)
    succeed(b, hosts[1])  # it answers again: local first again
    assert set(nearby_picks(b, hosts)) == {"h1"}


def test_pick_nearby_spills_over_past_local_hosts_weighted_out() -> None:
    b, hosts, _ = balancer(0, 1, 1)  # the local one is a canary at 0 %
    hosts[0].local = True
    assert set(nearby_picks(b, hosts)) == {"h1", "h2"}


def test_weights_a_rounding_apart_are_one_class_and_nan_weighs_nothing() -> None:
    b, hosts, _ = balancer(1.0, 1.0 + 1e-12, float("nan"))
    hosts[0].outstanding = 5  # one class: the less busy of the two wins
    assert set(picks(b, hosts, 200)) == {"h1"}
