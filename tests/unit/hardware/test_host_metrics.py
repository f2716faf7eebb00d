"""The host's CPU series: Triton's names, values in range, and off when asked."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest

from modelyard.metrics import make_registry
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.manager import ModelManager
from tests.support.servers import metric_samples


def test_the_cpu_series_are_there_and_can_be_turned_off(tmp_path: Path) -> None:
    manager = ModelManager(ModelRepository(tmp_path))
    on = metric_samples(generate_latest(make_registry(manager)).decode())
    assert 0.0 <= on[("nv_cpu_utilization", ())] <= 1.0
    total = on[("nv_cpu_memory_total_bytes", ())]
    used = on[("nv_cpu_memory_used_bytes", ())]
    assert total > 0 and 0 < used < total
    off = metric_samples(generate_latest(make_registry(manager, cpu_metrics=False)).decode())
    assert not any(name.startswith("nv_cpu_") for name, _ in off)
