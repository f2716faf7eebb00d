"""A server imports only what its repository's models need.

torch alone costs a cold start about 1.5 s and 150 MB; a repository of ONNX models
must not pay for torch, scikit-learn or transformers. Each case loads a repository in
a fresh interpreter and reads which of those modules it imported.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "sklearn", "transformers", "xgboost", "lightgbm", "skops", "scipy")

LOAD_AND_LIST = """
import asyncio, json, sys
from pathlib import Path
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.modelfiles.repository import ModelRepository

async def main():
    manager = ModelManager(ModelRepository(Path(sys.argv[1])), ControlMode.NONE)
    await manager.start()
    ready = sorted(row["name"] for row in manager.index(ready_only=True))
    await manager.stop()
    return ready

ready = asyncio.run(main())
print(json.dumps({"ready": ready, "heavy": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def loaded(repository: Path) -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", LOAD_AND_LIST, str(repository), *HEAVY],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, list[str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def repository_of(example_repository: Path, target: Path, *models: str) -> Path:
    for model in models:
        shutil.copytree(example_repository / model, target / model)
    return target


@pytest.mark.slow
def test_a_repository_of_onnx_models_imports_no_other_engine(
    example_repository: Path, tmp_path: Path
) -> None:
    repository = repository_of(example_repository, tmp_path, "tiny_onnx", "mlp_onnx")
    result = loaded(repository)
    assert result["ready"] == ["mlp_onnx", "tiny_onnx"]
    assert result["heavy"] == []


@pytest.mark.slow
def test_a_scikit_learn_model_imports_scikit_learn_and_no_boosting_library(
    example_repository: Path, tmp_path: Path
) -> None:
    # the check sees an engine's imports; skops itself, on import, walks every scikit-learn
    # module, and scikit-learn's array API shim then imports torch where it is installed
    repository = repository_of(example_repository, tmp_path, "iris_sklearn", "tiny_onnx")
    result = loaded(repository)
    assert result["ready"] == ["iris_sklearn", "tiny_onnx"]
    assert "sklearn" in result["heavy"]
    assert "xgboost" not in result["heavy"]
    assert "lightgbm" not in result["heavy"]
    assert "transformers" not in result["heavy"]
