"""Triton's qa/L0_iterative_sequence: a decoupled model that gives each request back to
the scheduler until it has sent all its responses (``iterative_sequence: true``).

As its test.sh: the folder's ``models`` (one model, ``iterative_sequence``), an
explicit-mode server, ``iterative_sequence_e2e.py`` (its ``setUp`` loads the model, and
four of its tests load it again with a config override: a short idle timeout, a
backlog, and the sequence and dynamic batchers without ``iterative_sequence``, which
must refuse a request given back). The model's backend is Triton's C++
``iterative_sequence`` test backend, whose library Triton's QA image
(``Dockerfile.QA``) copies into the model's version folder; here it is
``iterative_sequence_backend.py`` as a Python-based backend of that name in a backend
directory of the test's, given to ``--backend-directory`` (the one flag added to
test.sh's command line), and the version folder is empty.

The default run takes ``test_grpc_stream`` on one server with L0_model_namespacing's
selection (``test_l0_model_namespacing.py``); ``TRITON_QA=full`` the six tests on one
server, as test.sh runs them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

FOLDER = "L0_iterative_sequence"
BACKEND = Path(__file__).with_name("iterative_sequence_backend.py")


def repository(work: Path) -> tuple[Path, Path]:
    """The folder's models (with the version folder Triton's QA image makes) and the
    backend directory that serves them."""
    (work / "models" / "iterative_sequence" / "1").mkdir(exist_ok=True)
    backend = work / "backends" / "iterative_sequence"
    backend.mkdir(parents=True, exist_ok=True)
    shutil.copy(BACKEND, backend / "model.py")
    return work / "models", work / "backends"


def server_args(work: Path) -> list[str]:
    """test.sh's command line, with the backend directory."""
    models, backends = repository(work)
    return [f"--model-repository={models}", "--model-control-mode=EXPLICIT",
            f"--backend-directory={backends}"]  # fmt: skip


@pytest.mark.triton_qa_full  # about 13 s: the model sleeps 500 ms an execution
def test_iterative_sequence(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    log = work / "inference_server.log"
    with harness.tritonserver(host, server_args(work), log, cwd=work):
        run = harness.run_qa_file(host, work, "iterative_sequence_e2e.py")
    run.check(count=6)
