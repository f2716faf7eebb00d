"""Several model repositories served together, as tritonserver serves several."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelyard.errors import Code, ModelServerError
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


def test_a_registered_root_serves_its_folders_under_their_mapped_names(tmp_path: Path) -> None:
    start, sagemaker = tmp_path / "start", tmp_path / "hash"
    model(start, "simple")
    model(sagemaker, "model")
    model(sagemaker, "step")
    repository = ModelRepository(start)
    repository.register(sagemaker, {"model": "simple"})
    # the mapped folder is listed by its mapped name only, and comes before the start's
    assert repository.model_names() == ["simple", "step"]
    assert repository.model_dir("simple") == sagemaker / "model"
    assert repository.model_dir("model") is None
    assert repository.mapped("simple") and not repository.mapped("step")
    assert repository.duplicates() == []
    repository.unregister(sagemaker)
    assert repository.model_names() == ["simple"]
    assert repository.model_dir("simple") == start / "simple"
    assert not repository.mapped("simple")


def test_a_registration_is_refused_in_tritons_words(tmp_path: Path) -> None:
    start, first, second = tmp_path / "start", tmp_path / "first", tmp_path / "second"
    model(start, "simple")
    model(first, "model")
    model(second, "model")
    repository = ModelRepository(start)
    repository.register(first, {"model": "ranker"})
    refusals = [
        (lambda: repository.register(first, {}), Code.ALREADY_EXISTS,
         f"model repository '{first}' has already been registered"),
        (lambda: repository.register(start, {}), Code.ALREADY_EXISTS,
         f"model repository '{start}' has already been registered"),
        (lambda: repository.register(second, {"model": "ranker"}), Code.ALREADY_EXISTS,
         "failed to register 'ranker', there is a conflicting mapping for 'ranker'"),
        (lambda: repository.register(tmp_path / "none", {}), Code.INVALID_ARGUMENT,
         f"failed to register '{tmp_path / 'none'}', repository not found"),
        (lambda: repository.register(second, {"model": "../x"}), Code.INVALID_ARGUMENT,
         "failed to register '../x': not a model name"),
        (lambda: repository.unregister(start), Code.INVALID_ARGUMENT,
         f"failed to unregister '{start}', repository not found"),
    ]  # fmt: skip
    for call, code, detail in refusals:
        with pytest.raises(ModelServerError) as refused:
            call()
        assert refused.value.code is code and refused.value.detail == detail
        assert "rule=model-server/repository-registration" in refused.value.line()
    assert repository.roots == [start, first]  # nothing a refusal touched changed
    assert repository.model_names() == ["ranker", "simple"]
