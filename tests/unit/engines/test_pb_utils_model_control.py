"""pb_utils.load_model, unload_model and is_model_ready from a model in its stub's process:
from initialize (the parent answers while it waits for the load) and from execute (for
the batch's principals), decoupled or not; the server's refusal as python_backend words
it; the arguments Triton's binding refuses, refused before anything crosses."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import pb_utils
from modelyard.engines.base import BatchedRequest, LoadContext, ModelParameters, batch_requests
from modelyard.engines.python import PythonEngine
from modelyard.errors import Code, EngineError, ModelServerError

MODEL = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.seen = [pb_utils.is_model_ready("other")]
        pb_utils.load_model("other", config='{"backend": "python"}',
                            files={"file:1/model.py": b"print(1)"})
        self.seen.append(pb_utils.is_model_ready(model_name="other", model_version="1"))
        try:
            pb_utils.load_model("refused")
        except pb_utils.TritonModelException as error:
            self.seen.append(str(error))

    def execute(self, requests):
        pb_utils.unload_model("other", unload_dependents=True)
        self.seen.append(pb_utils.is_model_ready("other"))
        out = np.array([json.dumps(self.seen).encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", out)]) for _ in requests]
"""

CONFIG = """
name: "loader"
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "Y" data_type: TYPE_STRING dims: [ 1 ] }]
"""


class _Control:
    """The server's model control as a stub's parent calls it: records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], tuple[str, ...], str]] = []
        self.loaded: set[str] = set()

    def __call__(
        self, kind: str, arguments: dict[str, Any], principals: tuple[str, ...], caller: str
    ) -> Any:
        self.calls.append((kind, arguments, principals, caller))
        name = arguments["name"]
        if name == "refused":
            raise ModelServerError(
                "failed to load 'refused', no version is available",
                code=Code.INVALID_ARGUMENT,
                rule="model-server/load",
            )
        if kind == "load":
            self.loaded.add(name)
        elif kind == "unload":
            self.loaded.discard(name)
        return name in self.loaded if kind == "ready" else None


def _engine(tmp_path: Path, control: Any, decoupled: bool = False) -> PythonEngine:
    version_dir = tmp_path / "loader" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(textwrap.dedent(MODEL))
    policy = "model_transaction_policy { decoupled: true }" if decoupled else ""
    config = text_format.Parse(CONFIG + policy, mc.ModelConfig())
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config, control=control))
    return engine


def test_a_model_loads_checks_and_unloads_other_models_from_initialize_and_execute(
    tmp_path: Path,
) -> None:
    control = _Control()
    engine = _engine(tmp_path, control)
    try:
        batch = [BatchedRequest(1, ModelParameters({}, ("alice",)))]
        with batch_requests(batch):
            result = engine.execute({"X": np.array([1.0], dtype=np.float32)}, ["Y"])
    finally:
        engine.unload()
    seen = __import__("json").loads(result["Y"][0])
    assert seen[:2] == [False, True]
    assert seen[2] == (
        "Failed to load model: Failed to process the request for model 'loader_0_0', message: "
        "failed to load 'refused', no version is available; rule=model-server/load"
    )
    assert seen[3] is False  # unloaded from execute
    kinds = [(kind, principals, caller) for kind, _, principals, caller in control.calls]
    assert kinds == [
        ("ready", (), "loader"), ("load", (), "loader"), ("ready", (), "loader"),
        ("load", (), "loader"),
        ("unload", ("alice",), "loader"), ("ready", ("alice",), "loader"),  # the batch's
    ]  # fmt: skip
    load = control.calls[1][1]
    assert load == {"name": "other", "config": '{"backend": "python"}',
                    "files": {"file:1/model.py": b"print(1)"}}  # fmt: skip
    assert control.calls[2][1] == {"name": "other", "version": "1"}
    assert control.calls[4][1] == {"name": "other", "unload_dependents": True}


def test_a_decoupled_model_may_load_others_from_initialize(tmp_path: Path) -> None:
    control = _Control()
    engine = _engine(tmp_path, control, decoupled=True)  # no reader thread during its load
    engine.unload()
    assert [call[0] for call in control.calls] == ["ready", "load", "ready", "load"]


def test_a_model_loaded_where_no_server_answers_fails_its_initialize(tmp_path: Path) -> None:
    with pytest.raises(EngineError) as failed:
        _engine(tmp_path, None)
    assert "Failed to check model readiness: the model runs where no server answers it" in str(
        failed.value
    )


def test_arguments_the_binding_refuses_are_refused_before_anything_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[Any] = []
    monkeypatch.setattr(pb_utils, "_process_control", lambda *call: asked.append(call))
    with pytest.raises(TypeError):
        pb_utils.load_model(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pb_utils.unload_model("m", unload_dependents="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pb_utils.is_model_ready("m", 1)  # type: ignore[arg-type]
    with pytest.raises(pb_utils.TritonModelException, match="files should be a dictionary"):
        pb_utils.load_model("m", "", [b"x"])  # type: ignore[arg-type]
    with pytest.raises(pb_utils.TritonModelException, match=r"\(bytes\), not str: str"):
        pb_utils.load_model("m", "", {"file:1/model.onnx": "text"})  # type: ignore[dict-item]
    assert asked == []
    monkeypatch.setattr(pb_utils, "MAX_MODEL_LOAD_BYTES", 8)
    with pytest.raises(pb_utils.TritonModelException, match="are 9 bytes, more than the 8"):
        pb_utils.load_model("m", "{}", {"file:1/model.onnx": b"1234567"})
    assert asked == []
