"""Prometheus metrics, read from the servers' own counters at scrape time.

Triton's ``nv_inference_*`` names and labels are kept exactly as Triton writes
them, counters without a ``_total`` suffix, so existing dashboards keep
working. prometheus_client insists on ``_total`` in a counter's TYPE line, so
that block is written by ``triton_text``, and python models' own metrics
(``pb_utils.MetricFamily``, engines/python_metrics.py) after it; modelyard's own
histograms and gauges (``modelyard_*``) go through prometheus_client. Collection happens only
when Prometheus scrapes: the request path touches no metrics library. The
guard chain's decisions are read on the event loop, which owns them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from modelyard import __version__, error_rules
from modelyard.engines.python_metrics import MODEL_METRICS
from modelyard.errors import ConfigError, listen_failure
from modelyard.governance.cluster import ClusterQpsGuard
from modelyard.governance.runtime import Governance
from modelyard.hardware.gpu_metrics import gpu_collector
from modelyard.hardware.host_metrics import HostCollector
from modelyard.modelfiles.repository import NAMESPACE_MARK
from modelyard.server.manager import ModelManager
from modelyard.server.model_version import ModelVersion
from modelyard.server.stats import Histogram

# (name, help, the VersionStats field it reads); Triton writes the *_ns fields in microseconds
_TRITON_COUNTERS: list[tuple[str, str, str]] = [
    (
        "nv_inference_request_success",
        "Number of successful inference requests, all batch sizes",
        "success_count",
    ),
    (
        "nv_inference_count",
        "Number of inferences performed (rows, not requests)",
        "inference_count",
    ),
    (
        "nv_inference_exec_count",
        "Number of model executions performed (batches)",
        "execution_count",
    ),
    (
        "nv_inference_request_duration_us",
        "Cumulative inference request duration in microseconds",
        "success_ns",
    ),
    (
        "nv_inference_queue_duration_us",
        "Cumulative inference queuing duration in microseconds",
        "queue_ns",
    ),
    (
        "nv_inference_compute_input_duration_us",
        "Cumulative compute input duration in microseconds",
        "compute_input_ns",
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "Cumulative compute inference duration in microseconds",
        "compute_infer_ns",
    ),
    (
        "nv_inference_compute_output_duration_us",
        "Cumulative inference compute output duration in microseconds",
        "compute_output_ns",
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


_TRITON_SUMMARIES = {
    "request": ("nv_inference_request_summary_us", "Summary of inference request duration"),
    "queue": ("nv_inference_queue_summary_us", "Summary of inference queuing duration"),
    "compute_input": (
        "nv_inference_compute_input_summary_us",
        "Summary of compute input duration",
    ),
    "compute_infer": (
        "nv_inference_compute_infer_summary_us",
        "Summary of compute inference duration",
    ),
    "compute_output": (
        "nv_inference_compute_output_summary_us",
        "Summary of inference compute output duration",
    ),
    "cache_hit": ("nv_cache_hit_summary_per_model", "Summary of cache hit durations per model"),
    "cache_miss": (
        "nv_cache_miss_summary_per_model",
        "Summary of cache miss (lookup and insert) durations per model",
    ),
}
_CACHE_SUMMARIES = frozenset({"cache_hit", "cache_miss"})
_LATENCY_COUNTERS = frozenset(
    name for name, _, _ in _TRITON_COUNTERS if name.endswith("_duration_us")
)


def _counter_value(mv: ModelVersion, field: str) -> float:
    value = getattr(mv.scheduler.stats, field)
    return value / 1000 if field.endswith("_ns") else float(value)


Labels = Callable[[ModelVersion], dict[str, str]]


def _triton_labels(manager: ModelManager) -> Labels:
    """Triton's labels of a version's series: its model and version, and with namespacing
    the repository it is from (``namespace``, as given on the command line) beside the
    model's bare name."""
    if not manager.repository.namespacing:
        return _labels
    known: dict[str, dict[str, str]] = {}

    def labels(mv: ModelVersion) -> dict[str, str]:
        model = known.get(mv.name)
        if model is None:
            root = manager.repository_of(mv.name)
            model = {"model": mv.name.partition(NAMESPACE_MARK)[0]}
            if root is not None:
                model["namespace"] = str(root)
            known[mv.name] = model
        return {**model, "version": str(mv.version)}

    return labels


