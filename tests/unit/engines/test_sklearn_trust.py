"""What a ``model.skops`` file may hold without ``--trusted-repository``.

The crafted file is a real skops zip whose schema.json gained a
``numpy.memmap`` node: constructing it opens the path it names with mode
``w+``, which truncates the file. The engine used to trust numpy whole.
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skops.io as sio
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import LoadContext, engine_class
from modelyard.errors import Code, EngineError


def _write(tmp_path: Path, data: bytes) -> Path:
    version_dir = tmp_path / "skops_model" / "1"
    version_dir.mkdir(parents=True, exist_ok=True)
    artifact = version_dir / "model.skops"
    artifact.write_bytes(data)
    return artifact


def _load(artifact: Path, trusted: bool = False) -> Any:
    engine = engine_class("sklearn")()
    config = mc.ModelConfig(name="skops_model", backend="sklearn", max_batch_size=64)
    ctx = LoadContext(
        artifact=artifact, version_dir=artifact.parent, config=config, trusted=trusted
    )
    engine.load(ctx)
    return engine


def _fitted(model: Any) -> Any:
    x, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(x.astype(np.float32), y)


def _json(value: object) -> dict[str, Any]:
    return {
        "__class__": type(value).__name__,
        "__module__": "builtins",
        "__loader__": "JsonNode",
        "content": json.dumps(value),
        "is_json": True,
        "__id__": id(value),
    }


def _with_memmap(skops_bytes: bytes, target: Path) -> bytes:
    """The same zip, its estimator given an attribute numpy.memmap(target, "uint8", "w+", 0, 4)."""
    source = zipfile.ZipFile(io.BytesIO(skops_bytes))
    schema = json.loads(source.read("schema.json"))
    args: list[object] = [str(target), "uint8", "w+", 0, 4]
    attributes = schema["content"]
    key_types = attributes["key_types"]["content"]
    key_types.append(dict(key_types[0]))  # one key type per attribute, in order
    attributes["content"]["scratch_"] = {
        "__class__": "memmap",
        "__module__": "numpy",
        "__loader__": "ConstructorFromReduceNode",
        "content": {
            "__class__": "tuple",
            "__module__": "builtins",
            "__loader__": "TupleNode",
            "content": [_json(a) for a in args],
            "__id__": 1,
        },
        "__id__": 2,
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as crafted:
        for name in source.namelist():
            data = json.dumps(schema) if name == "schema.json" else source.read(name)
            crafted.writestr(name, data)
    return out.getvalue()


def test_memmap_node_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_bytes(b"precious contents")
    model = _fitted(LogisticRegression(max_iter=1000))
    crafted = _with_memmap(sio.dumps(model), target)
    assert "numpy.memmap" in sio.get_untrusted_types(data=crafted)  # the file is well formed
    artifact = _write(tmp_path, crafted)

    with pytest.raises(EngineError) as info:
        _load(artifact)

    assert info.value.code == Code.FAILED_PRECONDITION
    assert info.value.rule == "engine/trusted-repository"
    assert "numpy.memmap" in info.value.detail
    assert target.read_bytes() == b"precious contents"


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(LogisticRegression(max_iter=1000), id="iris_sklearn"),
        pytest.param(
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), id="pipeline"
        ),
        pytest.param(MLPClassifier(max_iter=30, random_state=0), id="mlp-adam"),
        pytest.param(MLPClassifier(solver="sgd", max_iter=30, random_state=0), id="mlp-sgd"),
        pytest.param(MLPRegressor(max_iter=30, random_state=0), id="mlp-regressor"),
    ],
)
def test_allowlisted_estimators_load_untrusted(tmp_path: Path, model: Any) -> None:
    fitted = _fitted(model)
    artifact = _write(tmp_path, sio.dumps(fitted))
    engine = _load(artifact)
    x = load_iris().data[:5].astype(np.float32)
    outputs = ["label"] if hasattr(fitted, "predict_proba") else ["prediction"]
    assert len(engine.execute({"input": x}, outputs)[outputs[0]]) == 5
