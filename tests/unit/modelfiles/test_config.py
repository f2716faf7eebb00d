"""The model config as Triton's config endpoint prints it, and the fields not served."""

from __future__ import annotations

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import ConfigError
from modelyard.modelfiles.config import config_to_json, parse_json_config, parse_model_config


def test_the_config_json_shows_fields_at_their_default_value() -> None:
    config = text_format.Parse(
        'name: "m" platform: "onnxruntime_onnx" '
        'input [{ name: "x" data_type: TYPE_FP32 dims: [4] }]',
        mc.ModelConfig(),
    )
    doc = config_to_json(config)
    assert doc["max_batch_size"] == 0  # image_client reads it; left out, it raised
    assert doc["input"][0]["format"] == "FORMAT_NONE"
    assert doc["input"][0]["is_shape_tensor"] is False
    assert doc["output"] == []
    assert doc["name"] == "m" and doc["input"][0]["dims"] == [4]  # a number, as Triton prints it


def test_the_config_json_writes_each_message_s_fields_in_the_proto_s_order() -> None:
    """As Triton (L0_config_json): a queue policy's ``timeout_action`` at its default
    (REJECT) comes first, where protobuf's Python writer puts defaults last."""
    config = text_format.Parse(
        'name: "m" backend: "identity" max_batch_size: 1 dynamic_batching { '
        "priority_levels: 2 priority_queue_policy { key: 2 value { "
        "default_timeout_microseconds: 5 allow_timeout_override: true max_queue_size: 10 } } }",
        mc.ModelConfig(),
    )
    doc = config_to_json(config)
    assert list(doc["dynamic_batching"]["priority_queue_policy"]["2"]) == [
        "timeout_action", "default_timeout_microseconds", "allow_timeout_override",
        "max_queue_size",
    ]  # fmt: skip
    assert list(doc)[:5] == ["name", "platform", "backend", "runtime", "max_batch_size"]


@pytest.mark.parametrize(
    ("field", "text"),
    [
        (
            "response_cache",
            "model_transaction_policy { decoupled: true }\nresponse_cache {\n  enable: true\n}",
        ),
        ("response_cache", "sequence_batching { }\nresponse_cache {\n  enable: true\n}"),
        ("model_operations", 'model_operations { op_library_filename: "ops.so" }'),
        ("passive", "instance_group [{\n  count: 1\n  passive: true\n}]"),
    ],
)
def test_a_field_that_is_not_served_is_refused_with_its_line(field: str, text: str) -> None:
    config_text = 'backend: "python"\nmax_batch_size: 4\n' + text + "\n"
    with pytest.raises(ConfigError) as refused:
        parse_model_config(config_text, "m/config.pbtxt")
    line = refused.value.line()
    assert f"{field} is not served" in line and "rule=config/unserved-field" in line
    lines = config_text.splitlines()
    named = next((n for n, c in enumerate(lines, 1) if c.lstrip().startswith(field)), None)
    if named is not None:  # the field opens a line of its own: the line is named
        assert f"m/config.pbtxt:{named}: {field}" in line
    override = config_to_json(parse_model_config('backend: "python"\n'))
    with pytest.raises(ConfigError):  # a load request's override is refused alike
        parse_json_config({**override, "model_operations": {"op_library_filename": ["ops.so"]}})


def test_the_off_values_of_those_fields_load() -> None:
    parse_model_config(
        'backend: "python"\nmodel_transaction_policy { decoupled: false }\n'
        "response_cache { enable: false }\n"
    )
