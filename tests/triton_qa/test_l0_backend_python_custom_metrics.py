"""Triton's qa/L0_backend_python/custom_metrics: a python model's own metrics.

custom_metrics/test.sh copies ``qa/python_models/custom_metrics`` into a repository,
starts the server and runs ``../test_infer_shm_leak.py`` with ``MODEL_NAME`` set: its one
request makes the model run its unittest cases of ``pb_utils.MetricFamily`` and
``Metric`` inside ``execute`` (counters, gauges and histograms, their argument checks and
errors, duplicates, a family deleted before its metric), each case reading the server's
``/metrics`` on port 8002 while the request is executing; the model answers 1 when all pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import _python_model, _run

pytestmark = pytest.mark.slow


@pytest.mark.triton_qa_full  # about 15 s: the model's three instances load first
def test_custom_metrics(host: LoopbackHost, tmp_path: Path) -> None:
    """custom_metrics/test.sh, as it runs: the model's unittest cases inside its execute."""
    work = harness.work_directory(tmp_path, "L0_backend_python/custom_metrics")
    shutil.copy(harness.QA / "L0_backend_python" / "test_infer_shm_leak.py", work.parent)
    _python_model(work, "custom_metrics")
    _run(host, tmp_path, work, "../test_infer_shm_leak.py", count=1,
         server_log="custom_metrics_server.log", env={"MODEL_NAME": "custom_metrics"})  # fmt: skip
