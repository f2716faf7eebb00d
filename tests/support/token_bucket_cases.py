"""One table of token-bucket cases that every implementation of the bucket is tested against.

The bucket is written twice: in Python (``TokenBucket``; ``SharedLimit``, the same bucket
with model reserves that spill into a pool) for instance-qps, and in Lua
(``cluster.LEASE_STEPS``, run inside Redis) for cluster-qps. Each case is a limit and a
list of steps: at a time, a model asks for some calls one by one; the step says how
many are admitted (the rest are refused), the tokens left in all buckets together, and
the seconds until that model could have one more call. The numbers are worked out by
hand from the limit, so they say what the bucket should do, not what one of the
implementations happens to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    at: float  # seconds after the case's first step
    model: str  # a model with a reserve takes from it first, then from the pool
    requests: int
    admitted: int
    tokens_left: float  # pool and reserves together, after the step
    wait: float  # seconds until ``model`` could take one more token

    @property
    def refused(self) -> int:
        return self.requests - self.admitted


@dataclass(frozen=True)
class BucketCase:
    name: str
    rate: float  # calls per second
    burst_seconds: float  # the bucket holds rate x burst_seconds tokens
    steps: tuple[Step, ...]
    reserved: dict[str, float] = field(default_factory=dict)  # model -> reserved calls/s

    @property
    def capacity(self) -> float:
        return self.rate * self.burst_seconds


CASES = (
    BucketCase(
        "a full bucket admits one burst, then refuses",
        rate=10,
        burst_seconds=1,
        steps=(Step(0.0, "m", 15, admitted=10, tokens_left=0, wait=0.1),),
    ),
    BucketCase(
        "tokens come back at the rate",
        rate=10,
        burst_seconds=1,
        steps=(
            Step(0.0, "m", 10, admitted=10, tokens_left=0, wait=0.1),
            Step(0.05, "m", 1, admitted=0, tokens_left=0.5, wait=0.05),
            Step(0.1, "m", 1, admitted=1, tokens_left=0, wait=0.1),
            Step(0.35, "m", 3, admitted=2, tokens_left=0.5, wait=0.05),
        ),
    ),
    BucketCase(
        "a long idle time leaves one burst, not more",
        rate=100,
        burst_seconds=0.5,
        steps=(
            Step(0.0, "m", 60, admitted=50, tokens_left=0, wait=0.01),
            Step(10.0, "m", 80, admitted=50, tokens_left=0, wait=0.01),
            Step(10.05, "m", 10, admitted=5, tokens_left=0, wait=0.01),
        ),
    ),
    BucketCase(
        "burst_seconds sizes the bucket",
        rate=4,
        burst_seconds=2.5,
        steps=(
            Step(0.0, "m", 12, admitted=10, tokens_left=0, wait=0.25),
            Step(1.0, "m", 5, admitted=4, tokens_left=0, wait=0.25),
            Step(3.5, "m", 12, admitted=10, tokens_left=0, wait=0.25),
        ),
    ),
    BucketCase(
        "a slow limit: one call every two seconds",
        rate=0.5,
        burst_seconds=2,
        steps=(
            Step(0.0, "m", 2, admitted=1, tokens_left=0, wait=2.0),
            Step(1.0, "m", 1, admitted=0, tokens_left=0.5, wait=1.0),
            Step(2.0, "m", 1, admitted=1, tokens_left=0, wait=2.0),
        ),
    ),
    BucketCase(
        "a clock that steps back makes no tokens, and none twice",
        rate=10,
        burst_seconds=1,
        steps=(
            Step(1.0, "m", 10, admitted=10, tokens_left=0, wait=0.1),
            Step(0.5, "m", 1, admitted=0, tokens_left=0, wait=0.1),
            Step(1.05, "m", 1, admitted=0, tokens_left=0.5, wait=0.05),
        ),
    ),
    BucketCase(
        # reserve a: 4 tokens at 4/s; the pool: 6 tokens at 6/s. A full reserve spills
        # into the pool, so a model waiting on the pool counts its rate too.
        "a reserve is its model's; the others share the pool",
        rate=10,
        burst_seconds=1,
        reserved={"a": 4},
        steps=(
            Step(0.0, "b", 10, admitted=6, tokens_left=4, wait=0.1),
            Step(0.0, "a", 5, admitted=4, tokens_left=0, wait=0.1),
            Step(0.5, "b", 5, admitted=3, tokens_left=2, wait=1 / 6),
            Step(0.5, "a", 3, admitted=2, tokens_left=0, wait=0.1),
        ),
    ),
    BucketCase(
        # reserve a: 8 tokens at 4/s; the pool: 12 at 6/s. After 1 s the full reserve
        # has spilled 4 tokens into the pool: b gets 6 + 4.
        "a full reserve spills into the pool",
        rate=10,
        burst_seconds=2,
        reserved={"a": 4},
        steps=(
            Step(0.0, "b", 15, admitted=12, tokens_left=8, wait=0.1),
            Step(1.0, "b", 15, admitted=10, tokens_left=8, wait=0.1),
            Step(1.5, "a", 10, admitted=10, tokens_left=3, wait=0.0),
        ),
    ),
    BucketCase(
        # Reserves of the whole limit shrink by one call (9 tokens), so the pool holds
        # one, refilled only by what the full reserve spills.
        "reserves of the whole limit leave the pool one call",
        rate=10,
        burst_seconds=1,
        reserved={"a": 10},
        steps=(
            Step(0.0, "b", 3, admitted=1, tokens_left=9, wait=0.1),
            Step(0.1, "b", 1, admitted=1, tokens_left=9, wait=0.1),
            Step(0.1, "a", 12, admitted=9, tokens_left=0, wait=0.1),
        ),
    ),
)
