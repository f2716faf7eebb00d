"""The GPUs' series through NVML: Triton's names and labels where a GPU is (marked gpu),
and none, with the reason logged, where there is none."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import generate_latest

from modelyard.hardware.gpu_metrics import gpu_collector
from modelyard.metrics import make_registry
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.manager import ModelManager
from tests.support.servers import metric_samples

GPU_SERIES = (
    "nv_gpu_utilization",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_power_usage",
    "nv_gpu_power_limit",
)


def _nvml_sees_a_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        return bool(pynvml.nvmlDeviceGetCount())
    except Exception:
        return False


def test_without_a_gpu_there_are_no_gpu_series(tmp_path: Path) -> None:
    if _nvml_sees_a_gpu():
        pytest.skip("this host has a GPU: the gpu-marked test below covers it")
    assert gpu_collector() is None
    manager = ModelManager(ModelRepository(tmp_path))
    samples = metric_samples(generate_latest(make_registry(manager, gpu_metrics=True)).decode())
    assert not any(name.startswith(("nv_gpu_", "nv_energy")) for name, _ in samples)
    assert ("nv_cpu_utilization", ()) in samples  # the CPU series stay


@pytest.mark.gpu
def test_each_gpu_has_tritons_series_labelled_by_its_uuid(tmp_path: Path) -> None:
    if not _nvml_sees_a_gpu():
        pytest.skip("needs an NVIDIA GPU and its driver's NVML")
    manager = ModelManager(ModelRepository(tmp_path))
    text = generate_latest(make_registry(manager, gpu_metrics=True)).decode()
    samples = metric_samples(text)
    for name in GPU_SERIES:
        series = [labels for sample, labels in samples if sample == name]
        assert series and all(dict(labels)["gpu_uuid"].startswith("GPU-") for labels in series)
    for labels in (labels for name, labels in samples if name == "nv_gpu_utilization"):
        assert 0.0 <= samples[("nv_gpu_utilization", labels)] <= 1.0
        total = samples[("nv_gpu_memory_total_bytes", labels)]
        assert 0 < samples[("nv_gpu_memory_used_bytes", labels)] <= total
    off = metric_samples(generate_latest(make_registry(manager, gpu_metrics=False)).decode())
    assert not any(name.startswith("nv_gpu_") for name, _ in off)
