"""Several model repositories served together, as tritonserver serves several."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelyard.errors import ConfigError
from modelyard.modelfiles.repository import ModelRepository


def model(root: Path, name: str) -> Path:
    (root / name / "1").mkdir(parents=True)
    return root / name


def test_models_of_every_root_are_listed_and_found(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    model(first, "ranker")
    model(second, "scorer")
    repository = ModelRepository([first, second])
    assert repository.model_names() == ["ranker", "scorer"]
    assert repository.model_dir("scorer") == second / "scorer"
    assert repository.model_dir("../a/ranker") is None  # names are matched, never joined


def test_a_name_in_two_roots_is_refused_at_start(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    model(first, "ranker")
    model(second, "ranker")
    with pytest.raises(ConfigError) as refused:
        ModelRepository([first, second])
    line = refused.value.line()
    assert "model 'ranker' is in two repositories" in line
    assert "rule=config/model-repository" in line
