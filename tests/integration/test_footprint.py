"""A server imports only what its repository's models need, and counts what each holds.

torch alone costs a cold start about 1.5 s and 150 MB; a repository of ONNX models
must not pay for torch, scikit-learn or transformers. Each case loads a repository in
a fresh interpreter and reads which of those modules it imported, or what a version's
load measured (the RSS growth of a process that has loaded nothing else meanwhile).
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


LOAD_ONE_BY_ONE = """
import asyncio, gc, json, sys
from pathlib import Path
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.modelfiles.repository import ModelRepository

async def main():
    manager = ModelManager(ModelRepository(Path(sys.argv[1])), ControlMode.EXPLICIT)
    await manager.start()
    for name in sys.argv[2:]:
        gc.collect()
        await manager.load(name)
    held = {name: size for name, _, size in manager.held_memory()}
    await manager.stop()
    return held

print(json.dumps(asyncio.run(main())))
"""


@pytest.mark.slow
def test_instances_that_load_at_once_are_each_counted(
    example_repository: Path, tmp_path: Path
) -> None:
    """A version's instances load on threads of their own; its footprint is read once all
    have loaded, so each instance's weights count (three sessions of a 5 MB model)."""
    source = example_repository / "mlp_onnx"
    weights = sum(p.stat().st_size for p in (source / "1").iterdir())
    for name, count in (("warm", 1), ("three", 3)):
        shutil.copytree(source, tmp_path / name)
        config = tmp_path / name / "config.pbtxt"
        text = config.read_text().replace('"mlp_onnx"', f'"{name}"')
        config.write_text(text + f"instance_group [{{ count: {count} kind: KIND_CPU }}]\n")
    out = subprocess.run(  # the first pays what onnxruntime does once
        [sys.executable, "-c", LOAD_ONE_BY_ONE, str(tmp_path), "warm", "three"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    held: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    assert held["three"] > 2.4 * weights, (held, weights)
