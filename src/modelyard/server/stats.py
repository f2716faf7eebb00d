"""Per-version counters: Triton's statistics fields plus histograms.

Instance threads add to them under one small lock; the statistics API and the
Prometheus collector read them. Nothing on the request path talks to a
metrics library.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace

# upper bounds, seconds, for request, queue and compute time histograms
TIME_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
)  # fmt: skip
BATCH_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
PADDING_BUCKETS = (1.0, 1.05, 1.1, 1.15, 1.25, 1.5, 2.0, 3.0, 5.0)


@dataclass(slots=True)
class Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)  # one per bound, plus +Inf
    total: float = 0.0
    _bounds_ns: tuple[int, ...] = field(default=(), init=False, repr=False)  # for durations

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)
        self._bounds_ns = tuple(round(b * 1e9) for b in self.bounds)

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += times
        self.total += value * times

    def observe_since(self, starts_ns: list[int], end_ns: int, starts_total_ns: int) -> None:
        """Observe ``end_ns - start`` seconds for each start; ``starts_total_ns``: their sum."""
        counts = self.counts
        bounds_ns = self._bounds_ns
        for start in starts_ns:
            counts[bisect.bisect_left(bounds_ns, end_ns - start)] += 1
        self.total += (end_ns * len(starts_ns) - starts_total_ns) / 1e9

    @property
    def count(self) -> int:
        return sum(self.counts)

    def copy(self) -> Histogram:
        twin = Histogram(self.bounds)
        twin.counts = list(self.counts)
        twin.total = self.total
        return twin

    def cumulative(self) -> list[tuple[str, int]]:
        running = 0
        buckets = []
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
        return buckets


# Triton's default summary quantiles (--metrics-config summary_quantiles)
DEFAULT_QUANTILES = (0.5, 0.9, 0.95, 0.99, 0.999)
SUMMARY_WINDOW_S = 60.0  # quantiles are over the last minute, as prometheus-cpp's default
SUMMARY_SAMPLES_MAX = 8192  # per series: the window is bounded in memory too (~1 MB)


class SlidingSummary:
    """A summary's window of recent values for its quantiles, and its all-time count and sum."""

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self._recent: deque[tuple[int, float]] = deque(maxlen=SUMMARY_SAMPLES_MAX)

    def observe(self, now_ns: int, value: float, times: int = 1) -> None:
        self.count += times
        self.sum += value * times
        self._recent.extend((now_ns, value) for _ in range(times))

    def quantiles(self, now_ns: int, quantiles: tuple[float, ...]) -> list[float]:
        """Each quantile of the values of the last ``SUMMARY_WINDOW_S``; NaN when none."""
        horizon = now_ns - int(SUMMARY_WINDOW_S * 1e9)
        recent = self._recent
        while recent and recent[0][0] < horizon:
            recent.popleft()
        values = sorted(value for _, value in recent)
        if not values:
            return [float("nan")] * len(quantiles)
        last = len(values) - 1
        return [values[min(last, int(q * len(values)))] for q in quantiles]


class LatencySummaries:
    """Triton's latency summaries (``nv_inference_*_summary_us``), in microseconds."""

    SERIES = ("request", "queue", "compute_input", "compute_infer", "compute_output",
              "cache_hit", "cache_miss")  # fmt: skip

    def __init__(self, quantiles: tuple[float, ...] = DEFAULT_QUANTILES) -> None:
        self.quantiles = quantiles
        self.series = {name: SlidingSummary() for name in self.SERIES}

    def record(
        self,
        enqueued_ns: list[int],
        start_ns: int,
        end_ns: int,
        input_ns: int,
        infer_ns: int,
        output_ns: int,
    ) -> None:
        series = self.series
        for enqueued in enqueued_ns:
            series["request"].observe(end_ns, (end_ns - enqueued) / 1000)
            series["queue"].observe(end_ns, (start_ns - enqueued) / 1000)
        n = len(enqueued_ns)
        series["compute_input"].observe(end_ns, input_ns / 1000, n)
        series["compute_infer"].observe(end_ns, infer_ns / 1000, n)
        series["compute_output"].observe(end_ns, output_ns / 1000, n)

    def observe(self, key: str, elapsed_ns: int) -> None:
        """One duration of ``key``'s summary (a cache hit's or miss's), ending now."""
        self.series[key].observe(time.monotonic_ns(), elapsed_ns / 1000)


