"""The batch span processor an OpenTelemetry trace mode exports through, with Triton's
settings (``--trace-config opentelemetry,bsp_*``) taken as Triton's C++ SDK takes them.

OpenTelemetry's Python SDK refuses two settings the C++ SDK takes: a schedule delay of 0
(export at once), made its least here, 1 ms; and an export batch larger than the queue,
made the queue's size. A span ended while the queue is full is dropped (the oldest
waiting, in the Python SDK); each drop is said in the C++ SDK's words, as Triton's log
says it, at most ten lines a second (``refusal_log``: the rest counted), so a flood of
traced calls cannot choose how much is written. Imported only when a server traces with
OpenTelemetry.
"""

from __future__ import annotations

from typing import Any

import structlog
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from modelyard.refusal_log import REFUSALS

log = structlog.get_logger("modelyard.tracing")

LEAST_SCHEDULE_DELAY_MS = 1
QUEUE_FULL = "BatchSpanProcessor queue is full - dropping span."
SPAN_QUEUE_RULE = "tracing/span-queue"  # its lines' rule, which refusal_log bounds
# Triton's names of the settings -> the Python SDK's
_SETTINGS = {
    "bsp_max_queue_size": "max_queue_size",
    "bsp_schedule_delay": "schedule_delay_millis",
    "bsp_max_export_batch_size": "max_export_batch_size",
}


class SaysWhenFull(BatchSpanProcessor):
    """OpenTelemetry's batch span processor, saying each span dropped for a full queue."""

    def on_end(self, span: ReadableSpan) -> None:
        sampled = span.context is not None and span.context.trace_flags.sampled
        if sampled and len(self.queue) >= self.max_queue_size:
            REFUSALS.warning(log, "trace_span_dropped", rule=SPAN_QUEUE_RULE, triton=QUEUE_FULL)
        super().on_end(span)


def batch_processor(exporter: SpanExporter, bsp: dict[str, int]) -> SaysWhenFull:
    """The processor of Triton's ``bsp_*`` settings (those given; the SDK's defaults,
    Triton's, for the others)."""
    settings: dict[str, Any] = {_SETTINGS[key]: value for key, value in bsp.items()}
    if "schedule_delay_millis" in settings:
        settings["schedule_delay_millis"] = max(
            settings["schedule_delay_millis"], LEAST_SCHEDULE_DELAY_MS
        )
    queue = settings.get("max_queue_size", BatchSpanProcessor._default_max_queue_size())
    batch = settings.get(
        "max_export_batch_size", BatchSpanProcessor._default_max_export_batch_size()
    )
    settings["max_export_batch_size"] = min(batch, queue)
    return SaysWhenFull(exporter, **settings)
