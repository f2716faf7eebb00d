"""One contract for every engine: what execute() returns equals the library itself.

Each case trains or builds a small model in tmp_path from scikit-learn's bundled
datasets (nothing is downloaded), loads it through ``engine_class(backend)()``
and compares execute() with the library called directly, at batch 1 and batch N.
"""

from __future__ import annotations

import importlib
import importlib.util
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import Engine, LoadContext, engine_class
from modelyard.errors import Code, ConfigError, EngineError, MissingExtraError
from modelyard.types import numpy_dtype

Arrays = dict[str, np.ndarray]
N_ROWS = 17


@dataclass
class Case:
    backend: str
    artifact: Path
    config: mc.ModelConfig
    inputs: Arrays  # N_ROWS rows per input
    reference: Callable[[Arrays], Arrays]  # the library called directly
    trusted: bool = False
    exact: set[str] = field(default_factory=set)  # outputs compared bit for bit


def _config(
    name: str,
    backend: str,
    max_batch_size: int = 64,
    inputs: list[tuple[str, int, list[int]]] = (),  # type: ignore[assignment]
    outputs: list[tuple[str, int, list[int]]] = (),  # type: ignore[assignment]
) -> mc.ModelConfig:
    return mc.ModelConfig(
        name=name,
        backend=backend,
        max_batch_size=max_batch_size,
        input=[mc.ModelInput(name=n, data_type=t, dims=d) for n, t, d in inputs],
        output=[mc.ModelOutput(name=n, data_type=t, dims=d) for n, t, d in outputs],
    )


def _version_dir(tmp_path: Path, name: str) -> Path:
    version_dir = tmp_path / name / "1"
    version_dir.mkdir(parents=True)
    return version_dir


