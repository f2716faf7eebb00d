"""The platform spec's shape: a section of the wrong kind is its error line, and a key
left empty reads as left out."""

from __future__ import annotations

import pytest

from modelyard.control.spec import parse_platform_spec
from modelyard.errors import ConfigError
from tests.unit.control.test_ledger import BASE


def test_a_section_of_the_wrong_kind_is_refused_at_its_line_not_a_crash() -> None:
    for text, fragment in (
        ("queues: [dc1-gpu]\n", "platform.yaml:1 at queues: expected a mapping"),
        ("services:\n  a.b: {groups: {g: {templates: {t: {replicas: '2'}}}}}\n", "got '2'"),
    ):
        with pytest.raises(ConfigError) as refused:
            parse_platform_spec(text, "platform.yaml")
        assert fragment in refused.value.line()
        assert "rule=platform/spec" in refused.value.line()


def test_a_key_left_empty_reads_as_left_out() -> None:
    spec = parse_platform_spec(
        "quotas:\nqueues:\nservices:\n  a.b:\n    groups:\n      g:\n        templates:\n"
        "          t:\n            spec: 1C/1G\n            replicas:\n            loads:\n",
        "platform.yaml",
    )
    assert spec.quotas == {} and spec.queues == {}
    template = spec.services["a.b"].groups["g"].templates["t"]
    assert (template.replicas, template.loads, template.queues) == (1, (), {})


def test_a_service_names_its_gateway_processes_and_attempts() -> None:
    text = BASE.replace(
        "    interfaces: [infer, metadata]\n",
        "    interfaces: [infer, metadata]\n"
        "    gateway: {processes: 3, standby: false}\n"
        "    attempts: {infer: {timeout_s: auto, hedge: true}}\n",
    )
    service = parse_platform_spec(text).services["com.example.search.ranker"]
    assert (service.gateway_processes, service.gateway_standby) == (3, False)
    assert service.attempts == {"infer": {"timeout_s": "auto", "hedge": True}}
    default = parse_platform_spec(BASE).services["com.example.search.ranker"]
    assert (default.gateway_processes, default.gateway_standby, default.attempts) == (2, True, {})


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ("gateway: {processes: 0}", "must be a positive number, got 0"),
        ("attempts: {infer: {timeout_s: -1}}", "timeout_s"),
        ("attempts: {infer: {timeout_s: soon}}", "timeout_s"),
        ("attempts: {rank: {timeout_s: 1}}", "unknown interface 'rank'"),
    ],
)
def test_gateway_and_attempts_are_refused_at_their_line(section: str, words: str) -> None:
    text = BASE.replace(
        "    interfaces: [infer, metadata]\n", f"    interfaces: [infer, metadata]\n    {section}\n"
    )
    with pytest.raises(ConfigError) as refused:
        parse_platform_spec(text)
    assert words in str(refused.value) and "platform.yaml:" in str(refused.value)


def test_a_template_names_its_residency_policy_or_is_refused_at_its_line() -> None:
    template = "          t:\n            spec: 1C/1G\n            memory_budget: 2G\n"
    head = "services:\n  a.b:\n    groups:\n      g:\n        templates:\n"
    spec = parse_platform_spec(head + template + "            residency: cost\n", "p.yaml")
    assert spec.services["a.b"].groups["g"].templates["t"].residency == "cost"
    default = parse_platform_spec(head + template, "p.yaml")
    assert default.services["a.b"].groups["g"].templates["t"].residency == "lru"
    with pytest.raises(ConfigError) as refused:
        parse_platform_spec(head + template + "            residency: random\n", "p.yaml")
    line = refused.value.line()
    assert "p.yaml:" in line and "residency" in line and "rule=platform/spec" in line
