"""The platform spec's shape: a section of the wrong kind is its error line, and a key
left empty reads as left out."""

from __future__ import annotations

import pytest

from modelyard.control.spec import parse_platform_spec
from modelyard.errors import ConfigError


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
