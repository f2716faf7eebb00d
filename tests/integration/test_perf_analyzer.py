"""NVIDIA's perf_analyzer (the binary ``tritonclient[all]`` installs), unchanged, measures
modelyard over HTTP, gRPC, gRPC streaming and system shared memory, with the server-side
figures of the statistics extension.

perf_analyzer links two shared libraries no GPU is needed for: ``libb64.so.0d``
(Debian's ``libb64-0d``, which ``.ci/run`` installs) and ``libcudart.so.12`` (the
``nvidia-cuda-runtime-cu12`` wheel of the test extras, put on its ``LD_LIBRARY_PATH``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.models import simple_add_sub
from tests.support.perf_analyzer import PERF_ANALYZER, environment
from tests.support.servers import ServerProcess, running_server

pytestmark = pytest.mark.slow

# short windows: the check is that each mode runs and reports, not its figures
WINDOWS = ["--concurrency-range", "1", "--measurement-interval", "500", "-s", "100",
           "--max-trials", "5"]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    repository = tmp_path_factory.mktemp("models")
    simple_add_sub(repository)
    logs = tmp_path_factory.mktemp("logs")
    with running_server(repository, logs, "--allow-client-shm=true") as started:
        yield started


def _measured(*args: str) -> str:
    assert shutil.which(str(PERF_ANALYZER)), f"{PERF_ANALYZER} (tritonclient[all]) is missing"
    done = subprocess.run(
        [str(PERF_ANALYZER), "-m", "simple", *WINDOWS, *args],
        env=environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    return said


MODES = {
    "http": ["-i", "http"],
    "grpc": ["-i", "grpc"],
    "grpc-streaming": ["-i", "grpc", "--streaming"],
    "http-system-shared-memory": ["-i", "http", "--shared-memory", "system"],
    "grpc-async": ["-i", "grpc", "--async"],
}


@pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
def test_perf_analyzer_measures_each_protocol(server: ServerProcess, mode: list[str]) -> None:
    said = _measured(*mode, "-u", server.grpc_url if "grpc" in mode else server.http_url)
    assert "Throughput:" in said and "infer/sec" in said, said[-3000:]
    # the server side, from the statistics extension: counts, queue and compute times
    assert "Server:" in said and "Inference count:" in said, said[-3000:]
    assert "queue" in said and "compute infer" in said, said[-3000:]
