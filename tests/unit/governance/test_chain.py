"""The guard chain: order, what it calls back, and the counts it keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from modelyard.errors import GovernanceError
from modelyard.governance.chain import GuardChain
from modelyard.governance.guard import Call, rejected


class Recording:
    def __init__(self, name: str, log: list[str], *, learns: bool, refuse: bool = False) -> None:
        self.name = name
        self.log = log
        self.learns_from_outcomes = learns
        self.refuse = refuse

    def check(self, call: Call) -> Awaitable[None] | None:
        self.log.append(f"check {self.name}")
        if self.refuse:
            raise rejected("no", rule=f"test/{self.name}", where="here")
        return None

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        self.log.append(f"record {self.name}")


class Waiting(Recording):
    """A guard that needs I/O to decide, like cluster-qps with a spent lease."""

    def check(self, call: Call) -> Awaitable[None] | None:
        super().check(call)

        async def decide() -> None:
            await asyncio.sleep(0)
            self.log.append(f"decided {self.name}")

        return decide()


def run(chain: GuardChain) -> str:
    async def handler() -> str:
        return "answer"

    return asyncio.run(chain.run(Call("svc", "infer", "m"), handler))


def test_only_guards_that_learn_hear_the_outcome() -> None:
    log: list[str] = []
    chain = GuardChain(
        [
            Recording("auth", log, learns=False),
            Waiting("cluster", log, learns=False),
            Recording("breaker", log, learns=True),
        ]
    )
    assert run(chain) == "answer"
    assert log == [
        "check auth",
        "check cluster",
        "decided cluster",
        "check breaker",
        "record breaker",
    ]
    assert chain.admitted == 1


def test_a_refusal_is_recorded_by_the_learning_guards_that_admitted_it() -> None:
    log: list[str] = []
    chain = GuardChain(
        [
            Recording("breaker", log, learns=True),
            Recording("limit", log, learns=False, refuse=True),
            Recording("later", log, learns=True),
        ]
    )
    with pytest.raises(GovernanceError):
        run(chain)
    assert log == ["check breaker", "check limit", "record breaker"]
    assert chain.rejected == {"test/limit": 1}
