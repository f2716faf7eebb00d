"""YAML with file:line for every key: an empty value is None, not a crash."""

from __future__ import annotations

from modelyard.yaml_lines import load_located


def test_values_read_as_safe_load_reads_them_and_an_empty_one_is_none() -> None:
    doc = load_located("a:\n  b: 1\n  c:\n  d: [1, ~, x, true]\n", "f.yaml")
    assert doc.data == {"a": {"b": 1, "c": None, "d": [1, None, "x", True]}}
    assert doc.where(("a", "c")) == "f.yaml:3"
    assert load_located("top:\n", "f.yaml").data == {"top": None}
