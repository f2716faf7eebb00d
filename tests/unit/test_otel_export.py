"""Triton's batch span processor settings on OpenTelemetry's Python SDK."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from structlog.testing import capture_logs

from modelyard.otel_export import LEAST_SCHEDULE_DELAY_MS, QUEUE_FULL, batch_processor


class Batches(SpanExporter):
    """Each export's spans; an export waits until ``release`` is set."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.release = threading.Event()
        self.release.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(10)
        self.batches.append(len(spans))
        return SpanExportResult.SUCCESS


def _ended(exporter: Batches, bsp: dict[str, int], spans: int) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(batch_processor(exporter, bsp))
    tracer = provider.get_tracer("test")
    for index in range(spans):
        tracer.start_span(f"span{index}").end()
    return provider


def test_an_export_batch_of_one_exports_each_span_alone() -> None:
    exporter = Batches()
    provider = _ended(exporter, {"bsp_max_export_batch_size": 1}, 6)
    provider.force_flush()
    assert exporter.batches == [1] * 6
    provider.shutdown()


def test_a_schedule_delay_of_zero_and_a_queue_smaller_than_a_batch_are_taken() -> None:
    # the Python SDK alone refuses both (a delay must be positive, a batch no larger than
    # the queue); Triton's C++ SDK takes them
    processor = batch_processor(Batches(), {"bsp_schedule_delay": 0, "bsp_max_queue_size": 4})
    assert processor.schedule_delay_millis == LEAST_SCHEDULE_DELAY_MS
    assert processor.max_export_batch_size == 4
    processor.shutdown()


def test_a_span_dropped_for_a_full_queue_is_said_in_tritons_words() -> None:
    exporter = Batches()
    exporter.release.clear()  # the first export holds the worker: the queue fills
    with capture_logs() as logs:
        provider = _ended(exporter, {"bsp_max_queue_size": 1}, 4)
    exporter.release.set()
    provider.shutdown()
    dropped = [entry for entry in logs if entry.get("triton") == QUEUE_FULL]
    assert dropped and all(entry["log_level"] == "warning" for entry in dropped)
    assert sum(exporter.batches) + len(dropped) == 4  # each span exported or said dropped


def test_a_flood_of_drops_writes_ten_lines_a_second_and_counts_the_rest() -> None:
    exporter = Batches()
    exporter.release.clear()
    with capture_logs() as logs:
        provider = _ended(exporter, {"bsp_max_queue_size": 1}, 40)
    exporter.release.set()
    provider.shutdown()
    dropped = [entry for entry in logs if entry.get("triton") == QUEUE_FULL]
    assert 1 <= len(dropped) <= 10  # the rest are counted in one line once the second ends
