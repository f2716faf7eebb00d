"""Triton's qa/L0_response_statistics: the statistics of each response of a decoupled
model, by its index within its request (``response_stats``), over HTTP and gRPC.

As its test.sh: the models it writes (``square_int32``: Triton's ``square`` backend with a
400 ms compute and a 200 ms output delay a response, its last two responses before the
last failing and the last one empty; ``square_int32_slow``: 1.2 s, 0.8 s and a 400 ms
cleanup once cancelled), a server on them, and ``response_statistics_test.py``. The
``square`` backend is Triton's C++ example backend (square_backend), which Triton's QA
image installs; here it is ``square_backend.py`` as a Python-based backend of that name,
in a backend directory of the test's given to ``--backend-directory`` (the one flag added
to test.sh's command line).

``TRITON_QA=full`` only: the file's two tests take about 27 s (their delays).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

FOLDER = "L0_response_statistics"
BACKEND = Path(__file__).with_name("square_backend.py")


def _config(parameters: dict[str, str]) -> str:
    """test.sh's config.pbtxt for a ``square`` model with these parameters."""
    lines = [
        'backend: "square"',
        "max_batch_size: 0",
        "model_transaction_policy { decoupled: True }",
        'input [{ name: "IN" \n data_type: TYPE_INT32 \n dims: [ 1 ] }]',
        'output [{ name: "OUT" \n data_type: TYPE_INT32 \n dims: [ 1 ] }]',
    ]
    lines += [
        f'parameters [{{ key: "{key}" \n value: {{ string_value: "{value}" }} }}]'
        for key, value in parameters.items()
    ]
    return "\n".join(lines) + "\n"


MODELS = {
    "square_int32": {
        "CUSTOM_INFER_DELAY_NS": "400000000",
        "CUSTOM_OUTPUT_DELAY_NS": "200000000",
        "CUSTOM_FAIL_COUNT": "2",
        "CUSTOM_EMPTY_COUNT": "1",
    },
    "square_int32_slow": {
        "CUSTOM_INFER_DELAY_NS": "1200000000",
        "CUSTOM_OUTPUT_DELAY_NS": "800000000",
        "CUSTOM_CANCEL_DELAY_NS": "400000000",
    },
}


def server_args(work: Path) -> list[str]:
    """test.sh's models and command line, with the backend directory that serves them."""
    for name, parameters in MODELS.items():
        (work / "models" / name / "1").mkdir(parents=True, exist_ok=True)
        (work / "models" / name / "config.pbtxt").write_text(_config(parameters))
    backend = work / "backends" / "square"
    backend.mkdir(parents=True, exist_ok=True)
    shutil.copy(BACKEND, backend / "model.py")
    return [f"--model-repository={work / 'models'}", f"--backend-directory={work / 'backends'}"]


@pytest.mark.triton_qa_full  # about 27 s: the models' delays
def test_response_statistics(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)

    def run(*selection: str) -> harness.QaRun:
        log = work / "response_statistics_test.server.log"
        with harness.tritonserver(host, server_args(work), log, cwd=work):
            return harness.run_qa_file(host, work, "response_statistics_test.py", *selection)

    whole = run()
    assert len(whole.outcomes) == 2, whole.output[-4000:]
    # its bounds are 10 % of the delays (40 ms of a 400 ms cleanup): on two shared cores
    # a test that fails has a second try, on a server of its own (the statistics add up)
    for name in whole.not_passed():
        run(name.replace("::", ".")).check(count=1)
