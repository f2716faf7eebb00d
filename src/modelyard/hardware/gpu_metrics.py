"""Triton's GPU series, read through NVML where the host has NVIDIA GPUs.

``nv_gpu_utilization`` (0.0 - 1.0), ``nv_gpu_memory_total_bytes``,
``nv_gpu_memory_used_bytes``, ``nv_gpu_power_usage`` and ``nv_gpu_power_limit``
(watts) and ``nv_energy_consumption`` (joules since the server started), each
labelled with the GPU's ``gpu_uuid`` as Triton labels them. Triton reads them
through DCGM; NVML (``nvidia-ml-py``, the driver's own library) gives the same
readings without a DCGM daemon. A host without the driver or a GPU exports none
of them: ``gpu_collector()`` says why, once, and returns None.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import structlog
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = structlog.get_logger("modelyard.metrics")


class GpuCollector(Collector):
    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self._nvml = nvml
        self._devices = [(nvml.nvmlDeviceGetUUID(h), h) for h in handles]
        self._energy_at_start = {uuid: self._energy_mj(h) for uuid, h in self._devices}

    def _energy_mj(self, handle: Any) -> int | None:
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        except self._nvml.NVMLError:  # older GPUs do not count energy
            return None

    def collect(self) -> Iterator[Metric]:
        nvml = self._nvml
        families = {
            "nv_gpu_utilization": GaugeMetricFamily(
                "nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", labels=["gpu_uuid"]
            ),
            "nv_gpu_memory_total_bytes": GaugeMetricFamily(
                "nv_gpu_memory_total_bytes", "GPU total memory, in bytes", labels=["gpu_uuid"]
            ),
            "nv_gpu_memory_used_bytes": GaugeMetricFamily(
                "nv_gpu_memory_used_bytes", "GPU used memory, in bytes", labels=["gpu_uuid"]
            ),
            "nv_gpu_power_usage": GaugeMetricFamily(
                "nv_gpu_power_usage", "GPU power usage in watts", labels=["gpu_uuid"]
            ),
            "nv_gpu_power_limit": GaugeMetricFamily(
                "nv_gpu_power_limit", "GPU power management limit in watts", labels=["gpu_uuid"]
            ),
            "nv_energy_consumption": GaugeMetricFamily(
                "nv_energy_consumption",
                "GPU energy consumption in joules since the Triton Server started",
                labels=["gpu_uuid"],
            ),
        }
        for uuid, handle in self._devices:
            labels = [uuid]
            try:
                rates = nvml.nvmlDeviceGetUtilizationRates(handle)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                families["nv_gpu_utilization"].add_metric(labels, rates.gpu / 100.0)
                families["nv_gpu_memory_total_bytes"].add_metric(labels, memory.total)
                families["nv_gpu_memory_used_bytes"].add_metric(labels, memory.used)
                families["nv_gpu_power_usage"].add_metric(
                    labels, nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
                )
                families["nv_gpu_power_limit"].add_metric(
                    labels, nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0
                )
            except nvml.NVMLError as exc:  # a GPU that fell off the bus: its series go
                log.warning("gpu_metrics_unreadable", gpu_uuid=uuid, reason=str(exc))
                continue
            start, now = self._energy_at_start.get(uuid), self._energy_mj(handle)
            if start is not None and now is not None:
                families["nv_energy_consumption"].add_metric(labels, (now - start) / 1000.0)
        yield from families.values()


def gpu_collector() -> GpuCollector | None:
    """The collector of this host's GPUs, or None (logged once) where NVML has none."""
    try:
        import pynvml
    except ImportError:
        log.info("gpu_metrics_off", reason="nvidia-ml-py is not installed")
        return None
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    except pynvml.NVMLError as exc:
        log.info("gpu_metrics_off", reason=f"NVML: {exc}")
        return None
    if not handles:
        log.info("gpu_metrics_off", reason="NVML sees no GPU")
        return None
    return GpuCollector(pynvml, handles)
