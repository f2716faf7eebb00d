"""The example repository: layout, configs, and each artifact run by its own library."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from modelyard.examples.build import (
    DIGIT_LABELS,
    MODEL_NAMES,
    build_example_repository,
    example_inputs,
    example_targets,
)
from modelyard.modelfiles.config import compile_spec, read_model_config

pytestmark = pytest.mark.slow  # the build trains eight models (~10 s on 2 cores)

ROWS = 300

EXPECTED_FILES = {
    "digits_onnx": {"1": {"model.onnx"}, "2": {"model.onnx"}},
    "mlp_onnx": {"1": {"model.onnx"}},
    "tiny_onnx": {"1": {"model.onnx"}},
    "breast_cancer_torch": {"1": {"model.pt"}},
    "iris_sklearn": {"1": {"model.skops"}},
    "breast_cancer_xgboost": {"1": {"model.json"}},
    "wine_lightgbm": {"1": {"model.txt"}},
    "digits_python": {"1": {"model.py", "centroids.npy"}},
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    target = tmp_path_factory.mktemp("example_repository")
    return target, build_example_repository(target, seed=0, text_models=False)


@pytest.fixture(scope="module")
def repo(built: tuple[Path, list[str]]) -> Path:
    return built[0]


def _accuracy(predicted: np.ndarray, model_name: str) -> float:
    targets = example_targets(model_name, ROWS)
    return float((np.asarray(predicted).reshape(-1) == targets).mean())


def test_build_returns_every_model(built: tuple[Path, list[str]]) -> None:
    assert built[1] == list(MODEL_NAMES)
    assert sorted(EXPECTED_FILES) == sorted(MODEL_NAMES)


def test_layout_holds_only_models(repo: Path) -> None:
    assert {p.name for p in repo.iterdir()} == set(EXPECTED_FILES)
    for model, versions in EXPECTED_FILES.items():
        model_dir = repo / model
        assert {p.name for p in model_dir.iterdir() if p.is_dir()} == set(versions)
        for version, files in versions.items():
            assert {p.name for p in (model_dir / version).iterdir()} == files
        assert (model_dir / "config.pbtxt").is_file() == (model != "tiny_onnx")
    labels = (repo / "digits_onnx" / "labels.txt").read_text(encoding="utf-8").splitlines()
    assert labels == list(DIGIT_LABELS)


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_config_parses(repo: Path, model: str) -> None:
    config = read_model_config(repo / model)
    assert config.name == model
    if model == "tiny_onnx":
        assert config.max_batch_size == 0 and not config.input and not config.output
        return
    assert config.max_batch_size in (64, 128)
    assert config.platform or config.backend
    if config.input and config.output:
        spec = compile_spec(config, model)
        assert set(spec.inputs) == set(example_inputs(model, 1))


def test_digits_onnx_config(repo: Path) -> None:
    config = read_model_config(repo / "digits_onnx")
    assert config.platform == "onnxruntime_onnx"
    assert config.version_policy.WhichOneof("policy_choice") == "all"
    assert config.HasField("dynamic_batching")
    outputs = {o.name: o for o in config.output}
    assert list(outputs["label"].dims) == [1]
    assert list(outputs["probabilities"].dims) == [10]
    assert outputs["probabilities"].label_filename == "labels.txt"


@pytest.mark.parametrize("version", ["1", "2"])
def test_digits_onnx_runs(repo: Path, version: str) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(
        str(repo / "digits_onnx" / version / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    assert [o.name for o in session.get_outputs()] == ["label", "probabilities"]
    assert [o.shape[1:] for o in session.get_outputs()] == [[1], [10]]
    label, probabilities = session.run(None, example_inputs("digits_onnx", ROWS))
    assert label.shape == (ROWS, 1) and label.dtype == np.int64
    assert probabilities.shape == (ROWS, 10) and probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-4)
    np.testing.assert_array_equal(label[:, 0], probabilities.argmax(axis=1))
    assert _accuracy(label, "digits_onnx") > 0.8


def test_digits_onnx_versions_differ(repo: Path) -> None:
    one = (repo / "digits_onnx" / "1" / "model.onnx").read_bytes()
    two = (repo / "digits_onnx" / "2" / "model.onnx").read_bytes()
    assert one != two


def test_mlp_onnx_runs(repo: Path) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(
        str(repo / "mlp_onnx" / "1" / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    assert (inp.name, inp.shape[1:], out.name, out.shape[1:]) == ("input", [256], "output", [10])
    (output,) = session.run(None, example_inputs("mlp_onnx", 128))
    assert output.shape == (128, 10) and output.dtype == np.float32
    assert np.isfinite(output).all() and output.std() > 0


def test_tiny_onnx_runs(repo: Path) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(
        str(repo / "tiny_onnx" / "1" / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    assert inp.name == "input" and inp.shape[1:] == [4] and not isinstance(inp.shape[0], int)
    assert out.name == "output" and out.shape[1:] == [3]
    (logits,) = session.run(None, example_inputs("tiny_onnx", ROWS))
    assert logits.shape == (ROWS, 3) and logits.dtype == np.float32
    assert _accuracy(logits.argmax(axis=1), "tiny_onnx") > 0.8


@pytest.mark.filterwarnings(
    # torch 2.13 deprecates torch.jit; TorchScript is still the format Triton's backend loads
    "ignore:`torch.jit.load` is deprecated:DeprecationWarning"
)
def test_breast_cancer_torch_runs(repo: Path) -> None:
    import torch

    module = torch.jit.load(str(repo / "breast_cancer_torch" / "1" / "model.pt"))
    (x,) = example_inputs("breast_cancer_torch", ROWS).values()
    with torch.no_grad():
        logits = module(torch.from_numpy(x)).numpy()
    assert logits.shape == (ROWS, 2) and logits.dtype == np.float32
    assert _accuracy(logits.argmax(axis=1), "breast_cancer_torch") > 0.8


def test_iris_sklearn_runs(repo: Path) -> None:
    import skops.io

    path = repo / "iris_sklearn" / "1" / "model.skops"
    assert skops.io.get_untrusted_types(file=path) == []
    model = skops.io.load(path)
    x = example_inputs("iris_sklearn", ROWS)["input"]
    assert model.n_features_in_ == 4
    assert model.predict_proba(x).shape == (ROWS, 3)
    assert _accuracy(model.predict(x), "iris_sklearn") > 0.8


def test_breast_cancer_xgboost_runs(repo: Path) -> None:
    import xgboost

    booster = xgboost.Booster()
    booster.load_model(str(repo / "breast_cancer_xgboost" / "1" / "model.json"))
    assert booster.num_features() == 30
    x = example_inputs("breast_cancer_xgboost", ROWS)["input"]
    probability = booster.predict(xgboost.DMatrix(x))
    assert probability.shape == (ROWS,)
    assert _accuracy(probability > 0.5, "breast_cancer_xgboost") > 0.8


def test_wine_lightgbm_runs(repo: Path) -> None:
    import lightgbm

    booster = lightgbm.Booster(model_file=str(repo / "wine_lightgbm" / "1" / "model.txt"))
    assert booster.num_feature() == 13
    probabilities = booster.predict(example_inputs("wine_lightgbm", ROWS)["input"])
    assert probabilities.shape == (ROWS, 3)
    assert _accuracy(probabilities.argmax(axis=1), "wine_lightgbm") > 0.8


def test_digits_python_runs(repo: Path) -> None:
    model_dir = repo / "digits_python"
    spec = importlib.util.spec_from_file_location(
        "example_digits_python", model_dir / "1" / "model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model()
    model.initialize({"model_repository": str(model_dir), "model_version": "1"})
    outputs = model.execute(example_inputs("digits_python", ROWS))
    model.finalize()
    assert set(outputs) == {"label", "distances"}
    assert outputs["label"].shape == (ROWS, 1) and outputs["label"].dtype == np.int64
    assert outputs["distances"].shape == (ROWS, 10) and outputs["distances"].dtype == np.float32
    assert _accuracy(outputs["label"], "digits_python") > 0.8


@pytest.mark.parametrize("model", MODEL_NAMES)
def test_example_inputs_shapes(model: str) -> None:
    (x,) = example_inputs(model, 1000).values()
    assert x.dtype == np.float32 and x.shape[0] == 1000 and x.ndim == 2
    np.testing.assert_array_equal(x, next(iter(example_inputs(model, 1000).values())))


def test_example_inputs_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown example model"):
        example_inputs("nope", 1)
    with pytest.raises(ValueError, match="rows"):
        example_inputs("iris_sklearn", 0)
    with pytest.raises(ValueError, match="no targets"):
        example_targets("mlp_onnx", 1)
