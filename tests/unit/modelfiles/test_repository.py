"""Several model repositories served together, as tritonserver serves several."""

from __future__ import annotations

from pathlib import Path

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


def test_a_name_in_two_roots_serves_from_neither_as_in_triton(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    model(first, "ranker")
    model(second, "ranker")
    model(second, "scorer")
    repository = ModelRepository([first, second, first])  # a root given twice is one
    assert repository.roots == [first, second]
    assert repository.model_names() == ["scorer"]
    assert repository.duplicates() == ["ranker"]
    assert repository.model_dir("ranker") is None
    (first / "ranker").rename(tmp_path / "moved")  # once in one root only, it is found
    assert repository.model_dir("ranker") == second / "ranker"
    assert repository.duplicates() == []


def test_with_namespacing_a_shared_name_is_served_once_per_repository(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    model(first, "composing")
    model(second, "composing")
    model(first, "addsub")
    model(second, "subadd")
    repository = ModelRepository([first, second], namespacing=True)
    assert repository.model_names() == ["addsub", "composing::1", "composing::2", "subadd"]
    assert repository.model_dir("composing::2") == second / "composing"
    assert repository.model_dir("composing") is None  # ambiguous
    assert repository.ambiguity("composing") == 2 and repository.ambiguity("addsub") == 0
    assert repository.keys_of("composing") == ["composing::1", "composing::2"]
    assert repository.keys_of("addsub") == ["addsub"]
    # an ensemble's step names its own repository's model first
    assert repository.step_key("composing", first / "addsub") == "composing::1"
    assert repository.step_key("composing", second / "subadd") == "composing::2"
    assert repository.step_key("addsub", second / "subadd") == "addsub"
    bad_keys = ("composing::3", "composing::0", "composing::01", "composing::x", "composing::",
                "addsub::1")  # fmt: skip
    for key in bad_keys:
        assert repository.model_dir(key) is None, key  # a key names a shared name's root
    assert ModelRepository([first]).model_dir("composing::1") is None  # namespacing off


def test_a_name_that_stops_being_shared_gets_its_bare_name_back(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    model(first, "composing")
    model(second, "composing")
    repository = ModelRepository([first, second], namespacing=True)
    (first / "composing").rename(tmp_path / "moved")
    assert repository.model_names() == ["composing"]
    assert repository.model_dir("composing") == second / "composing"
    assert repository.step_key("composing", first / "addsub") == "composing"
