"""Triton's qa/L0_optional_input: optional inputs through the dynamic batcher and ensembles.

As its test.sh: the folder's own models (``identity_2_float32``, Triton's identity
backend with two optional inputs, preferred batches of 4 and a 5 s delay; three
ensembles over it and over ``optional_identity``, a python model whose config names no
backend: its ``model.py`` makes it one), the version folders test.sh makes, and a server
per test (it restarts the server to clear the statistics), four at a time here (about 40
s: all but one wait out the 5 s batching delay, the pipeline's twice). The default run
takes a selection of it on one server with the other small folders
(test_l0_small_folders.py); this runs it whole under ``TRITON_QA=full``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

TESTS = [
    "test_all_inputs",
    "test_optional_same_input",
    "test_optional_mix_inputs",
    "test_optional_mix_inputs_2",
    "test_ensemble_all_inputs",
    "test_ensemble_optional_same_input",
    "test_ensemble_optional_mix_inputs",
    "test_ensemble_optional_mix_inputs_2",
    "test_ensemble_optional_pipeline",
    "test_ensemble_optional_connecting_tensor",
]


def repository(work: Path) -> Path:
    """The folder's ``models``, with the version folders test.sh makes."""
    for model in (
        "identity_2_float32",
        "ensemble_identity_2_float32",
        "pipeline_identity_2_float32",
        "optional_connecting_tensor",
    ):
        (work / "models" / model / "1").mkdir(parents=True, exist_ok=True)
    return work / "models"


@pytest.mark.triton_qa_full
def test_optional_input(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    tests = TESTS
    works = [
        harness.work_directory(tmp_path / f"lane{i}", "L0_optional_input")
        for i in range(len(hosts))
    ]
    for work in works:
        repository(work)

    def one(lane: int, test: str) -> harness.QaRun:
        work = works[lane]
        args = [f"--model-repository={work / 'models'}", "--log-verbose=1"]
        with harness.tritonserver(hosts[lane], args, work / f"{test}.server.log"):
            return harness.run_qa_file(
                hosts[lane], work, "optional_input_test.py", f"OptionalInputTest.{test}"
            )

    failures = []
    for test, run in harness.in_lanes(hosts[: len(tests)], tests, one):
        try:
            run.check(count=1)
        except AssertionError as error:
            failures.append(f"{test}: {error}")
    assert not failures, "\n".join(failures)
