"""The default run of Triton's small QA folders: one server for all of them.

Each folder's own module (``test_l0_<folder>.py``) runs it as its test.sh does, a server
of its own each time, under ``TRITON_QA=full``. Most of such a run is the server's start
(about 2 s here), so within CI's budget one server on one repository holding every
folder's models (the same builders; one name shared, below) answers a selection of each
folder's tests in turn, about 1-2 s a folder:

- L0_optional_input: ``test_ensemble_optional_connecting_tensor`` (its others wait out
  the 5 s batching delay);
- L0_nullchar_string: the client on the first model over HTTP;
- L0_scalar_io: ``scalar_test.py`` (the server that must not start: full run);
- L0_nan_inf: ``nan_inf_test.py``;
- L0_output_name: ``OutputNameValidationTest``;
- L0_infer_reshape: ``test_ii1`` and ``test_ii3`` (variable sizes), on the INT32 models
  they ask for (the file asks no PyTorch model, ensemble or TensorRT one for INT32, so
  none is made: torch's tracing alone takes about 7 s);
- L0_client_nobatch: ``client_test.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import (
    harness,
    test_l0_client_nobatch,
    test_l0_infer_reshape,
    test_l0_nan_inf,
    test_l0_nullchar_string,
    test_l0_optional_input,
    test_l0_output_name,
    test_l0_scalar_io,
)

pytestmark = pytest.mark.slow

# folder -> its repository's builder, the QA file and the tests of it run here
FOLDERS: dict[str, tuple[Callable[[Path], Path], str, list[str]]] = {
    "L0_optional_input": (
        test_l0_optional_input.repository,
        "optional_input_test.py",
        ["OptionalInputTest.test_ensemble_optional_connecting_tensor"],
    ),
    "L0_nullchar_string": (test_l0_nullchar_string.repository, "", []),
    "L0_scalar_io": (test_l0_scalar_io.repository, "scalar_test.py", []),
    "L0_nan_inf": (test_l0_nan_inf.repository, "nan_inf_test.py", []),
    "L0_output_name": (
        test_l0_output_name.repository,
        "output_name_test.py",
        ["OutputNameValidationTest"],
    ),
    "L0_infer_reshape": (
        lambda work: test_l0_infer_reshape.repository(work, whole=False),
        "infer_reshape_test.py",
        ["InferReshapeTest.test_ii1", "InferReshapeTest.test_ii3"],
    ),
    "L0_client_nobatch": (test_l0_client_nobatch.repository, "client_test.py", []),
}
COUNTS = {
    "L0_optional_input": 1,
    "L0_scalar_io": 1,
    "L0_nan_inf": 3,
    "L0_output_name": 1,
    "L0_client_nobatch": 4,
}
# the models a folder's selection asks for, where that is not all of them: the INT32 ones
# of L0_infer_reshape's hundred (its float and string models load for nothing here)
ASKED: dict[str, Callable[[str], bool]] = {"L0_infer_reshape": lambda name: "int32" in name}
# the one name two folders' repositories share: the first folder's is kept
# (L0_output_name asks it only for an output it does not have)
SHARED = {"plan_nobatch_zero_1_float32"}


def test_small_folders_on_one_server(host: LoopbackHost, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    works = {}
    for folder, (build, _, _) in FOLDERS.items():
        works[folder] = work = harness.work_directory(tmp_path / "qa", folder)
        for model in build(work).iterdir():
            if not ASKED.get(folder, bool)(model.name):
                continue
            if model.name in SHARED and (models / model.name).exists():
                continue
            shutil.copytree(model, models / model.name)  # another name two share: fails
    failures = []
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        for folder, (_, qa_file, selection) in FOLDERS.items():
            if folder == "L0_nullchar_string":
                runs = [(test_l0_nullchar_string.MODELS[0], [])]
                failures += test_l0_nullchar_string.client_runs(host, works[folder], runs)
                continue
            run = harness.run_qa_file(host, works[folder], qa_file, *selection)
            try:
                run.check(count=COUNTS.get(folder, len(selection)))
            except AssertionError as error:
                failures.append(f"{folder}: {error}")
    assert not failures, "\n".join(failures)
