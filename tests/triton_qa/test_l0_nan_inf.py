"""Triton's qa/L0_nan_inf: NaN, inf and -inf in an output, over HTTP (JSON, which has no
words for them: Triton writes ``NaN``, ``Infinity``, ``-Infinity``, Python's json reads
them) and gRPC.

As its test.sh: the folder's python model ``nan_inf_output``, one server,
``nan_inf_test.py`` (three tests).

The default run takes a selection of it on one server with the other small folders
(test_l0_small_folders.py); this runs it whole under ``TRITON_QA=full``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow


def repository(work: Path) -> Path:
    """The folder's ``models``."""
    return work / "models"


@pytest.mark.triton_qa_full
def test_nan_inf(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_nan_inf")
    with harness.tritonserver(host, [f"--model-repository={repository(work)}"], tmp_path / "s.log"):
        run = harness.run_qa_file(host, work, "nan_inf_test.py")
    run.check(count=3)
