"""The chain's decisions by interface and the breaker block of GET /v2/modelyard/stats."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from modelyard.clock import FakeClock
from modelyard.errors import Code, EngineError, GovernanceError
from modelyard.governance.guard import Call, Degraded
from modelyard.governance.runtime import Governance

SERVICE = """\
service: com.example.test.counts
limits:
  infer:
    instance_qps: 3
    burst_seconds: 1
breakers:
  bad-errors:
    interface: infer
    model: bad
    kind: error_count
    threshold: 1
    min_requests: 1
    recovery_s: 60
    fallback: {model: zeros}
"""


async def ok() -> str:
    return "ok"


async def broken() -> str:
    raise EngineError("engine python failed to run", code=Code.INTERNAL)


def test_decisions_are_counted_by_interface_and_rule(tmp_path: Path) -> None:
    path = tmp_path / "service.yaml"
    path.write_text(SERVICE)
    clock = FakeClock()
    governance = Governance.from_file(path, clock=clock)

    def call(interface: str, model: str | None) -> Call:
        return Call(governance.service, interface, model)

    async def scenario() -> None:
        assert await governance.guard(call("infer", "good"), ok) == "ok"  # token 1
        with pytest.raises(EngineError):
            await governance.guard(call("infer", "bad"), broken)  # token 2; the breaker opens
        with pytest.raises(Degraded):
            await governance.guard(call("infer", "bad"), ok)  # token 3; answered by fallback
        with pytest.raises(GovernanceError) as limited:
            await governance.guard(call("infer", "good"), ok)  # no token left
        assert limited.value.rule == "ratelimit/instance-qps"
        for _ in range(2):
            await governance.guard(call("metadata", None), ok)  # metadata has no limit

    asyncio.run(scenario())
    clock.advance(5.0)

    chain = governance.chain
    # the existing totals keep their meaning
    assert chain.admitted == 4
    assert chain.rejected == {"ratelimit/instance-qps": 1}
    assert chain.fallbacks == {"breaker/bad-errors": 1}
    live = governance.live_stats()
    assert live == {
        "service": "com.example.test.counts",
        "admitted": {"infer": 2, "metadata": 2},
        "rejected": {"infer": {"ratelimit/instance-qps": 1}},
        "fallbacks": {"infer": {"breaker/bad-errors": 1}},
        "rejections_total": 1,
        "counted_since": 1000.0,  # the governance's start, on its clock
        "breakers": [
            {
                "rule": "breaker/bad-errors",
                "interface": "infer",
                "model": "bad",
                "state": "open",
                "since": 1000.0,  # when it opened (FakeClock's wall is its monotonic)
            }
        ],
    }
