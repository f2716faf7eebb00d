"""Triton's qa/L0_client_memory_growth, its Python half: the Python client's memory over
10,000 requests a protocol, each on a client of its own, under valgrind's massif.

As its test.sh (nightly repetitions): for HTTP and gRPC, a server on the folder's
``custom_identity_int32`` (Triton's identity backend), then ``memory_growth_test.py -r
10000 -i PROTOCOL`` under ``valgrind --max-threads=3000 --tool=massif --time-unit=B``;
it must end 0, ``check_valgrind_log.py`` must find no definite leak in valgrind's log, and
``check_massif_log.py`` must find the heap's growth under 1 MB. The client's memory is
what is measured; the server answers 10,000 connections a protocol, each opened and
closed for one request. Its C++ half (``memory_leak_test``) is not built here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = [
    pytest.mark.slow,
    pytest.mark.triton_qa_full,
    pytest.mark.timeout(900),
    pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (apt)"),
]

REPETITIONS = "10000"  # test.sh's REPETITION_PY outside its weekly runs
MAX_ALLOWED_ALLOC_MB = "1"  # test.sh's, for the Python client


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_client_memory_growth(host: LoopbackHost, tmp_path: Path, protocol: str) -> None:
    work = harness.work_directory(tmp_path, "L0_client_memory_growth")
    (work / "models" / "custom_identity_int32" / "1").mkdir(parents=True, exist_ok=True)
    leakcheck_log = work / f"valgrind.{protocol}.python.log"
    massif = work / f"{protocol}.python.massif"
    valgrind = [
        "valgrind", "--max-threads=3000", "--tool=massif", "--time-unit=B",
        f"--log-file={leakcheck_log}", f"--massif-out-file={massif}",
    ]  # fmt: skip
    client = harness.CLIENT_EXAMPLES / "memory_growth_test.py"
    args = [f"--model-repository={work / 'models'}"]
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=work):
        done = subprocess.run(
            host.command([*valgrind, sys.executable, str(client), "-r", REPETITIONS,
                          "-i", protocol]),
            cwd=work, env=harness.environment(), capture_output=True, text=True, timeout=800,
        )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    common = work.parent / "common"
    leaks = subprocess.run(
        [sys.executable, str(common / "check_valgrind_log.py"), "-f", str(leakcheck_log)],
        cwd=work, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert leaks.returncode == 0, leaks.stdout + leaks.stderr
    growth = subprocess.run(
        [sys.executable, str(common / "check_massif_log.py"), str(massif), MAX_ALLOWED_ALLOC_MB],
        cwd=work, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert growth.returncode == 0, growth.stdout + growth.stderr
    assert "Change in memory allocation" in growth.stdout  # the check ran on enough snapshots
