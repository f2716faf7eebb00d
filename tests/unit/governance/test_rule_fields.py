"""Breaker and concurrency rules in a service file: unknown fields and repeated ids."""

from __future__ import annotations

import pytest

from modelyard.clock import FakeClock
from modelyard.errors import ConfigError
from modelyard.governance.breaker import BreakerGuard, BreakerRule
from modelyard.governance.concurrency import AdaptiveConcurrencyGuard, ConcurrencyRule
from modelyard.governance.runtime import build_guards
from modelyard.governance.service_config import parse_service_config


@pytest.mark.parametrize(
    ("section", "rule", "line"),
    [
        ("breakers", "{interface: infer, kind: error_count, threshold: 3, windw_s: 10}", 4),
        ("concurrency", "{model: ranker, algorithm: aimd, latency_target_ms: 50, maxx: 4}", 4),
    ],
)
def test_an_unknown_field_names_its_file_line_and_the_known_fields(
    section: str, rule: str, line: int
) -> None:
    text = f"service: com.example.test.rules\n{section}:\n  r1:\n    {rule}\n"
    config = parse_service_config(text, "service.yaml")
    with pytest.raises(ConfigError) as refused:
        build_guards(config, FakeClock(), lambda: 1)
    message = refused.value.line()
    assert f"invalid service.yaml:{line} at {section}.r1." in message
    assert "rule field '" in message and "(known: " in message


def test_an_id_inside_a_rule_is_refused_its_key_is_its_id() -> None:
    text = "service: com.example.test.rules\nbreakers:\n  r1:\n    {id: r2, interface: infer}\n"
    with pytest.raises(ConfigError) as refused:
        build_guards(parse_service_config(text, "service.yaml"), FakeClock(), lambda: 1)
    assert "service.yaml:4 at breakers.r1.id: a rule's id is its key ('r1')" in refused.value.line()


def test_repeated_rule_ids_are_refused_with_the_section_to_change() -> None:
    breaker = BreakerRule(id="a", interface="infer", kind="error_count", threshold=3)
    with pytest.raises(ConfigError) as breakers:
        BreakerGuard([breaker, breaker], FakeClock(), "service.yaml")
    assert "breaker rule ids must be unique: a repeated" in breakers.value.line()
    assert "rule=breaker/a; change: breakers in service.yaml" in breakers.value.line()
    limit = ConcurrencyRule(id="c", model="m", latency_target_ms=50)
    with pytest.raises(ConfigError) as limits:
        AdaptiveConcurrencyGuard([limit, limit], FakeClock(), "service.yaml")
    assert "rule=concurrency/c; change: concurrency in service.yaml" in limits.value.line()
