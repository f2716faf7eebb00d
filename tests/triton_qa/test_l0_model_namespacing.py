"""Triton's qa/L0_model_namespacing: one model name in two repositories.

As its test.sh: two repositories (``addsub_repo``, ``subadd_repo``) served with
``--model-namespacing=true``, each test on a fresh copy of its folder (``test_dir``) and
a server of its own, first polling (``--repository-poll-secs=2``), then in explicit mode.
The python models hold no config and no code of their own but ``from python_addsub
import *`` (or ``python_subadd``) on the server's ``TRITON_QA_PYTHON_MODEL_DIR``; their
``auto_complete_config`` declares the tensors. Each ensemble must reach its own
repository's ``composing_model``, the shared name alone is refused as ambiguous, and a
model moved out of one repository (and back) changes what the ensembles reach. test.sh
makes each model's version folder and exports ``PYTHONDONTWRITEBYTECODE=1`` (a
``__pycache__`` in a model's folder would count as a change to poll).

The default run takes ``ModelNamespaceExplicit.test_duplication``, on one server with
L0_iterative_sequence's selection; ``TRITON_QA=full`` the eight runs, four at a time.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, test_l0_iterative_sequence

pytestmark = pytest.mark.slow

FOLDER = "L0_model_namespacing"
TESTS = ["test_duplication", "test_dynamic_resolution", "test_ensemble_duplication",
         "test_no_duplication"]  # fmt: skip
SUITES = {
    "ModelNamespacePoll": ["--model-control-mode=POLL", "--repository-poll-secs=2"],
    "ModelNamespaceExplicit": ["--model-control-mode=EXPLICIT"],
}


def _test_dir(work: Path, test: str) -> Path:
    """test.sh's ``test_dir``: the test's folder copied, each model with a version folder."""
    for model in (work / test).glob("*/*"):
        (model / "1").mkdir(exist_ok=True)
    target = work / "test_dir"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(work / test, target)
    return target


def _repository_args(test_dir: Path) -> list[str]:
    return ["--model-namespacing=true", f"--model-repository={test_dir / 'addsub_repo'}",
            f"--model-repository={test_dir / 'subadd_repo'}"]  # fmt: skip


def _env(work: Path) -> dict[str, str]:
    """What test.sh exports for the server and the test."""
    return {
        "TRITON_QA_ROOT_DIR": str(work.parent),
        "TRITON_QA_PYTHON_MODEL_DIR": str(work),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _run(host: LoopbackHost, work: Path, suite: str, test: str) -> harness.QaRun:
    test_dir = _test_dir(work, test)
    args = [*_repository_args(test_dir), *SUITES[suite]]
    env = _env(work)
    log = work / f"server.{suite}.{test}.log"
    with harness.tritonserver(host, args, log, cwd=work, env=env):
        return harness.run_qa_file(
            host, work, "test.py", f"{suite}.{test}",
            env={**env, "NAMESPACE_TESTING_DIRCTORY": str(test_dir)},
        )  # fmt: skip


def test_namespacing_and_iterative_sequence_default(host: LoopbackHost, tmp_path: Path) -> None:
    """The default run of this folder and L0_iterative_sequence, on one server (each
    test.sh's explicit mode; the iterative model's repository a third, whose name is in
    no other): an ensemble in each repository over the shared name, each reaching its
    own, the name alone refused as ambiguous; then an iterative sequence's two
    responses over two executions."""
    work = harness.work_directory(tmp_path, FOLDER)
    test_dir = _test_dir(work, "test_duplication")
    iterative = harness.work_directory(tmp_path, test_l0_iterative_sequence.FOLDER)
    models, backends = test_l0_iterative_sequence.repository(iterative)
    args = [*_repository_args(test_dir), f"--model-repository={models}",
            *SUITES["ModelNamespaceExplicit"], f"--backend-directory={backends}"]  # fmt: skip
    env = _env(work)
    with harness.tritonserver(host, args, work / "server.default.log", cwd=work, env=env):
        harness.run_qa_file(
            host, work, "test.py", "ModelNamespaceExplicit.test_duplication",
            env={**env, "NAMESPACE_TESTING_DIRCTORY": str(test_dir)},
        ).check(count=1)  # fmt: skip
        harness.run_qa_file(
            host, iterative, "iterative_sequence_e2e.py", "IterativeSequenceTest.test_grpc_stream"
        ).check(count=1)


@pytest.mark.triton_qa_full  # eight servers; the polling dynamic resolution sleeps 10 s
def test_model_namespacing(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    runs = [(suite, test) for suite in SUITES for test in TESTS]
    works = [harness.work_directory(tmp_path / f"lane{i}", FOLDER) for i in range(len(hosts))]

    def one(lane: int, run: tuple[str, str]) -> harness.QaRun:
        return _run(hosts[lane], works[lane], *run)

    failures = []
    for (suite, test), outcome in harness.in_lanes(hosts, runs, one):
        try:
            outcome.check(count=1)
        except AssertionError as error:
            failures.append(f"{suite}.{test}: {error}")
    assert not failures, "\n".join(failures)
