"""Triton's Python-based backends: ``<backend directory>/<name>/model.py`` serves the models
whose config says ``backend: "<name>"``, each reading its own files from its version
folder (``pb_utils.get_model_dir()``); only a file under the backend directory is taken."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from modelyard.engines import python_based_backend
from modelyard.errors import ModelyardError
from modelyard.modelfiles.config import parse_json_config
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.types import InferRequest

BACKEND = """
import json
import os

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [2]})
        config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [2]})
        return config

    def initialize(self, args):
        with open(os.path.join(pb_utils.get_model_dir(), "scale.json")) as file:
            self.scale = json.load(file)["scale"]

    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor(
                "Y", pb_utils.get_input_tensor_by_name(request, "X").as_numpy() * self.scale
            )])
            for request in requests
        ]
"""


def _backends(tmp_path: Path) -> Path:
    backends = tmp_path / "backends"
    (backends / "scaler").mkdir(parents=True)
    (backends / "scaler" / "model.py").write_text(textwrap.dedent(BACKEND))
    return backends


def _model(repository: Path, name: str, scale: float, backend: str = "scaler") -> None:
    (repository / name / "1").mkdir(parents=True)
    (repository / name / "1" / "scale.json").write_text(f'{{"scale": {scale}}}')
    (repository / name / "config.pbtxt").write_text(f'backend: "{backend}"\n')


def test_a_backend_s_model_py_serves_each_model_that_names_it(tmp_path: Path) -> None:
    backends = _backends(tmp_path)
    repository = tmp_path / "models"
    _model(repository, "double", 2)
    _model(repository, "triple", 3)
    _model(repository, "elsewhere", 1, backend="nowhere")

    async def scenario() -> None:
        manager = ModelManager(ModelRepository(repository), ControlMode.EXPLICIT,
                               backend_directory=backends)  # fmt: skip
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            x = np.array([1.0, 2.0], dtype=np.float32)
            for name, scale in (("double", 2), ("triple", 3)):
                await manager.load(name)
                answer = await dp.infer(InferRequest(name, None, {"X": x}, {"X": "FP32"}))
                assert answer.outputs[0].data.tolist() == (x * scale).tolist()
                assert dp.model_config(name, None)["backend"] == "scaler"
            with pytest.raises(ModelyardError) as refused:
                await manager.load("elsewhere")
            assert "unknown backend 'nowhere'" in refused.value.line()
            assert "Python-based backend 'nowhere/model.py'" in refused.value.line()
            # a request's files never make a backend's model: code would read them
            override = parse_json_config({"backend": "scaler"}, "load request for 'given'")
            with pytest.raises(ModelyardError) as refused:
                await manager.load("given", override, None, {("1", "scale.json"): b"{}"})
            assert "rule=protocol/load-file-override" in refused.value.line()
        finally:
            await manager.stop()

    asyncio.run(scenario())


def test_only_a_model_py_under_the_backend_directory_is_a_backend(tmp_path: Path) -> None:
    backends = _backends(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.py").write_text("import triton_python_backend_utils\n")
    os.symlink(outside, backends / "linked")  # a folder that leads out of the directory
    (backends / "filelink").mkdir()
    os.symlink(outside / "model.py", backends / "filelink" / "model.py")
    (backends / "empty").mkdir()
    assert python_based_backend("scaler", backends) == (backends / "scaler").resolve()
    for name in ("linked", "filelink", "empty", "..", "../outside", ".hidden", "a/b", ""):
        assert python_based_backend(name, backends) is None, name
    assert python_based_backend("scaler", None) is None  # no directory given: none
    (backends / "python").mkdir()
    (backends / "python" / "model.py").write_text("")
    assert python_based_backend("python", backends) is None  # modelyard's own engine


def test_the_backend_s_own_model_py_is_imported_not_one_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backends = _backends(tmp_path)
    repository = tmp_path / "models"
    _model(repository, "double", 2)
    workdir = tmp_path / "cwd"
    (workdir / "1").mkdir(parents=True)
    (workdir / "model.py").write_text("raise SystemExit('the working directory model.py')\n")
    (workdir / "1" / "__init__.py").write_text("raise SystemExit('the working directory 1/')\n")
    monkeypatch.chdir(workdir)

    async def scenario() -> None:
        manager = ModelManager(ModelRepository(repository), ControlMode.EXPLICIT,
                               backend_directory=backends)  # fmt: skip
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            await manager.load("double")
            x = np.array([1.0, 2.0], dtype=np.float32)
            answer = await dp.infer(InferRequest("double", None, {"X": x}, {"X": "FP32"}))
            assert answer.outputs[0].data.tolist() == [2.0, 4.0]
        finally:
            await manager.stop()

    asyncio.run(scenario())
