"""The host's CPU series, as Triton exports them even without a GPU.

``nv_cpu_utilization`` (0.0 - 1.0, over the time since the previous scrape),
``nv_cpu_memory_total_bytes`` and ``nv_cpu_memory_used_bytes`` (total less what
is available, as Triton reads /proc/meminfo). Triton's dashboards chart them.
"""

from __future__ import annotations

from collections.abc import Iterator

import psutil
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class HostCollector(Collector):
    def __init__(self) -> None:
        psutil.cpu_percent(interval=None)  # the first reading only starts the interval

    def collect(self) -> Iterator[Metric]:
        memory = psutil.virtual_memory()
        yield GaugeMetricFamily(
            "nv_cpu_utilization",
            "CPU utilization rate [0.0 - 1.0]",
            value=psutil.cpu_percent(interval=None) / 100.0,
        )
        yield GaugeMetricFamily(
            "nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes", value=memory.total
        )
        yield GaugeMetricFamily(
            "nv_cpu_memory_used_bytes",
            "CPU used memory (RAM), in bytes",
            value=memory.total - memory.available,
        )
