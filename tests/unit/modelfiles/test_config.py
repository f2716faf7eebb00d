"""The model config as Triton's config endpoint prints it."""

from __future__ import annotations

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.modelfiles.config import config_to_json


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
    assert doc["name"] == "m" and doc["input"][0]["dims"] == ["4"]
