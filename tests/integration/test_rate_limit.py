"""Triton's rate limiter: ``--rate-limit execution_count`` with the resources that
instance groups name; executions that need more than there is take turns."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient

from tests.support.models import write_python_model
from tests.support.servers import server_in_process

# each execution says when it ran: [start, end] on the host's clock
STAMPED = """
import time

import numpy as np


class Model:
    def execute(self, inputs):
        start = time.time()
        time.sleep(0.15)
        rows = len(inputs["x"])
        return {"span": np.tile(np.array([start, time.time()], dtype=np.float64), (rows, 1))}
"""

CONFIG = """
backend: "python"
max_batch_size: 4
input [{{ name: "x" data_type: TYPE_FP32 dims: [ 1 ] }}]
output [{{ name: "span" data_type: TYPE_FP64 dims: [ 2 ] }}]
instance_group [{{
  count: 1
  kind: KIND_CPU
  rate_limiter {{ resources [{{ name: "R" count: {count} }}] priority: 1 }}
}}]
"""


def _spans(url: str, models: list[str]) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()

    def call(model: str) -> None:
        client = httpclient.InferenceServerClient(url)
        try:
            item = httpclient.InferInput("x", [1, 1], "FP32")
            item.set_data_from_numpy(np.ones((1, 1), dtype=np.float32))
            start, end = client.infer(model, [item]).as_numpy("span")[0]
            with lock:
                spans.append((float(start), float(end)))
        finally:
            client.close()

    threads = [threading.Thread(target=call, args=(model,)) for model in models]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return spans


def _overlaps(spans: list[tuple[float, float]]) -> bool:
    ordered = sorted(spans)
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(ordered))


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repository = tmp_path / "models"
    for name in ("first", "second", "third"):
        write_python_model(repository, name, STAMPED, CONFIG.format(count=1))
    return repository


@pytest.mark.slow
def test_models_that_need_the_one_resource_never_execute_at_once(repository: Path) -> None:
    with server_in_process(
        repository, "--rate-limit=execution_count", "--rate-limit-resource=R:1"
    ) as server:
        spans = _spans(server.http_url, ["first", "second", "third"] * 2)
    assert len(spans) == 6
    assert not _overlaps(spans)


@pytest.mark.slow
def test_two_of_the_resource_let_two_execute_at_once(repository: Path) -> None:
    with server_in_process(
        repository, "--rate-limit=execution_count", "--rate-limit-resource=R:2"
    ) as server:
        spans = _spans(server.http_url, ["first", "second", "third"])
    assert len(spans) == 3
    assert _overlaps(spans)
    ordered = sorted(spans)
    # never three at once: the third started after one of the first two ended
    assert ordered[2][0] >= min(ordered[0][1], ordered[1][1]) - 0.001


@pytest.mark.slow
def test_without_the_rate_limiter_the_resources_are_ignored(repository: Path) -> None:
    """As Triton: --rate-limit off (the default) leaves a config's rate_limiter unused."""
    with server_in_process(repository) as server:
        spans = _spans(server.http_url, ["first", "second", "third"])
    assert _overlaps(spans)
