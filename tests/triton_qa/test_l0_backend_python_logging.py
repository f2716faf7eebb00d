"""Triton's qa/L0_backend_python/logging: a python model's log records, as the server's
log settings decide.

test.sh starts the server three times with ``identity_fp32_logging`` (which logs at each
level in initialize, twice in execute, and in finalize) and default log settings: as
they are, with ``log_verbose_level`` 1, and with ``log_info``, ``log_warning`` and
``log_error`` off, each changed through ``POST /v2/logging`` once the server is ready;
then ``logging_test.py`` infers once, the server stops, and it counts the lines of each
level's message in the server's log (``grep -c``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import (
    BACKEND_DIR,
    CLIENT_ENV,
    _python_model,
    _shm_pages_unchanged,
)

pytestmark = pytest.mark.slow

MESSAGES = ("Specific Msg!", "Info Msg!", "Warning Msg!", "Error Msg!")

# test.sh's three servers: the settings it posts, and verify_log_counts' counts
# (non-verbose, verbose): initialize, two executes and finalize; verbose once the level
# is 1 (initialize's came before); with every level off, initialize's only
SUBTESTS = {
    "default": ([], (4, 0)),
    "verbose": ([{"log_verbose_level": 1}], (4, 3)),
    "disabled": ([{"log_info": False}, {"log_warning": False}, {"log_error": False}], (1, 0)),
}

_POST = """
import sys, urllib.request
request = urllib.request.Request("http://localhost:8000/v2/logging", data=sys.argv[1].encode())
with urllib.request.urlopen(request, timeout=10) as answer:
    print(answer.status, answer.read().decode())
"""


def _post_logging(host: LoopbackHost, setting: dict[str, object]) -> str:
    """test.sh's ``curl -d'SETTING' localhost:8000/v2/logging``, which must answer 200."""
    posted = subprocess.run(
        host.command([sys.executable, "-c", _POST, json.dumps(setting)]),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert posted.returncode == 0 and posted.stdout.startswith("200 "), (
        f"Could not Change Log Settings: {posted.stdout}{posted.stderr}"
    )
    return posted.stdout


def _counts(log: str) -> tuple[list[int], int]:
    """verify_log_counts: each message's lines (``grep -c``), and the verbose one's."""
    lines = log.splitlines()
    return [sum(m in line for line in lines) for m in MESSAGES], sum(
        "Verbose Msg!" in line for line in lines
    )


@pytest.mark.parametrize(
    "subtest",
    [
        pytest.param("default", marks=pytest.mark.triton_qa_full),
        pytest.param("verbose", marks=pytest.mark.triton_qa_full),
        "disabled",
    ],
)
def test_logging(host: LoopbackHost, tmp_path: Path, subtest: str) -> None:
    """One of logging/test.sh's servers: its settings posted once it is ready, then
    logging_test.py, then the counts of the server's log after it stopped. The default
    run takes "disabled" (the settings change after initialize logged, and finalize's
    records are dropped)."""
    work = harness.work_directory(tmp_path, "L0_backend_python/logging")
    _python_model(work, "identity_fp32_logging")
    args = [f"--model-repository={work / 'models'}", f"--backend-directory={BACKEND_DIR}"]
    settings, (non_verbose, verbose) = SUBTESTS[subtest]
    with host.own_shm(tmp_path / "shm") as shm, _shm_pages_unchanged(shm):
        with harness.tritonserver(host, args, work / "logging_server.log", cwd=work) as server:
            for setting in settings:
                _post_logging(host, setting)
            run = harness.run_qa_file(host, work, "logging_test.py", env=CLIENT_ENV,
                                      pytest_style=True)  # fmt: skip
            run.check(count=1)
        log = server.log()
    assert _counts(log) == ([non_verbose] * len(MESSAGES), verbose), log[-6000:]
