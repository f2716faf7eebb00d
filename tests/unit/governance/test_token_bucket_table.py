"""The Python token buckets against the shared table of cases (the Lua one: integration)."""

from __future__ import annotations

import pytest

from modelyard.clock import FakeClock
from modelyard.governance.ratelimit import LimitShares, SharedLimit, TokenBucket
from tests.support.token_bucket_cases import CASES, BucketCase

START = 1000.0


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_shared_limit_follows_the_table(case: BucketCase) -> None:
    clock = FakeClock(START + case.steps[0].at)
    limit = SharedLimit(LimitShares.of(case.rate, case.burst_seconds, case.reserved), clock)
    for step in case.steps:
        clock.now = START + step.at
        admitted = sum(limit.try_take(step.model) for _ in range(step.requests))
        assert (admitted, limit.tokens_left(), limit.wait_time(step.model)) == (
            step.admitted,
            pytest.approx(step.tokens_left, abs=1e-6),
            pytest.approx(step.wait, abs=1e-6),
        ), step


@pytest.mark.parametrize(
    "case", [case for case in CASES if not case.reserved], ids=lambda case: case.name
)
def test_token_bucket_follows_the_table(case: BucketCase) -> None:
    clock = FakeClock(START + case.steps[0].at)
    bucket = TokenBucket(case.rate, case.capacity, clock)
    for step in case.steps:
        clock.now = START + step.at
        admitted = sum(bucket.try_take() for _ in range(step.requests))
        assert (admitted, bucket.tokens, bucket.wait_time()) == (
            step.admitted,
            pytest.approx(step.tokens_left, abs=1e-6),
            pytest.approx(step.wait, abs=1e-6),
        ), step
