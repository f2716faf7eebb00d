"""A load request's config override in the JSON that Triton's parser (protobuf's, legacy
syntax on) takes: unquoted keys, single quotes and trailing commas besides strict JSON."""

from __future__ import annotations

import pytest

from modelyard.errors import ModelyardError
from modelyard.modelfiles import load_request
from modelyard.modelfiles.load_request import load_override

LEGACY = """{ "backend": "python", max_batch_size: 1,
  'input': [{ "name": "INPUT", "data_type": "TYPE_INT32", "dims": [ 1, ] }],
  "sequence_batching" : { "iterative_sequence" : true,
    direct: { "max_queue_delay_microseconds" : 10 }},
}"""


def test_an_override_in_protobufs_legacy_syntax_is_read() -> None:
    config = load_override("m", {"config": LEGACY})
    assert config is not None
    assert config.max_batch_size == 1
    assert list(config.input[0].dims) == [1]
    assert config.sequence_batching.iterative_sequence
    assert config.sequence_batching.direct.max_queue_delay_microseconds == 10


@pytest.mark.parametrize(
    "text", ["{ backend: }", "{ 'a': 1 } trailing", "[" * 100 + "]" * 100, "{ a b: 1 }"]
)
def test_what_neither_syntax_takes_is_refused_with_the_strict_parsers_words(text: str) -> None:
    with pytest.raises(ModelyardError) as refused:
        load_override("m", {"config": text})
    line = refused.value.line()
    assert line.startswith("failed to load 'm', Invalid config override: ")
    assert "rule=protocol/load-config" in line


def test_a_large_override_is_read_as_strict_json_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_request, "MAX_LEGACY_CONFIG_CHARS", 32)
    assert load_override("m", {"config": '{"max_batch_size": 1, "backend": "python"}'})
    with pytest.raises(ModelyardError):
        load_override("m", {"config": "{max_batch_size: 1, backend: 'python'}"})
