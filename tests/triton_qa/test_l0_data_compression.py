"""Triton's qa/L0_data_compression: HTTP requests and responses compressed with deflate
or gzip (``Content-Encoding`` / ``Accept-Encoding``), through tritonclient's examples.

As its test.sh: one server on the example ``simple`` (``--model-repository`` alone), then
``simple_http_infer_client.py`` and ``simple_http_aio_infer_client.py`` with ``-v`` and
each pair of request and response algorithms that differ (deflate, gzip, none): twelve
runs, each of which must end 0 (the examples check their answers; their replies are
under a kilobyte, which modelyard sends uncompressed: docs/triton-qa.md). Its C++ halves
(``data_compressor_test``, the C++ client) are not built here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

CLIENTS = ("simple_http_infer_client.py", "simple_http_aio_infer_client.py")
ALGORITHMS = ("deflate", "gzip", "")
RUNS = [
    (client, request, response)
    for client in CLIENTS
    for request in ALGORITHMS
    for response in ALGORITHMS
    if request != response
]


def test_data_compression(host: LoopbackHost, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    simple_add_sub(models)
    failed = []
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        for client, request, response in RUNS:
            args = ["-v"]
            if request:
                args += ["--request-compression-algorithm", request]
            if response:
                args += ["--response-compression-algorithm", response]
            done = harness.run_script(
                host, harness.CLIENT_EXAMPLES / client, *args, cwd=tmp_path
            )
            if done.returncode != 0:
                failed.append(f"{client} {args}: {(done.stdout + done.stderr)[-1500:]}")
    assert len(RUNS) == 12 and not failed, "\n".join(failed)