def triton_metrics(manager: ModelManager, counter_latencies: bool = True) -> Iterator[Metric]:
    versions = manager.all_versions()
    labels = _triton_labels(manager)
    for name, doc, field in _TRITON_COUNTERS:
        if not counter_latencies and name in _LATENCY_COUNTERS:
            continue
        metric = Metric(name, doc, "counter")
        for mv in versions:
            metric.add_sample(name, labels(mv), _counter_value(mv, field))
        yield metric
    yield from _summaries(versions, labels)
    failures = Metric(
        "nv_inference_request_failure", "Number of failed inference requests", "counter"
    )
    for mv in versions:
        by_reason = mv.scheduler.stats.fail_by_reason
        for reason in _FAILURE_REASONS:
            failures.add_sample(
                "nv_inference_request_failure",
                {**labels(mv), "reason": reason},
                float(by_reason.get(reason, 0)),
            )
    yield failures
    pending = Metric(
        "nv_inference_pending_request_count",
        "Instantaneous number of pending requests awaiting execution per-model",
        "gauge",
    )
    for mv in versions:  # Triton's: the requests still queued, not those executing
        pending.add_sample(
            "nv_inference_pending_request_count", labels(mv), float(mv.scheduler.queued)
        )
    yield pending
    if counter_latencies:  # as Triton: the cache's counters are latency counters
        yield from _cache_metrics(versions, labels)


