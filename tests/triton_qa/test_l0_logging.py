"""Triton's qa/L0_logging: the logging extension (``/v2/logging``, gRPC
``LogSettings``).

As its test.sh's "Python client library" server: ``--model-repository`` alone, its
``log_models`` holding ``simple`` (``onnx_int32_int32_int32`` of Triton's generator,
version 1 only; here the example model ``simple`` of the same tensors, made without
running the generator: the file asks no inference), and ``logging_endpoint_test.py``
(four tests). The default run takes it on the server it shares with L0_trace and
L0_simple_ensemble (test_l0_trace.py); this runs it as test.sh does under
``TRITON_QA=full``.

``log_format_test.py`` (``TRITON_QA=full``): every record of the log in Triton's formats
(``I1206 18:06:30.834780 1234 file.py:123] "message"``, and ISO8601's), escaped and
not, and an input name holding line breaks: a forged record when
``TRITON_SERVER_ESCAPE_LOG_MESSAGES=0`` (as Triton, the operator warned), none
otherwise. Not run: test.sh's curl and client-binary checks around it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

QA_FILE = "logging_endpoint_test.py"
COUNT = 4  # test.sh's EXPECTED_NUM_TESTS


def repository(work: Path) -> Path:
    """test.sh's ``log_models``: ``simple``."""
    models = work / "log_models"
    models.mkdir(exist_ok=True)
    simple_add_sub(models)
    return models


@pytest.mark.triton_qa_full
def test_logging_endpoint(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_logging")
    args = [f"--model-repository={repository(work)}"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, QA_FILE)
    run.check(count=COUNT)


@pytest.mark.triton_qa_full
@pytest.mark.timeout(600)
def test_log_format(host: LoopbackHost, tmp_path: Path) -> None:
    """log_format_test.py (unchanged, pytest, 12 cases): it starts ``tritonserver`` itself
    (this checkout's, first on its PATH) with each log format, escaped and not, and parses
    every record of the log file; and checks an input name forging a record."""
    work = harness.work_directory(tmp_path, "L0_logging")
    repository(work)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    run = harness.run_qa_file(host, work, "log_format_test.py", env={"PATH": path},
                              pytest_style=True, timeout=540)  # fmt: skip
    run.check(count=12)
