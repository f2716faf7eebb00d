"""FP16 and INT8 variants: they load and serve, and the report's numbers are right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import LoadContext, engine_class
from modelyard.errors import ConfigError
from modelyard.examples.build import build_digits_onnx, build_mlp_onnx, example_inputs
from modelyard.optimize.quantize import latest_onnx, write_variant
from modelyard.optimize.report import accuracy_report

pytestmark = pytest.mark.filterwarnings(
    # onnxconverter-common warns for every weight below FP16's smallest normal number
    "ignore:the float32 number .* will be truncated to:UserWarning"
)


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    build_mlp_onnx(tmp_path, seed=0)
    return tmp_path / "mlp_onnx"


def _run(path: Path, feed: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feed)[0])


@pytest.mark.parametrize("target", ["fp16", "int8-dynamic", "int8-static"])
def test_variant_is_the_next_version_and_the_report_matches_an_independent_check(
    mlp: Path, target: str
) -> None:
    data = example_inputs("mlp_onnx", 200)
    original, converted = write_variant(mlp, target, example_inputs("mlp_onnx", 64))
    assert converted == mlp / "2" / "model.onnx"
    report = accuracy_report(original, converted, data, seconds=0.2)
    expected, got = _run(original, data), _run(converted, data)
    row = report["outputs"]["output"]
    assert row["max_abs_error"] == pytest.approx(float(np.abs(expected - got).max()), rel=1e-6)
    assert row["mean_abs_error"] == pytest.approx(float(np.abs(expected - got).mean()), rel=1e-5)
    agreement = float(np.mean(expected.argmax(1) == got.argmax(1)))
    assert row["top1_agreement"] == pytest.approx(agreement)
    assert row["top1_agreement"] > 0.9
    assert report["size_ratio"] < 0.6  # half (fp16) or a quarter (int8) of the weights
    assert report["rows_per_s"]["converted"] > 0


def test_a_variant_loads_and_serves_through_the_engine(tmp_path: Path) -> None:
    build_digits_onnx(tmp_path, seed=0)
    model_dir = tmp_path / "digits_onnx"
    _, converted = write_variant(model_dir, "int8-dynamic")
    config = text_format.Parse((model_dir / "config.pbtxt").read_text(), mc.ModelConfig())
    engine = engine_class("onnxruntime")()
    engine.load(LoadContext(artifact=converted, version_dir=converted.parent, config=config))
    inputs = example_inputs("digits_onnx", 50)
    outputs = engine.execute(inputs, ["label", "probabilities"])
    assert outputs["probabilities"].shape == (50, 10)
    assert outputs["label"].shape[0] == 50


def test_the_source_is_the_newest_original_not_a_variant(mlp: Path) -> None:
    write_variant(mlp, "int8-dynamic")
    version, source = latest_onnx(mlp)
    assert (version, source) == (1, mlp / "1" / "model.onnx")


def test_static_quantisation_needs_calibration_rows(mlp: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        write_variant(mlp, "int8-static", None)
    assert "--calibration" in missing.value.line()
    assert not (mlp / "2").exists()  # a failed conversion leaves no version behind