_CACHE_METRICS = (
    ("nv_cache_num_hits_per_model", "Number of cache hits per model", "counter",
     lambda s: s.cache_hit_count),
    ("nv_cache_num_misses_per_model", "Number of cache misses per model", "counter",
     lambda s: s.cache_miss_count),
    ("nv_cache_hit_duration_per_model", "Total cache hit duration per model, in microseconds",
     "counter", lambda s: s.cache_hit_ns // 1000),
    ("nv_cache_miss_duration_per_model",
     "Total cache miss (insert+lookup) duration per model, in microseconds", "counter",
     lambda s: s.cache_miss_ns // 1000),
)  # fmt: skip


def _cache_metrics(versions: list[ModelVersion], labels: Labels) -> Iterator[Metric]:
    """Triton's response cache series, for the versions that use the cache."""
    cached = [mv for mv in versions if _cached(mv)]
    if not cached:
        return
    for name, doc, kind, read in _CACHE_METRICS:
        metric = Metric(name, doc, kind)
        for mv in cached:
            metric.add_sample(name, labels(mv), float(read(mv.scheduler.stats)))
        yield metric


def _summaries(versions: list[ModelVersion], labels_of: Labels) -> Iterator[Metric]:
    """Triton's latency summaries of the versions that keep them (summary_latencies=true):
    a version with the response cache has the cache's two, and (as Triton's, DLIS-4762)
    not the request duration's."""
    kept = [mv for mv in versions if mv.scheduler.stats.summaries is not None]
    if not kept:
        return
    now_ns = time.monotonic_ns()
    for key, (name, doc) in _TRITON_SUMMARIES.items():
        metric = Metric(name, f"{doc} in microseconds", "summary")
        for mv in kept:
            if not _summarised(mv, key):
                continue
            stats = mv.scheduler.stats
            summaries = stats.summaries
            assert summaries is not None
            labels = labels_of(mv)
            with stats.lock:
                series = summaries.series[key]
                values = series.quantiles(now_ns, summaries.quantiles)
                count, total = series.count, series.sum
            for quantile, value in zip(summaries.quantiles, values, strict=True):
                metric.add_sample(name, {**labels, "quantile": repr(quantile)}, value)
            metric.add_sample(f"{name}_count", labels, float(count))
            metric.add_sample(f"{name}_sum", labels, total)
        if metric.samples:  # a family no version keeps is not written, as Triton's
            yield metric


def _cached(mv: ModelVersion) -> bool:
    return getattr(mv.scheduler, "cache", None) is not None


def _summarised(mv: ModelVersion, key: str) -> bool:
    """Whether a version keeps ``key``'s summary: the cache's with the response cache, the
    request duration's without it (Triton's, DLIS-4762), the others always."""
    if key in _CACHE_SUMMARIES:
        return _cached(mv)
    return key != "request" or not _cached(mv)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def triton_text(manager: ModelManager, counter_latencies: bool = True) -> str:
    """The nv_inference_* block in Prometheus text format, names exactly as Triton's."""
    return _as_triton(triton_metrics(manager, counter_latencies))


def _as_triton(metrics: Iterable[Metric]) -> str:
    """Series as Triton writes them: its numbers plain (prometheus_client writes
    1.7e+09 for a memory gauge, which Triton's QA reads digit by digit)."""
    lines: list[str] = []
    for metric in metrics:
        lines.append(f"# HELP {metric.name} {metric.documentation}")
        lines.append(f"# TYPE {metric.name} {metric.type}")
        for sample in metric.samples:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(sample.labels.items()))
            lines.append(f"{sample.name}{{{labels}}} {sample.value!r}" if labels
                         else f"{sample.name} {sample.value!r}")  # fmt: skip
    return "".join(f"{line}\n" for line in lines)


def _token_metrics(versions: list[ModelVersion]) -> Iterator[Metric]:
    """An encoder's tokens (batched by tokens), and a text model's embedding cache."""
    encoders = [mv for mv in versions if mv.tokens is not None]
    tokens = CounterMetricFamily(
        "modelyard_tokens",
        "Tokens an encoder's executions computed: real (the rows' own) or padded (what ran)",
        labels=["model", "version", "kind"],
    )
    cache = CounterMetricFamily(
        "modelyard_embedding_cache_lookups",
        "Texts a text model's embedding cache answered (hit) or not (miss)",
        labels=["model", "version", "result"],
    )
    cache_bytes = GaugeMetricFamily(
        "modelyard_embedding_cache_bytes",
        "Memory a text model's embedding cache holds, and its budget",
        labels=["model", "version", "kind"],
    )
    for mv in encoders:
        stats = mv.scheduler.stats
        labels = [mv.name, str(mv.version)]
        tokens.add_metric([*labels, "real"], stats.tokens_real)
        tokens.add_metric([*labels, "padded"], stats.tokens_padded)
        assert mv.tokens is not None
        kept = mv.tokens.cache
        if kept is not None:
            cache.add_metric([*labels, "hit"], stats.text_cache_hits)
            cache.add_metric([*labels, "miss"], stats.text_cache_misses)
            cache_bytes.add_metric([*labels, "used"], kept.bytes)
            cache_bytes.add_metric([*labels, "budget"], kept.budget_bytes)
    yield tokens
    yield _histogram(
        "modelyard_padding_ratio",
        "Padded tokens over real tokens, per execution of an encoder batched by tokens",
        lambda mv: mv.scheduler.stats.padding_ratio,
        encoders,
    )
    yield cache
    yield cache_bytes


def _residency_metrics(manager: ModelManager) -> Iterator[Metric]:
    """serve --model-residency: loads, unloads to make room, waits for loads, residents."""
    residency = manager.residency
    if residency is None:
        return
    models = sorted(residency.models.values(), key=lambda m: m.name)
    loads = CounterMetricFamily(
        "modelyard_model_loads", "Loads of each model while residency is on", labels=["model"]
    )
    evictions = CounterMetricFamily(
        "modelyard_model_evictions",
        "Unloads of each idle model to make room for another (least recently used first)",
        labels=["model"],
    )
    resident = GaugeMetricFamily(
        "modelyard_model_resident", "1 while a model is loaded, 0 otherwise", labels=["model"]
    )
    loaded = {mv.name for mv in manager.all_versions()}
    held = manager.resident_bytes()
    for state in models:
        loads.add_metric([state.name], state.loads)
        evictions.add_metric([state.name], state.evictions)
        resident.add_metric([state.name], 1.0 if state.name in loaded else 0.0)
    yield loads
    yield evictions
    yield resident
    wait = HistogramMetricFamily(
        "modelyard_model_load_wait_seconds",
        "How long requests waited for their model to load",
        labels=["model"],
    )
    for state in models:
        hist = state.load_wait
        wait.add_metric([state.name], hist.cumulative(), sum_value=hist.total)
    yield wait
    memory = GaugeMetricFamily(
        "modelyard_residency_bytes",
        "What the resident models hold (as residency counts it), and the memory budget",
        labels=["kind"],
    )
    memory.add_metric(["held"], float(sum(held.values())))
    memory.add_metric(["budget"], float(residency.budget))
    yield memory


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
        yield from _token_metrics(versions)
        yield from _residency_metrics(self.manager)
        memory = Metric(
            "modelyard_model_memory_bytes",
            "Host memory each loaded model version took at load (the process' anonymous and "
            "shared-memory pages' growth)",
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


def _governance_snapshot(governance: Governance) -> dict[str, Any]:
    doc = governance.live_stats()
    doc["cluster"] = [
        (guard.in_fallback, guard.fallback_decisions)
        for guard in governance.chain.guards
        if isinstance(guard, ClusterQpsGuard)
    ]
    return doc


class GovernanceCollector(Collector):
    """Every decision of the guard chain: admitted, rejected by rule, fallbacks, breakers."""

    def __init__(self, governance: Governance, loop: asyncio.AbstractEventLoop) -> None:
        self.governance = governance
        self.loop = loop

    def collect(self) -> Iterator[Metric]:
        async def snapshot() -> dict[str, Any]:
            return _governance_snapshot(self.governance)

        # the chain's counters change on the event loop: read them there
        if self.loop.is_closed():  # the server is stopping
            return
        try:
            future = asyncio.run_coroutine_threadsafe(snapshot(), self.loop)
        except RuntimeError:  # closed since the check
            return
        try:
            doc = future.result(timeout=2.0)
        except concurrent.futures.TimeoutError:
            future.cancel()  # a loop too busy or stopped: this scrape has no governance series
            return
        service = doc["service"]
        admitted = CounterMetricFamily(
            "modelyard_governance_admitted",
            "Calls the guard chain admitted",
            labels=["service", "interface"],
        )
        for interface, count in sorted(doc["admitted"].items()):
            admitted.add_metric([service, interface], count)
        yield admitted
        for name, key, help_text in (
            ("modelyard_governance_rejected", "rejected", "Calls the guard chain refused"),
            ("modelyard_governance_fallbacks", "fallbacks", "Calls answered by a fallback"),
        ):
            family = CounterMetricFamily(name, help_text, labels=["service", "interface", "rule"])
            for interface, by_rule in sorted(doc[key].items()):
                for rule, count in sorted(by_rule.items()):
                    family.add_metric([service, interface, rule], count)
            yield family
        breakers = GaugeMetricFamily(
            "modelyard_breaker_state",
            "1 for the state each circuit breaker is in",
            labels=["service", "rule", "interface", "model", "state"],
        )
        for breaker in doc["breakers"]:
            labels = [breaker["interface"] or "", breaker["model"] or "", breaker["state"]]
            breakers.add_metric([service, breaker["rule"], *labels], 1.0)
        yield breakers
        in_fallback = GaugeMetricFamily(
            "modelyard_cluster_limit_fallback",
            "1 while Redis is unreachable and cluster-qps is enforced per instance",
            labels=["service"],
        )
        decisions = CounterMetricFamily(
            "modelyard_cluster_limit_fallback_decisions",
            "Calls cluster-qps decided locally because Redis was unreachable",
            labels=["service"],
        )
        for fallback, count in doc["cluster"]:
            in_fallback.add_metric([service], 1.0 if fallback else 0.0)
            decisions.add_metric([service], count)
        yield in_fallback
        yield decisions


def make_registry(
    manager: ModelManager,
    governance: Governance | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    cpu_metrics: bool = True,
    gpu_metrics: bool = False,
) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ModelServerCollector(manager))
    if cpu_metrics:
        registry.register(HostCollector())
    if gpu_metrics:
        gpus = gpu_collector()
        if gpus is not None:
            registry.register(gpus)
    if governance is not None and loop is not None:
        registry.register(GovernanceCollector(governance, loop))
    return registry


class _Families:
    """Metric families already collected, as ``generate_latest`` reads a registry."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def metrics_text(
    manager: ModelManager, registry: CollectorRegistry, counter_latencies: bool = True
) -> bytes:
    """The whole page: Triton's series (its own ``nv_*``, the host's and the GPUs') as
    Triton writes them, then the models' own and modelyard's."""
    families = list(registry.collect())
    tritons = [family for family in families if family.name.startswith("nv_")]
    others = [family for family in families if not family.name.startswith("nv_")]
    text = triton_text(manager, counter_latencies) + _as_triton(tritons) + MODEL_METRICS.text()
    return text.encode() + generate_latest(_Families(others))


def serve_metrics(
    manager: ModelManager,
    host: str,
    port: int,
    governance: Governance | None = None,
    cpu_metrics: bool = True,
    counter_latencies: bool = True,
    gpu_metrics: bool = True,
) -> MetricsServer:
    """Serve /metrics from a background thread until ``close()``. Call it on the
    event loop that serves requests (it reads the guard chain's counters there).
    ``cpu_metrics``: the host's CPU series (tritonserver's --allow-cpu-metrics);
    ``gpu_metrics``: the GPUs' series where NVML sees any (--allow-gpu-metrics);
    ``counter_latencies``: the nv_inference_*_duration_us counters (--metrics-config)."""
    loop = asyncio.get_running_loop() if governance is not None else None
    registry = make_registry(manager, governance, loop, cpu_metrics, gpu_metrics)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if environ.get("PATH_INFO") not in ("/metrics", "/"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"only /metrics is served here\n"]
        body = metrics_text(manager, registry, counter_latencies)
        start_response(
            "200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))]
        )
        return [body]

    try:
        server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
    except OSError as exc:
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        in_use = exc.errno == errno.EADDRINUSE
        raise ConfigError.of(
            error_rules.METRICS_PORT,
            listen_failure("Metrics", address, in_use, exc.strerror or str(exc)),
        ) from None
    # a short poll: close() waits for serve_forever to see the request (0.5 s by default)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="metrics", daemon=True
    ).start()
    return MetricsServer(server)


class MetricsServer:
    """The /metrics server's thread: its port, and ``close()`` to stop it and free the port."""

    def __init__(self, server: ThreadingWSGIServer) -> None:
        self._server = server
        self.port = int(server.server_port)

    def close(self) -> None:
        self._server.shutdown()  # waits for serve_forever to return
        self._server.server_close()


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None
