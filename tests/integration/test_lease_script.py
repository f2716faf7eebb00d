"""The cluster-qps Lua script in a real redis-server against the shared table of cases.

The script reads its clock from Redis (``TIME``); here the table's times stand in its
place, passed as the last two arguments, as a fake clock stands in for the Python
buckets' (tests/unit/governance/test_token_bucket_table.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis import Redis

from modelyard.governance.cluster import LEASE_STEPS, lease_limit_args
from modelyard.governance.ratelimit import LimitShares
from tests.support.redis_server import running_redis
from tests.support.token_bucket_cases import CASES, BucketCase

TABLE_CLOCK = "local t = {ARGV[#ARGV - 1], ARGV[#ARGV]}\n"
EPOCH_US = 1_700_000_000_000_000  # the table's time 0, in microseconds


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        client = Redis.from_url(server.url)
        yield client
        client.close()


def clock_args(at: float) -> list[int]:
    micros = EPOCH_US + round(at * 1_000_000)
    return [micros // 1_000_000, micros % 1_000_000]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_lease_script_follows_the_table(redis: Redis, case: BucketCase) -> None:
    script = redis.register_script(TABLE_CLOCK + LEASE_STEPS)
    shares = LimitShares.of(case.rate, case.burst_seconds, case.reserved)
    models = list(shares.reserved)
    prefix = f"table:{{{case.name}}}"
    keys = [f"{prefix}:pool", *(f"{prefix}:m:{model}" for model in models)]
    limit_args = lease_limit_args(shares, ttl_ms=600_000)
    for step in case.steps:
        mine = models.index(step.model) + 1 if step.model in models else 0
        admitted, wait = 0, None
        for _ in range(step.requests):
            granted, wait, _, _ = script(
                keys=keys, args=[1, mine, 0, *limit_args, *clock_args(step.at)]
            )
            admitted += granted
        left = sum(float(redis.hget(key, "tokens") or 0) for key in keys)
        assert (admitted, left, float(wait or 0)) == (
            step.admitted,
            pytest.approx(step.tokens_left, abs=1e-6),
            pytest.approx(step.wait, abs=1e-6),
        ), step