def _rows(loader: Callable[..., tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    x, y = loader(return_X_y=True)
    return x.astype(np.float32), y


def _load(case: Case, trusted: bool | None = None) -> tuple[Engine, object]:
    engine = engine_class(case.backend)()
    ctx = LoadContext(
        artifact=case.artifact,
        version_dir=case.artifact.parent,
        config=case.config,
        trusted=case.trusted if trusted is None else trusted,
    )
    return engine, engine.load(ctx)


# --- cases -------------------------------------------------------------------


def _onnx(tmp_path: Path) -> Case:
    import onnxruntime as ort
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    x, y = _rows(load_iris)
    clf = LogisticRegression(max_iter=1000).fit(x, y)
    onx = convert_sklearn(
        clf,
        initial_types=[("input", FloatTensorType([None, x.shape[1]]))],
        options={id(clf): {"zipmap": False}},
    )
    artifact = _version_dir(tmp_path, "iris_onnx") / "model.onnx"
    artifact.write_bytes(onx.SerializeToString())
    session = ort.InferenceSession(str(artifact), providers=["CPUExecutionProvider"])

    def reference(inputs: Arrays) -> Arrays:
        label, probabilities = session.run(["label", "probabilities"], inputs)
        return {"label": label, "probabilities": probabilities}

    return Case(
        "onnxruntime",
        artifact,
        _config("iris_onnx", "onnxruntime"),
        {"input": x[:N_ROWS]},
        reference,
        exact={"label"},
    )


def _pytorch(tmp_path: Path) -> Case:
    import torch
    from sklearn.datasets import load_digits

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(64, 10)

        def forward(
            self, x: torch.Tensor, scale: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.linear(x) * scale
            return logits, torch.softmax(logits, dim=-1)

    net = Net().eval()
    artifact = _version_dir(tmp_path, "digits_pt") / "model.pt"
    torch.jit.save(torch.jit.script(net), str(artifact))
    x, _ = _rows(load_digits)
    scale = np.linspace(0.5, 2.0, N_ROWS, dtype=np.float32).reshape(-1, 1)

    def reference(inputs: Arrays) -> Arrays:
        x, scale = (torch.from_numpy(inputs[n].copy()) for n in ("INPUT__0", "INPUT__1"))
        with torch.no_grad():
            logits, probs = net(x, scale)
        return {"OUTPUT__0": logits.numpy(), "OUTPUT__1": probs.numpy()}

    config = _config(
        "digits_pt",
        "pytorch",
        inputs=[("INPUT__0", mc.TYPE_FP32, [64]), ("INPUT__1", mc.TYPE_FP32, [1])],
        outputs=[("OUTPUT__0", mc.TYPE_FP32, [10]), ("OUTPUT__1", mc.TYPE_FP32, [10])],
    )
    # a read-only input, as decoded from the wire
    first = x[:N_ROWS].copy()
    first.flags.writeable = False
    return Case("pytorch", artifact, config, {"INPUT__0": first, "INPUT__1": scale}, reference)


def _sklearn_reference(model: object, input_name: str) -> Callable[[Arrays], Arrays]:
    def reference(inputs: Arrays) -> Arrays:
        x = inputs[input_name]
        if not hasattr(model, "predict_proba"):
            return {"prediction": model.predict(x).astype(np.float32).reshape(-1, 1)}  # type: ignore[attr-defined]
        label = model.predict(x).reshape(-1, 1)  # type: ignore[attr-defined]
        if label.dtype.kind == "U":
            label = np.array([[s.encode()] for s in label[:, 0]], dtype=object)
        probabilities = model.predict_proba(x).astype(np.float32)  # type: ignore[attr-defined]
        return {"label": label, "probabilities": probabilities}

    return reference


def _sklearn_skops(tmp_path: Path) -> Case:
    import skops.io as sio
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = load_iris()
    x = data.data.astype(np.float32)
    y = data.target_names[data.target]  # string classes -> BYTES labels
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x, y)
    artifact = _version_dir(tmp_path, "iris_skops") / "model.skops"
    sio.dump(model, artifact)
    return Case(
        "sklearn",
        artifact,
        _config("iris_skops", "sklearn"),
        {"input": x[::9][:N_ROWS]},
        _sklearn_reference(model, "input"),
        exact={"label"},
    )


def _sklearn_joblib_trusted(tmp_path: Path) -> Case:
    import joblib
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    x, y = _rows(load_diabetes)
    model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(x, y)
    artifact = _version_dir(tmp_path, "diabetes_joblib") / "model.joblib"
    joblib.dump(model, artifact)
    config = _config(
        "diabetes_joblib",
        "sklearn",
        inputs=[("features", mc.TYPE_FP32, [x.shape[1]])],
        outputs=[("prediction", mc.TYPE_FP32, [1])],
    )
    reference = _sklearn_reference(model, "features")
    return Case("sklearn", artifact, config, {"features": x[:N_ROWS]}, reference, trusted=True)


def _xgboost(filename: str, loader_name: str, objective: str) -> Callable[[Path], Case]:
    def build(tmp_path: Path) -> Case:
        import sklearn.datasets
        import xgboost as xgb

        x, y = _rows(getattr(sklearn.datasets, loader_name))
        if objective.startswith("reg:"):
            model = xgb.XGBRegressor(n_estimators=5, max_depth=3, objective=objective, n_jobs=1)
        else:
            model = xgb.XGBClassifier(n_estimators=5, max_depth=3, objective=objective, n_jobs=1)
        model.fit(x, y)
        name = f"xgb_{loader_name}_{filename.replace('.', '_')}"
        artifact = _version_dir(tmp_path, name) / filename
        model.save_model(artifact)
        exact = set() if objective.startswith("reg:") else {"label"}
        reference = _sklearn_reference(model, "input")
        return Case(
            "xgboost",
            artifact,
            _config(name, "xgboost"),
            {"input": x[:N_ROWS]},
            reference,
            exact=exact,
        )

    return build


def _lightgbm(loader_name: str) -> Callable[[Path], Case]:
    def build(tmp_path: Path) -> Case:
        import lightgbm as lgb
        import sklearn.datasets

        x, y = _rows(getattr(sklearn.datasets, loader_name))
        params = {"n_estimators": 5, "num_leaves": 7, "verbose": -1, "n_jobs": 1}
        if loader_name == "load_diabetes":
            model = lgb.LGBMRegressor(**params).fit(x, y)
        else:
            model = lgb.LGBMClassifier(**params).fit(x, y)
        name = f"lgb_{loader_name}"
        artifact = _version_dir(tmp_path, name) / "model.txt"
        model.booster_.save_model(artifact)
        exact = set() if loader_name == "load_diabetes" else {"label"}
        reference = _sklearn_reference(model, "input")
        return Case(
            "lightgbm",
            artifact,
            _config(name, "lightgbm"),
            {"input": x[:N_ROWS]},
            reference,
            exact=exact,
        )

    return build


PYTHON_MODEL = """
import json

import numpy as np


class Model:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        assert config["name"] == args["model_name"] == "py_model", args
        assert args["model_version"] == "1" and args["instance_index"] == "0", args
        assert args["model_repository"].endswith("py_model"), args
        self.scale = np.float32(2.0)

    def execute(self, inputs):
        x = inputs["INPUT0"]
        return {"doubled": x * self.scale, "total": x.sum(axis=1, keepdims=True)}

    def finalize(self):
        self.scale = None
"""


def _python(tmp_path: Path, source: str = PYTHON_MODEL, max_batch_size: int = 8) -> Case:
    artifact = _version_dir(tmp_path, "py_model") / "model.py"
    artifact.write_text(textwrap.dedent(source))
    config = _config(
        "py_model",
        "python",
        max_batch_size=max_batch_size,
        inputs=[("INPUT0", mc.TYPE_FP32, [4])],
        outputs=[("doubled", mc.TYPE_FP32, [4]), ("total", mc.TYPE_FP32, [1])],
    )
    x = np.arange(N_ROWS * 4, dtype=np.float32).reshape(N_ROWS, 4)

    def reference(inputs: Arrays) -> Arrays:
        x = inputs["INPUT0"]
        return {"doubled": x * 2, "total": x.sum(axis=1, keepdims=True)}

    return Case("python", artifact, config, {"INPUT0": x}, reference)


_TORCHSCRIPT_DEPRECATED = pytest.mark.filterwarnings(
    # torch 2.13 deprecates torch.jit.*; TorchScript is still Triton's pytorch_libtorch format
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning"
)

CASES = [
    pytest.param(_onnx, id="onnxruntime"),
    pytest.param(_pytorch, id="pytorch", marks=_TORCHSCRIPT_DEPRECATED),
    pytest.param(_sklearn_skops, id="sklearn-skops"),
    pytest.param(_sklearn_joblib_trusted, id="sklearn-joblib-trusted"),
    pytest.param(_xgboost("model.json", "load_iris", "multi:softprob"), id="xgboost-json"),
    pytest.param(_xgboost("model.ubj", "load_breast_cancer", "binary:logistic"), id="xgboost-ubj"),
    pytest.param(_xgboost("model.json", "load_iris", "multi:softmax"), id="xgboost-softmax"),
    pytest.param(_xgboost("model.json", "load_diabetes", "reg:squarederror"), id="xgboost-reg"),
    pytest.param(_lightgbm("load_digits"), id="lightgbm"),
    pytest.param(_lightgbm("load_breast_cancer"), id="lightgbm-binary"),
    pytest.param(_lightgbm("load_diabetes"), id="lightgbm-reg"),
    pytest.param(_python, id="python"),
]


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return request.param(tmp_path)


def _assert_same(case: Case, got: Arrays, want: Arrays, rows: int) -> None:
    assert set(got) == set(want)
    for name, expected in want.items():
        assert got[name].shape[0] == rows, f"{name}: rows in != rows out"
        if name in case.exact:
            np.testing.assert_array_equal(got[name], expected, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_execute_equals_the_library(case: Case) -> None:
    engine, signature = _load(case)
    batch_n = case.inputs
    batch_1 = {name: array[:1] for name, array in batch_n.items()}
    outputs = list(case.reference(batch_1))
    if engine.describes_signature:
        assert signature is not None and signature.batched
        assert {o.name for o in signature.outputs} >= set(outputs)
        (only_input,) = batch_n.values()
        assert signature.inputs[0].dims == (-1, only_input.shape[1])
        datatypes = {o.name: o.datatype for o in signature.outputs}
    else:
        assert signature is None
        datatypes = {}
    for batch in (batch_1, batch_n):
        rows = len(next(iter(batch.values())))
        got = engine.execute(batch, outputs)
        _assert_same(case, got, case.reference(batch), rows)
        for name, datatype in datatypes.items():
            assert got[name].dtype == numpy_dtype(datatype), name
    # only the requested outputs come back
    assert set(engine.execute(batch_n, outputs[-1:])) == {outputs[-1]}
    engine.unload()


# --- trust -------------------------------------------------------------------


@pytest.mark.parametrize("filename", ["model.joblib", "model.pkl"])
def test_pickle_refused_when_not_trusted(tmp_path: Path, filename: str) -> None:
    case = _sklearn_joblib_trusted(tmp_path)
    pickled = case.artifact.with_name(filename)
    case.artifact.rename(pickled)
    case.artifact = pickled
    with pytest.raises(EngineError) as info:
        _load(case, trusted=False)
    assert info.value.code == Code.FAILED_PRECONDITION
    assert info.value.rule == "engine/trusted-repository"
    assert "--trusted-repository" in info.value.line()
    assert "pickle" in info.value.detail


def _skops_case(tmp_path: Path, model: object) -> Case:
    import skops.io as sio
    from sklearn.datasets import load_iris

    x, y = _rows(load_iris)
    model.fit(x, y)  # type: ignore[attr-defined]
    artifact = _version_dir(tmp_path, "skops_model") / "model.skops"
    sio.dump(model, artifact)
    return Case(
        "sklearn",
        artifact,
        _config("skops_model", "sklearn"),
        {"input": x},
        _sklearn_reference(model, "input"),
    )


def test_skops_function_outside_the_trusted_classes_refused(tmp_path: Path) -> None:
    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    # numpy functions are not classes: a crafted file could aim one at the filesystem
    artifact = _version_dir(tmp_path, "skops_model") / "model.skops"
    sio.dump(FunctionTransformer(np.save), artifact)
    case = Case("sklearn", artifact, _config("skops_model", "sklearn"), {}, dict)
    with pytest.raises(EngineError) as info:
        _load(case)
    assert "numpy.save" in info.value.detail
    assert info.value.rule == "engine/trusted-repository"


def test_skops_tree_needs_a_trusted_repository(tmp_path: Path) -> None:
    from sklearn.ensemble import RandomForestClassifier

    case = _skops_case(tmp_path, RandomForestClassifier(n_estimators=3, random_state=0))
    with pytest.raises(EngineError) as info:
        _load(case)
    assert "sklearn.tree._tree.Tree" in info.value.detail
    engine, _ = _load(case, trusted=True)
    x = case.inputs["input"][:5]
    _assert_same(
        case,
        engine.execute({"input": x}, ["label", "probabilities"]),
        case.reference({"input": x}),
        5,
    )


@pytest.mark.parametrize(
    "build", [_sklearn_skops, _xgboost("model.json", "load_iris", "multi:softprob")]
)
def test_output_the_model_cannot_produce_refused_at_load(
    tmp_path: Path, build: Callable[[Path], Case]
) -> None:
    case = build(tmp_path)
    case.config.output.add(name="scores", data_type=mc.TYPE_FP32, dims=[3])
    with pytest.raises(EngineError) as info:
        _load(case)
    assert info.value.code == Code.INVALID_ARGUMENT
    assert info.value.rule == f"engine/{case.backend}"
    assert "scores" in info.value.detail


# --- registry ----------------------------------------------------------------


def test_unknown_backend() -> None:
    with pytest.raises(ConfigError) as info:
        engine_class("nope")
    assert info.value.rule == "config/backend"


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise ModuleNotFoundError("No module named 'xgboost'", name="xgboost")

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(MissingExtraError) as info:
        engine_class("xgboost")
    assert "pip install 'modelyard[xgboost]'" in info.value.line()


def test_other_missing_modules_are_not_blamed_on_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise ModuleNotFoundError("No module named 'somethingelse'", name="somethingelse")

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(ModuleNotFoundError):
        engine_class("lightgbm")


# --- python models -----------------------------------------------------------


def test_python_user_error_becomes_engine_error(tmp_path: Path) -> None:
    source = PYTHON_MODEL.replace(
        'x = inputs["INPUT0"]', 'raise ValueError("row 3 is not a flower")'
    )
    engine, _ = _load(_python(tmp_path, source))
    with pytest.raises(EngineError) as info:
        engine.execute({"INPUT0": np.zeros((2, 4), np.float32)}, ["doubled"])
    assert "row 3 is not a flower" in info.value.detail
    assert info.value.rule == "engine/python"
    assert info.value.where == "model.py of model 'py_model'"


def test_python_initialize_error_becomes_engine_error(tmp_path: Path) -> None:
    source = PYTHON_MODEL.replace(
        "self.scale = np.float32(2.0)", 'raise RuntimeError("no weights")'
    )
    with pytest.raises(EngineError) as info:
        _load(_python(tmp_path, source))
    assert "no weights" in info.value.detail


def test_python_wrong_row_count_caught(tmp_path: Path) -> None:
    source = PYTHON_MODEL.replace('"total": x.sum(axis=1, keepdims=True)', '"total": x[:1]')
    engine, _ = _load(_python(tmp_path, source))
    with pytest.raises(EngineError) as info:
        engine.execute({"INPUT0": np.zeros((3, 4), np.float32)}, ["total"])
    assert "1 rows" in info.value.detail and "3 rows" in info.value.detail


def test_python_missing_output_is_left_out(tmp_path: Path) -> None:
    """As Triton's python backend: an output the model does not return is not answered,
    and is no error (the response leaves it out)."""
    source = PYTHON_MODEL.replace('"total": x.sum(axis=1, keepdims=True)', '"sum": x')
    engine, _ = _load(_python(tmp_path, source))
    got = engine.execute({"INPUT0": np.ones((3, 4), np.float32)}, ["doubled", "total"])
    assert list(got) == ["doubled"]
    np.testing.assert_array_equal(got["doubled"], np.full((3, 4), 2.0, np.float32))
    engine.unload()


def test_python_unbatched_model_may_change_rows(tmp_path: Path) -> None:
    source = PYTHON_MODEL.replace(
        '"total": x.sum(axis=1, keepdims=True)', '"total": x.sum(keepdims=True)'
    )
    engine, _ = _load(_python(tmp_path, source, max_batch_size=0))
    got = engine.execute({"INPUT0": np.ones((3, 4), np.float32)}, ["total"])
    np.testing.assert_array_equal(got["total"], [[12.0]])
    engine.unload()


# --- TensorRT ----------------------------------------------------------------


def _has_tensorrt_gpu() -> bool:
    if importlib.util.find_spec("tensorrt") is None:
        return False
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_tensorrt_gpu(), reason="needs an NVIDIA GPU with TensorRT")
def test_tensorrt_relu_plan(tmp_path: Path) -> None:
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    x = network.add_input("x", trt.DataType.FLOAT, (-1, 4))
    relu = network.add_activation(x, trt.ActivationType.RELU)
    relu.get_output(0).name = "y"
    network.mark_output(relu.get_output(0))
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    profile.set_shape("x", (1, 4), (8, 4), (32, 4))
    config.add_optimization_profile(profile)
    artifact = _version_dir(tmp_path, "relu_plan") / "model.plan"
    artifact.write_bytes(bytes(builder.build_serialized_network(network, config)))
    case = Case(
        "tensorrt",
        artifact,
        _config("relu_plan", "tensorrt", max_batch_size=32),
        {"x": np.linspace(-1, 1, N_ROWS * 4, dtype=np.float32).reshape(N_ROWS, 4)},
        lambda inputs: {"y": np.maximum(inputs["x"], 0)},
    )
    engine, signature = _load(case)
    assert signature is not None and signature.batched
    assert [(s.name, s.datatype, s.dims) for s in signature.inputs] == [("x", "FP32", (-1, 4))]
    for rows in (1, N_ROWS):
        batch = {"x": case.inputs["x"][:rows]}
        _assert_same(case, engine.execute(batch, ["y"]), case.reference(batch), rows)
    engine.unload()


def test_onnx_provider_fallback_is_logged_not_silent(tmp_path: Path) -> None:
    import structlog
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as mc_

    from modelyard.engines.onnx import choose_providers

    config = text_format.Parse(
        'name: "m" optimization { execution_accelerators { gpu_execution_accelerator '
        '[{ name: "tensorrt" }] } }',
        mc_.ModelConfig(),
    )
    ctx = LoadContext(artifact=tmp_path / "model.onnx", version_dir=tmp_path, config=config)
    with structlog.testing.capture_logs() as logs:
        chosen = choose_providers(ctx)
    assert chosen == ["CPUExecutionProvider"]
    event = next(e for e in logs if e["event"] == "execution_provider_unavailable")
    assert event["asked"] == ["TensorrtExecutionProvider", "CPUExecutionProvider"]
    assert event["missing"] == ["TensorrtExecutionProvider"]
    assert event["runs"] == ["CPUExecutionProvider"]


@pytest.mark.filterwarnings(r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")
def test_torchscript_freeze_keeps_outputs(tmp_path: Path) -> None:
    import torch
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as mc_

    from modelyard.engines import engine_class

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
    torch.jit.script(net).save(str(tmp_path / "model.pt"))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    outputs = {}
    for freeze in ("false", "true"):
        config = text_format.Parse(
            'name: "m" max_batch_size: 8 input [{ name: "INPUT__0" data_type: TYPE_FP32 '
            'dims: [4] }] output [{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [2] }] '
            f'parameters {{ key: "torchscript_freeze" value {{ string_value: "{freeze}" }} }}',
            mc_.ModelConfig(),
        )
        engine = engine_class("pytorch")()
        engine.load(
            LoadContext(artifact=tmp_path / "model.pt", version_dir=tmp_path, config=config)
        )
        outputs[freeze] = engine.execute({"INPUT__0": x}, ["OUTPUT__0"])["OUTPUT__0"]
    np.testing.assert_allclose(outputs["true"], outputs["false"], rtol=1e-5, atol=1e-6)


def test_an_onnx_session_computes_on_its_caller_only_with_one_intra_op_thread(
    tmp_path: Path,
) -> None:
    case = _onnx(tmp_path)
    engine, _ = _load(case)
    assert engine.computes_on_caller  # the default: one thread, the caller's
    engine.unload()
    case.config.parameters["intra_op_thread_count"].string_value = "2"
    engine, _ = _load(case)
    assert not engine.computes_on_caller  # its pool computes too: the caller's CPU time is short
    batch = {name: array[:3] for name, array in case.inputs.items()}
    _assert_same(case, engine.execute(batch, list(case.reference(batch))), case.reference(batch), 3)
    engine.unload()
