"""A service file's attempts section: how callers bound each interface's attempts."""

from __future__ import annotations

import pytest

from modelyard.client.attempts import AttemptRule, rules_from_sections
from modelyard.errors import ConfigError
from modelyard.governance.service_config import parse_service_config

HEAD = 'service: com.example.search\ninterfaces:\n  rank: {models: ["ranker*"]}\n'


def test_attempts_by_interface_declared_ones_included() -> None:
    config = parse_service_config(
        HEAD + "attempts:\n  rank: {timeout_s: 0.2, hedge: true}\n  metadata: {timeout_s: off}\n"
    )
    assert rules_from_sections(config.attempts) == {
        "rank": AttemptRule(0.2, hedge=True),
        "metadata": AttemptRule(None),  # YAML's off (false): no deadline of its own
    }
    assert config.declared == {"rank": ("ranker*",)}


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ("  embed: {timeout_s: 1}", "unknown interface 'embed'"),
        ("  rank: {timeout_s: 0}", "timeout_s"),
        ("  rank: {timeout_s: 1, retries: 2}", "retries"),
    ],
)
def test_a_bad_attempts_section_is_refused_at_its_line(section: str, words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_service_config(HEAD + "attempts:\n" + section + "\n")
    assert words in str(refused.value) and "service.yaml:5" in str(refused.value)
