"""Prometheus metrics, read from the servers' own counters at scrape time.

Triton's ``nv_inference_*`` names and labels are kept exactly as Triton writes
them, counters without a ``_total`` suffix, so existing dashboards keep
working. prometheus_client insists on ``_total`` in a counter's TYPE line, so
that block is written by ``triton_text``; modelyard's own histograms and
gauges (``modelyard_*``) go through prometheus_client. Collection happens only
when Prometheus scrapes: the request path touches no metrics library.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from modelyard import __version__
from modelyard.server.manager import ModelManager
from modelyard.server.model_version import ModelVersion
from modelyard.server.stats import Histogram

_TRITON_COUNTERS: list[tuple[str, str, Callable[[ModelVersion], float]]] = [
    (
        "nv_inference_request_success",
        "Number of successful inference requests, all batch sizes",
        lambda mv: mv.scheduler.stats.success_count,
    ),
    (
        "nv_inference_count",
        "Number of inferences performed (rows, not requests)",
        lambda mv: mv.scheduler.stats.inference_count,
    ),
    (
        "nv_inference_exec_count",
        "Number of model executions performed (batches)",
        lambda mv: mv.scheduler.stats.execution_count,
    ),
    (
        "nv_inference_request_duration_us",
        "Cumulative inference request duration in microseconds",
        lambda mv: mv.scheduler.stats.success_ns / 1000,
    ),
    (
        "nv_inference_queue_duration_us",
        "Cumulative inference queuing duration in microseconds",
        lambda mv: mv.scheduler.stats.queue_ns / 1000,
    ),
    (
        "nv_inference_compute_input_duration_us",
        "Cumulative compute input duration in microseconds",
        lambda mv: mv.scheduler.stats.compute_input_ns / 1000,
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "Cumulative compute inference duration in microseconds",
        lambda mv: mv.scheduler.stats.compute_infer_ns / 1000,
    ),
    (
        "nv_inference_compute_output_duration_us",
        "Cumulative inference compute output duration in microseconds",
        lambda mv: mv.scheduler.stats.compute_output_ns / 1000,
    ),
]

_FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def _labels(mv: ModelVersion) -> dict[str, str]:
    return {"model": mv.name, "version": str(mv.version)}


def _histogram(
    name: str, doc: str, pick: Callable[[ModelVersion], Histogram], versions: Iterable[ModelVersion]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=["model", "version"])
    for mv in versions:
        hist = pick(mv)
        family.add_metric([mv.name, str(mv.version)], hist.cumulative(), sum_value=hist.total)
    return family


def triton_metrics(manager: ModelManager) -> Iterator[Metric]:
    versions = manager.all_versions()
    for name, doc, read in _TRITON_COUNTERS:
        metric = Metric(name, doc, "counter")
        for mv in versions:
            metric.add_sample(name, _labels(mv), float(read(mv)))
        yield metric
    failures = Metric(
        "nv_inference_request_failure", "Number of failed inference requests", "counter"
    )
    for mv in versions:
        by_reason = mv.scheduler.stats.fail_by_reason
        for reason in _FAILURE_REASONS:
            failures.add_sample(
                "nv_inference_request_failure",
                {**_labels(mv), "reason": reason},
                float(by_reason.get(reason, 0)),
            )
    yield failures
    pending = Metric(
        "nv_inference_pending_request_count",
        "Instantaneous number of pending requests awaiting execution per-model",
        "gauge",
    )
    for mv in versions:
        pending.add_sample(
            "nv_inference_pending_request_count", _labels(mv), float(mv.scheduler.pending)
        )
    yield pending


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def triton_text(manager: ModelManager) -> str:
    """The nv_inference_* block in Prometheus text format, names exactly as Triton's."""
    lines: list[str] = []
    for metric in triton_metrics(manager):
        lines.append(f"# HELP {metric.name} {metric.documentation}")
        lines.append(f"# TYPE {metric.name} {metric.type}")
        for sample in metric.samples:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(sample.labels.items()))
            lines.append(f"{sample.name}{{{labels}}} {sample.value!r}")
    return "\n".join(lines) + "\n"


class ModelServerCollector(Collector):
    def __init__(self, manager: ModelManager) -> None:
        self.manager = manager

    def collect(self) -> Iterator[Metric]:
        versions = self.manager.all_versions()
        yield _histogram(
            "modelyard_request_duration_seconds",
            "Time of each successful request, from queueing to its results",
            lambda mv: mv.scheduler.stats.request_seconds,
            versions,
        )
        yield _histogram(
            "modelyard_queue_duration_seconds",
            "Time requests spent queued before execution",
            lambda mv: mv.scheduler.stats.queue_seconds,
            versions,
        )
        yield _histogram(
            "modelyard_compute_duration_seconds",
            "Time of the execution that computed each request (input + infer + output)",
            lambda mv: mv.scheduler.stats.compute_seconds,
            versions,
        )
        yield _histogram(
            "modelyard_batch_size",
            "Rows per model execution",
            lambda mv: mv.scheduler.stats.batch_size,
            versions,
        )
        memory = Metric(
            "modelyard_model_memory_bytes",
            "Host memory each loaded model version took at load (RSS delta)",
            "gauge",
        )
        for mv in versions:
            memory.add_sample("modelyard_model_memory_bytes", _labels(mv), float(mv.memory_bytes))
        yield memory
        device_memory = Metric(
            "modelyard_model_device_memory_bytes",
            "GPU memory each loaded model version took at load on its devices",
            "gauge",
        )
        for mv in versions:
            device_memory.add_sample(
                "modelyard_model_device_memory_bytes", _labels(mv), float(mv.device_memory_bytes)
            )
        yield device_memory
        state = Metric(
            "modelyard_model_version_state", "1 for the state each model version is in", "gauge"
        )
        for row in self.manager.index():
            if "state" in row:
                state.add_sample(
                    "modelyard_model_version_state",
                    {
                        "model": row["name"],
                        "version": row.get("version", ""),
                        "state": row["state"],
                    },
                    1.0,
                )
        yield state
        info = Metric("modelyard_build", "modelyard version", "info")
        info.add_sample("modelyard_build_info", {"version": __version__}, 1.0)
        yield info


def make_registry(manager: ModelManager) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ModelServerCollector(manager))
    return registry


def metrics_text(manager: ModelManager, registry: CollectorRegistry) -> bytes:
    return triton_text(manager).encode() + generate_latest(registry)


def serve_metrics(manager: ModelManager, host: str, port: int) -> int:
    """Serve /metrics from a background thread; returns the bound port."""
    registry = make_registry(manager)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if environ.get("PATH_INFO") not in ("/metrics", "/"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"only /metrics is served here\n"]
        body = metrics_text(manager, registry)
        start_response(
            "200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))]
        )
        return [body]

    server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return int(server.server_port)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None
