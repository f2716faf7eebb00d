"""Triton's qa/L0_decoupled: decoupled models (zero, one or many responses a request)
streamed over gRPC, directly and through ensembles, and the refusal of a plain call.

As its test.sh, with the models Triton's ``Dockerfile.QA`` puts in the folder:
``repeat_int32`` and ``square_int32`` (Triton's ``src/test/models`` configs, its C++
``repeat`` and ``square`` backends), the folder's ``identity_int32`` (identity backend)
and its ensembles over them (``simple_repeat``, ``sequence_repeat``, ``fan_repeat``,
``repeat_square``, ``nested_square``), and ``libtorch_nobatch_int32_int32_int32`` from
qa_model_repository (``gen_qa_models.py --libtorch``) with test.sh's ``dims: [ 1 ]``.
test.sh runs two trials, ``python_models`` (``Dockerfile.QA``'s copy of ``models`` with
python_backend's decoupled example files beside, which the configs' ``backend: "repeat"``
and ``"square"`` leave unused) and ``models``; each test of ``DecoupledTest`` as its own
run (``test_one_to_multi_many`` with ``TRITONSERVER_DELAY_GRPC_RESPONSE=2000`` in the
client's environment, as test.sh exports it after the server has started), then
``NonDecoupledTest`` on a copy of ``repeat_int32`` whose config says ``decoupled: False``.

The C++ backends are Python-based backends of those names here, in a backend directory
of the test's given to ``--backend-directory`` (the one flag added to test.sh's command
line): ``repeat_backend.py`` (Triton's repeat_backend) and ``square_backend.py``.

``TRITON_QA=full`` only: the file's delays and waits make each trial about half an hour;
here each test gets a server of its own, four at a time (about 25 minutes in all).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

FOLDER = "L0_decoupled"
BACKENDS = {
    "repeat": Path(__file__).with_name("repeat_backend.py"),
    "square": Path(__file__).with_name("square_backend.py"),
}
TEST_MODELS = harness.VENDOR / "server" / "src" / "test" / "models"
EXAMPLE = harness.VENDOR / "python_backend" / "examples" / "decoupled"
# test.sh's runs, the longest first (four servers at a time)
DECOUPLED_TESTS = [
    "test_one_to_multi_many", "test_one_to_many", "test_response_order", "test_one_to_one",
    "test_one_to_none", "test_no_streaming", "test_wrong_shape",
]  # fmt: skip
LIBTORCH = "libtorch_nobatch_int32_int32_int32"


def backend_directory(work: Path) -> Path:
    backends = work / "backends"
    for name, source in BACKENDS.items():
        (backends / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, backends / name / "model.py")
    return backends


def repositories_of(work: Path) -> dict[str, Path]:
    """test.sh's ``python_models``, ``models`` and ``non_decoupled_models``."""
    models = work / "models"
    for name in ("repeat_int32", "square_int32"):  # Dockerfile.QA's copies
        shutil.copytree(TEST_MODELS / name, models / name)
    for model in models.iterdir():  # Dockerfile.QA's version folders
        (model / "1").mkdir(exist_ok=True)
    generated = work / "qa_model_repository"
    repositories.generated(work, "gen_qa_models.py", "--libtorch", f"--models_dir={generated}")
    libtorch = shutil.copytree(generated / LIBTORCH, models / LIBTORCH)
    config = libtorch / "config.pbtxt"  # test.sh's sed
    config.write_text(re.sub(r"dims:.*\[.*\]", "dims: [ 1 ]", config.read_text()))
    python_models = shutil.copytree(models, work / "python_models")
    for kind in ("repeat", "square"):  # Dockerfile.QA's, beside the configs
        shutil.copy(EXAMPLE / f"{kind}_model.py", python_models / f"{kind}_int32" / "1")
        shutil.copy(EXAMPLE / f"{kind}_config.pbtxt", python_models / f"{kind}_int32")
    non_decoupled = work / "non_decoupled_models"
    repeat = shutil.copytree(models / "repeat_int32", non_decoupled / "repeat_int32")
    config = repeat / "config.pbtxt"
    config.write_text(config.read_text().replace("decoupled: True", "decoupled: False"))
    return {"python": python_models, "custom": models, "non_decoupled": non_decoupled}


@pytest.mark.triton_qa_full
@pytest.mark.timeout(3600)  # about 25 minutes: test_one_to_many's waits are 20 of them
def test_decoupled(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    repos = repositories_of(work)
    backends = backend_directory(work)
    runs = [(trial, f"DecoupledTest.{test}") for test in DECOUPLED_TESTS
            for trial in ("python", "custom")]  # fmt: skip
    runs.append(("non_decoupled", "NonDecoupledTest"))

    def one(lane: int, run: tuple[str, str]) -> harness.QaRun:
        trial, selection = run
        # a folder of the run's own: the file's report (and test_results.txt) is there
        here = harness.work_directory(tmp_path / f"{trial}-{selection}", FOLDER)
        args = [f"--model-repository={repos[trial]}", f"--backend-directory={backends}"]
        env = {}
        if selection.endswith("test_one_to_multi_many"):
            env["TRITONSERVER_DELAY_GRPC_RESPONSE"] = "2000"
        log = tmp_path / f"{trial}.{selection}.server.log"
        with harness.tritonserver(hosts[lane], args, log, cwd=here):
            return harness.run_qa_file(
                hosts[lane], here, "decoupled_test.py", selection, env=env, timeout=1800
            )

    failures = []
    for (trial, selection), result in harness.in_lanes(hosts, runs, one):
        try:
            result.check(count=2 if selection == "NonDecoupledTest" else 1)
        except AssertionError as error:
            failures.append(f"{trial} {selection}: {error}")
    assert not failures, "\n".join(failures)
