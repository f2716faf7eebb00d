"""The service's own interfaces as the governance dimension: declared by the models they cover,
named by limits, breakers, counters and error lines; auth stays by protocol interface."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from modelyard.clock import FakeClock
from modelyard.discovery.rules_store import RulesRevision
from modelyard.errors import ConfigError, GovernanceError
from modelyard.governance.auth import hash_secret
from modelyard.governance.guard import Call
from modelyard.governance.runtime import Governance, RulesSource
from modelyard.governance.service_config import parse_service_config

SERVICE = "com.example.test.interfaces"
KEY = "ranker-caller-key"

DECLARED = f"""\
service: {SERVICE}
interfaces:
  rank: {{models: ["ranker*"], description: the ranking API}}
  embed: [minilm, "ranker_embed"]
auth:
  enabled: true
  principals:
    frontend:
      api_keys: ["{hash_secret(KEY)}"]
      allow: {{infer: ["ranker*"], metadata: ["*"]}}
limits:
  rank:
    instance_qps: 1
    burst_seconds: 1
breakers:
  slow-rank: {{interface: rank, kind: error_count, threshold: 5}}
"""


async def ok() -> str:
    return "ok"


def test_an_infer_call_counts_on_the_first_declared_interface_that_names_its_model() -> None:
    config = parse_service_config(DECLARED, "service.yaml")
    assert config.known_interfaces == ("infer", "metadata", "admin", "health", "rank", "embed")
    assert config.interface_of("infer", "ranker") == "rank"
    assert config.interface_of("infer", "ranker_embed") == "rank"  # rank is declared first
    assert config.interface_of("infer", "minilm") == "embed"
    assert config.interface_of("infer", "digits") == "infer"  # no declared one names it
    assert config.interface_of("metadata", "ranker") == "metadata"  # only infer calls
    rows = {row["rule"]: row for row in config.rules()}
    assert rows["interfaces.rank"]["value"] == {"models": ["ranker*"]}
    assert rows["interfaces.rank"]["set_at"] == "service.yaml:3"


@pytest.mark.parametrize(
    ("interfaces", "fragment"),
    [
        ("  infer: [ranker]", "service.yaml:3 at interfaces.infer: 'infer' is a protocol"),
        ("  Rank-API: [ranker]", "interface name 'Rank-API' must be lowercase"),
        ("  rank: {models: ranker}", "at interfaces.rank.models: expected a list, got 'ranker'"),
        ("  rank: {models: []}", "interfaces.rank.models: expected at least 1 item(s), got []"),
        ("  rank: []", "interface rank needs models: at least one name or pattern"),
        ("  rank: {models: [ranker], weight: 2}", "unknown interface field 'weight' (known: desc"),
        ("  rank: {models: [ranker, 7]}", "at interfaces.rank.models.1: expected a string, got 7"),
        ("  - infer\n  - infer", "an interface is listed twice"),
        ("  - rank", "unknown interface 'rank' (the protocol's: infer, metadata"),
    ],
)
def test_a_bad_interface_declaration_is_refused_at_its_line(interfaces: str, fragment: str) -> None:
    text = f"service: {SERVICE}\ninterfaces:\n{interfaces}\n"
    with pytest.raises(ConfigError) as refused:
        parse_service_config(text, "service.yaml")
    assert fragment in refused.value.line()


def test_rules_may_name_only_interfaces_the_service_has() -> None:
    limits = f"service: {SERVICE}\nlimits:\n  rank: {{instance_qps: 5}}\n"
    with pytest.raises(ConfigError) as refused:
        parse_service_config(limits, "service.yaml")
    assert "service.yaml:3 at limits.rank: unknown interface 'rank' (known: infer, metadata" in (
        refused.value.line()
    )
    breaker = DECLARED.replace("interface: rank, kind", "interface: ranking, kind")
    with pytest.raises(ConfigError) as refused:
        Governance(parse_service_config(breaker, "service.yaml"))
    line = refused.value.line()
    assert "at breakers.slow-rank.interface: unknown interface 'ranking'" in line
    assert "health, rank, embed" in line


def test_limits_breakers_and_counters_use_the_declared_name_and_auth_the_protocol(
    tmp_path: Path,
) -> None:
    path = tmp_path / "service.yaml"
    path.write_text(DECLARED.split("breakers:")[0])  # no guard that learns: tickets are kept
    governance = Governance.from_file(path, clock=FakeClock())

    def call(model: str) -> Call:
        call = governance.call("infer", model, None)
        call.api_key = KEY
        return call

    async def scenario() -> None:
        first = call("ranker")
        assert (first.interface, first.protocol_interface) == ("rank", "infer")
        assert await governance.guard(first, ok) == "ok"  # auth allowed it as an infer call
        with pytest.raises(GovernanceError) as limited:
            await governance.guard(call("ranker_v2"), ok)
        line = limited.value.line()
        assert "over limit 1/s for interface rank (model ranker_v2)" in line
        assert "change: limits.rank.instance_qps in service.yaml" in line
        # a model of no declared interface is an infer call: rank's limit is not its own
        with pytest.raises(GovernanceError) as denied:
            await governance.guard(call("digits"), ok)
        assert denied.value.rule == "auth/permission"  # and auth reads the protocol's name
        # the quick path of a repeated call counts on the declared name too
        ticket = governance.chain.ticket("infer", "ranker", None, KEY, None)
        assert ticket is not None and ticket.interface == "rank"
        await governance.aclose()

    asyncio.run(scenario())
    stats = governance.live_stats()
    assert stats["admitted"] == {"rank": 1}
    assert stats["rejected"] == {
        "rank": {"ratelimit/instance-qps": 1},
        "infer": {"auth/permission": 1},
    }


def test_a_central_document_uses_the_service_file_s_interfaces_or_declares_its_own() -> None:
    local = parse_service_config(DECLARED.split("auth:")[0], "service.yaml")

    def revision(number: int, document: str) -> RulesRevision:
        return RulesRevision(SERVICE, number, document, "alice@host", 1000.0, "test", "")

    async def scenario() -> None:
        governance = Governance(local, rules_source=RulesSource.AUTO, clock=FakeClock())
        assert await governance.apply_central(revision(1, "limits: {rank: {instance_qps: 7}}\n"))
        assert governance.config.declared == {
            "rank": ("ranker*",),
            "embed": ("minilm", "ranker_embed"),
        }
        own = "interfaces: {score: [scorer]}\nlimits: {score: {instance_qps: 7}}\n"
        assert await governance.apply_central(revision(2, own))
        assert governance.config.declared == {"score": ("scorer",)}
        assert governance.call("infer", "scorer", None).interface == "score"
        assert governance.call("infer", "ranker", None).interface == "infer"
        # a document declaring none (an empty mapping) uses the service file's again
        assert await governance.apply_central(revision(3, "interfaces: {}\n"))
        assert set(governance.config.declared) == {"rank", "embed"}
        # a revision naming an interface neither declares fails to build: the rules stay
        assert not await governance.apply_central(
            revision(4, "limits: {nope: {instance_qps: 1}}\n")
        )
        assert governance.rules()["revision"] == 3
        await governance.aclose()

    asyncio.run(scenario())


def test_a_rule_for_a_model_another_interface_takes_is_refused_at_its_line() -> None:
    head = f"service: {SERVICE}\ninterfaces:\n  rank: [ranker*]\n"
    share = (
        head + "limits:\n  infer:\n    instance_qps: 9\n    models: {ranker: {reserved_qps: 1}}\n"
    )
    with pytest.raises(ConfigError) as refused:
        parse_service_config(share, "service.yaml")
    line = refused.value.line()
    assert "service.yaml:7 at limits.infer.models.ranker: model 'ranker' counts on" in line
    assert "interface rank, not infer" in line and "never applies" in line
    breaker = (
        head
        + "breakers:\n  b: {interface: infer, model: ranker_v2, kind: error_count, threshold: 3}\n"
    )
    with pytest.raises(ConfigError) as refused:
        Governance(parse_service_config(breaker, "service.yaml"))
    assert "at breakers.b.model: model 'ranker_v2' counts on interface rank" in (
        refused.value.line()
    )
    # on its own interface, or on one whose calls are not infer's, a rule applies
    fine = (
        head
        + "breakers:\n  b: {interface: rank, model: ranker_v2, kind: error_count, threshold: 3}\n"
    )
    assert Governance(parse_service_config(fine, "service.yaml")).config.breakers