# Triton's response statistics, by a response's index within its request (a decoupled
# model's): a count and nanoseconds each
RESPONSE_STATS = ("compute_infer", "compute_output", "success", "fail", "empty_response",
                  "cancel")  # fmt: skip
# the most response indices kept (a model may send without end): later ones are not counted
MAX_RESPONSE_INDICES = 4096


@dataclass(slots=True)
class VersionStats:
    success_count: int = 0
    success_ns: int = 0
    fail_count: int = 0
    fail_ns: int = 0
    fail_by_reason: dict[str, int] = field(default_factory=dict)
    # requests refused before queueing: their inputs do not fit the model (400)
    bad_request_count: int = 0
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0
    inference_count: int = 0  # rows computed
    execution_count: int = 0  # engine calls
    # the response cache: hits answered from it (counted in success_* too, as Triton's), and
    # misses, with the time spent looking up and keeping their results
    cache_hit_count: int = 0
    cache_hit_ns: int = 0
    cache_miss_count: int = 0
    cache_miss_ns: int = 0
    last_inference_ms: int = 0
    # an encoder batched by tokens: the tokens its executions' rows have, and what they ran
    # padded to each execution's longest row; each execution's padded ÷ real
    tokens_real: int = 0
    tokens_padded: int = 0
    padding_ratio: Histogram = field(default_factory=lambda: Histogram(PADDING_BUCKETS))
    # a text model's embedding cache: texts answered from it, and texts computed
    text_cache_hits: int = 0
    text_cache_misses: int = 0
    # batch size -> [count, compute_input ns, compute_infer ns, compute_output ns]
    batch_stats: dict[int, list[int]] = field(default_factory=dict)
    # response index -> [count, ns] of each RESPONSE_STATS, in that order (flat)
    response_stats: dict[int, list[int]] = field(default_factory=dict)
    # each successful request, enqueued to results ready (what success_ns adds up)
    request_seconds: Histogram = field(default_factory=lambda: Histogram(TIME_BUCKETS))
    queue_seconds: Histogram = field(default_factory=lambda: Histogram(TIME_BUCKETS))
    compute_seconds: Histogram = field(default_factory=lambda: Histogram(TIME_BUCKETS))
    batch_size: Histogram = field(default_factory=lambda: Histogram(BATCH_BUCKETS))
    # Triton's summaries, kept only when asked for (--metrics-config summary_latencies=true)
    summaries: LatencySummaries | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> VersionStats:
        """A copy taken under the lock, so no reader sees an execution half counted."""
        with self.lock:
            return replace(
                self,
                fail_by_reason=dict(self.fail_by_reason),
                batch_stats={size: list(entry) for size, entry in self.batch_stats.items()},
                response_stats={i: list(entry) for i, entry in self.response_stats.items()},
                request_seconds=self.request_seconds.copy(),
                queue_seconds=self.queue_seconds.copy(),
                compute_seconds=self.compute_seconds.copy(),
                batch_size=self.batch_size.copy(),
                padding_ratio=self.padding_ratio.copy(),
                lock=threading.Lock(),
            )

    def record_cache_hit(self, elapsed_ns: int) -> None:
        """A request answered from the response cache: a success, computed by nothing."""
        with self.lock:
            self.success_count += 1
            self.success_ns += elapsed_ns
            self.cache_hit_count += 1
            self.cache_hit_ns += elapsed_ns
            if self.summaries is not None:
                self.summaries.observe("cache_hit", elapsed_ns)
            self.request_seconds.observe(elapsed_ns / 1e9)
            self.queue_seconds.observe(0.0)

    def record_wait(self, requests: int, waited_ns: int) -> None:
        """``requests`` answered requests each waited ``waited_ns`` more: for the event loop
        to take their answers from an instance thread. Counted in request and queue time:
        in the counters and in the sums of the histograms and summaries (their buckets and
        quantiles were taken when the execution ended)."""
        total_ns = requests * waited_ns
        with self.lock:
            self.success_ns += total_ns
            self.queue_ns += total_ns
            self.request_seconds.total += total_ns / 1e9
            self.queue_seconds.total += total_ns / 1e9
            if self.summaries is not None:
                for name in ("request", "queue"):
                    self.summaries.series[name].sum += total_ns / 1000

    def record_tokens(self, real: int, padded: int) -> None:
        """One execution of an encoder: its rows' own tokens, and the tokens it computed."""
        with self.lock:
            self.tokens_real += real
            self.tokens_padded += padded
            self.padding_ratio.observe(padded / real if real else 1.0)

    def record_text_cache(self, hits: int, misses: int, answered_ns: int) -> None:
        """A text model's request looked its texts up; answered whole from the cache when
        ``answered_ns`` (a success, as the response cache's hits are)."""
        with self.lock:
            self.text_cache_hits += hits
            self.text_cache_misses += misses
            if answered_ns:
                self.success_count += 1
                self.success_ns += answered_ns
                self.request_seconds.observe(answered_ns / 1e9)
                self.queue_seconds.observe(0.0)

    def record_response(
        self, index: int, outcome: str, start_ns: int, output_ns: int, end_ns: int
    ) -> None:
        """A decoupled model's response ``index`` of its request, as Triton's backends report
        one: computed from ``start_ns`` (its request's execution, or the previous response),
        its outputs made at ``output_ns`` (0: none), sent at ``end_ns``; ``outcome``:
        success, fail, empty (no response: a FINAL alone) or cancel."""
        if index >= MAX_RESPONSE_INDICES:
            return
        end_ns = max(end_ns, start_ns)
        made = min(max(output_ns, start_ns), end_ns) if output_ns else end_ns
        infer_ns, output_part_ns, total_ns = made - start_ns, end_ns - made, end_ns - start_ns
        with self.lock:
            entry = self.response_stats.get(index)
            if entry is None:
                entry = self.response_stats[index] = [0] * (2 * len(RESPONSE_STATS))

            def add(name: str, ns: int) -> None:
                at = 2 * RESPONSE_STATS.index(name)
                entry[at] += 1
                entry[at + 1] += ns

            if outcome == "cancel":
                add("cancel", total_ns)
                return
            add("compute_infer", infer_ns)
            if outcome == "empty":
                add("empty_response", total_ns)
                return
            if outcome == "success" or output_ns:  # a failure counts output made, as Triton
                add("compute_output", output_part_ns)
            add("success" if outcome == "success" else "fail", total_ns)

    def record_cache_miss(self, elapsed_ns: int) -> None:
        with self.lock:
            self.cache_miss_count += 1
            self.cache_miss_ns += elapsed_ns
            if self.summaries is not None:
                self.summaries.observe("cache_miss", elapsed_ns)

    def record_bad_request(self) -> None:
        with self.lock:
            self.bad_request_count += 1

    def record_failure(self, reason: str, elapsed_ns: int) -> None:
        with self.lock:
            self.fail_count += 1
            self.fail_ns += elapsed_ns
            self.fail_by_reason[reason] = self.fail_by_reason.get(reason, 0) + 1

    def record_execution(
        self,
        enqueued_ns: list[int],  # per request of the batch
        start_ns: int,  # the batch's execution
        rows: int,
        input_ns: int,
        infer_ns: int,
        output_ns: int,
        end_ns: int,
        wall_ms: int,
        batch_size: int | None = None,  # the batch executed, padding rows included
    ) -> None:
        compute_ns = input_ns + infer_ns + output_ns
        executed = rows if batch_size is None else batch_size
        n = len(enqueued_ns)
        enqueued_total = sum(enqueued_ns)
        with self.lock:
            self.success_count += n
            self.success_ns += end_ns * n - enqueued_total
            self.queue_ns += start_ns * n - enqueued_total
            self.request_seconds.observe_since(enqueued_ns, end_ns, enqueued_total)
            self.queue_seconds.observe_since(enqueued_ns, start_ns, enqueued_total)
            # Triton counts compute time once per request in inference_stats
            self.compute_input_ns += input_ns * n
            self.compute_infer_ns += infer_ns * n
            self.compute_output_ns += output_ns * n
            self.compute_seconds.observe(compute_ns / 1e9, n)
            self.inference_count += rows
            self.execution_count += 1
            self.last_inference_ms = wall_ms
            self.batch_size.observe(executed)
            # Triton's batch statistics are by the size executed: a direct sequence batch's
            # empty slots count there, and not in inference_count
            entry = self.batch_stats.setdefault(executed, [0, 0, 0, 0])
            entry[0] += 1
            entry[1] += input_ns
            entry[2] += infer_ns
            entry[3] += output_ns
            if self.summaries is not None:
                self.summaries.record(enqueued_ns, start_ns, end_ns, input_ns, infer_ns, output_ns)
