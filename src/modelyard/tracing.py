"""Request tracing: Triton's trace settings, spans exported through OpenTelemetry.

``--trace-config mode=opentelemetry`` (and ``level=TIMESTAMPS``, ``rate=N``,
``count=N``, ``opentelemetry,url=...``, ``opentelemetry,resource=k=v``) turns it
on at start; ``GET/POST /v2[/models/X]/trace/setting`` and gRPC ``TraceSetting``
read and change the level, rate and count live, for all models or one, as in
Triton. One request in ``rate`` is traced while ``count`` lasts (-1: no end).

A traced request is one span, ``InferRequest``, carrying the model, version and
request id, with a child for each stretch of its life: ``governance`` (arrival to
admission), ``decode`` (to its queueing), ``queue``, ``compute`` and
``response`` (results to the reply sent). Times are taken on the monotonic clock
where they happen and the spans are made once the reply is sent, with those
times: an untraced request costs one attribute read, and a traced one no
allocation on the scheduler's path but a list for its timestamps. A request that
arrives with a W3C ``traceparent`` continues that trace; a gateway passes its own
on to the instance.

The OpenTelemetry SDK is imported only when tracing is configured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from modelyard.errors import Code, ProtocolError, shown

LEVELS = ("OFF", "TIMESTAMPS", "TENSORS")
DEFAULT_URL = "http://localhost:4318/v1/traces"  # Triton's default collector address
_SETTINGS = (
    "trace_level",
    "trace_rate",
    "trace_count",
    "log_frequency",
    "trace_file",
    "trace_mode",
)


def _bad(detail: str) -> ProtocolError:
    return ProtocolError(
        detail,
        code=Code.INVALID_ARGUMENT,
        rule="protocol/trace-setting",
        where="the trace setting request (trace_level, trace_rate, trace_count)",
    )


@dataclass
class ModelTraceSettings:
    """The settings a model traces by; None: the global one's."""

    level: list[str] | None = None
    rate: int | None = None
    count: int | None = None


@dataclass
class RequestTrace:
    """One traced request's times (monotonic ns) and what its spans carry."""

    model: str
    version: str | None
    request_id: str | None
    protocol: str
    root: Any  # the request's span, open from its arrival until its reply is sent
    arrived_ns: int
    admitted_ns: int = 0
    # enqueued, execution start, compute start, compute end, execution end (the scheduler's)
    timing: list[int] = field(default_factory=list)
    results_ns: int = 0
    error: str | None = None

    def admitted(self) -> None:
        if not self.admitted_ns:
            self.admitted_ns = time.monotonic_ns()


class Tracing:
    """Trace settings, global and per model, and the spans of sampled requests."""

    def __init__(
        self,
        mode: str = "triton",
        level: list[str] | None = None,
        rate: int = 1000,
        count: int = -1,
        url: str = DEFAULT_URL,
        resource: dict[str, str] | None = None,
        exporter: Any = None,
    ) -> None:
        self.mode = mode
        self.level = level or ["OFF"]
        self.rate = rate
        self.count = count
        self.models: dict[str, ModelTraceSettings] = {}
        self._seen: dict[str | None, int] = {}  # per owner of settings: None, the global
        self._url = url
        self._resource = resource or {}
        self._exporter = exporter
        self._tracer: Any = None
        self._offset_ns = time.time_ns() - time.monotonic_ns()
        self.on = False
        self._refresh()

    # ---- settings (Triton's trace extension) ---------------------------

    def _refresh(self) -> None:
        levels = [self.level] + [m.level for m in self.models.values() if m.level is not None]
        self.on = self.mode == "opentelemetry" and any(lv != ["OFF"] for lv in levels)
        if self.on and self._tracer is None:
            self._tracer = self._make_tracer()

    def settings(self, model: str | None = None) -> dict[str, Any]:
        own = self.models.get(model or "") if model else None
        level = own.level if own and own.level is not None else self.level
        rate = own.rate if own and own.rate is not None else self.rate
        count = own.count if own and own.count is not None else self.count
        return {
            "trace_level": list(level),
            "trace_rate": str(rate),
            "trace_count": str(count),
            "log_frequency": "0",
            "trace_file": "",
            "trace_mode": self.mode,
        }

    def update(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        """Apply a trace setting request (all checked before any applies); the settings."""
        if not isinstance(changes, dict):
            raise _bad("a trace setting request is a JSON object")
        parsed: dict[str, Any] = {}
        for name, value in changes.items():
            if name not in _SETTINGS:
                raise _bad(f"unknown trace setting '{shown(str(name), 40)}'")
            if name in ("trace_file", "trace_mode", "log_frequency"):
                if value is None or value == self.settings(model)[name]:
                    continue
                raise _bad(
                    f"{name} is set when the server starts (--trace-config), not by a request"
                )
            parsed[name] = None if value is None else _parse(name, value)
        level = parsed.get("trace_level")
        if level is not None and level != ["OFF"] and self.mode != "opentelemetry":
            raise ProtocolError(
                f"trace_level {level} needs tracing through OpenTelemetry: Triton-mode trace "
                "files are not written here",
                code=Code.INVALID_ARGUMENT,
                rule="protocol/trace-setting",
                where="modelyard serve --trace-config mode=opentelemetry",
            )
        target = self.models.setdefault(model, ModelTraceSettings()) if model else None
        for name, value in parsed.items():
            key = {"trace_level": "level", "trace_rate": "rate", "trace_count": "count"}[name]
            if target is not None:
                setattr(target, key, value)
            elif value is not None:
                setattr(self, key, value)
        self._refresh()
        return self.settings(model)

    # ---- sampling and spans ---------------------------------------------

    def begin(
        self,
        model: str,
        version: str | None,
        request_id: str | None,
        protocol: str,
        headers: dict[str, str],
        arrived_ns: int,
    ) -> RequestTrace | None:
        """A trace for this request if the sampling picks it, else None."""
        settings = self.models.get(model)
        level = settings.level if settings and settings.level is not None else self.level
        if level == ["OFF"]:
            return None
        owner = model if settings and settings.count is not None else None
        count = self.models[model].count if owner else self.count
        if count == 0:
            return None
        rate = settings.rate if settings and settings.rate is not None else self.rate
        counter = model if settings is not None else None  # no key per name a caller sends
        seen = self._seen.get(counter, 0) + 1
        self._seen[counter] = seen
        if rate > 1 and seen % rate != 1:
            return None
        if count is not None and count > 0:
            if owner:
                self.models[model].count = count - 1
            else:
                self.count = count - 1
        from opentelemetry.propagate import extract

        attributes = {"triton.model_name": model, "modelyard.protocol": protocol}
        root = self._tracer.start_span(
            "InferRequest",
            context=extract(headers) if headers else None,
            start_time=arrived_ns + self._offset_ns,
            attributes=attributes,
        )
        return RequestTrace(model, version, request_id, protocol, root, arrived_ns)

    @staticmethod
    def propagation_headers(trace: RequestTrace) -> dict[str, str]:
        """The W3C trace context a forwarded request carries: this request's span."""
        from opentelemetry.propagate import inject
        from opentelemetry.trace import set_span_in_context

        carrier: dict[str, str] = {}
        inject(carrier, context=set_span_in_context(trace.root))
        return carrier

    def finish(self, trace: RequestTrace, model_version: str, sent_ns: int) -> None:
        """Make the request's child spans from the times it gathered, and end it."""
        from opentelemetry.trace import Status, StatusCode, set_span_in_context

        tracer = self._tracer
        wall = self._offset_ns
        root = trace.root
        root.set_attribute("triton.model_version", model_version)
        if trace.request_id:  # over HTTP, known once the body was decoded
            root.set_attribute("triton.request_id", trace.request_id)
        inside = set_span_in_context(root)
        admitted = trace.admitted_ns or trace.arrived_ns
        stretches = [("governance", trace.arrived_ns, admitted)]
        timing = trace.timing
        if len(timing) >= 5:
            enqueued, started, _, _, executed = timing[:5]
            stretches.append(("decode", admitted, enqueued))
            stretches.append(("queue", enqueued, started))
            stretches.append(("compute", started, executed))
            done = max(executed, trace.results_ns)
        else:  # answered without an execution here (a cache hit, a fallback, a forward)
            done = max(trace.results_ns, admitted)
            stretches.append(("model", admitted, done))
        stretches.append(("response", done, sent_ns))
        for name, start, end in stretches:
            span = tracer.start_span(name, context=inside, start_time=start + wall)
            if name == "compute":
                span.add_event("COMPUTE_INPUT_END", timestamp=timing[2] + wall)
                span.add_event("COMPUTE_OUTPUT_START", timestamp=timing[3] + wall)
            span.end(end_time=max(start, end) + wall)
        if trace.error is not None:
            root.set_status(Status(StatusCode.ERROR, trace.error))
        root.end(end_time=max(sent_ns, trace.arrived_ns) + wall)

    def shutdown(self) -> None:
        provider = getattr(self, "_provider", None)
        if provider is not None:
            provider.shutdown()

    def _make_tracer(self) -> Any:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        resource = Resource.create({"service.name": "modelyard", **self._resource})
        provider = TracerProvider(resource=resource)
        if self._exporter is not None:  # given: tests read spans at once
            provider.add_span_processor(SimpleSpanProcessor(self._exporter))
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=self._url)))
        self._provider = provider
        return provider.get_tracer("modelyard")


def _parse(name: str, value: Any) -> Any:
    if name == "trace_level":
        levels = value if isinstance(value, list) else [value]
        if not levels or not all(isinstance(v, str) and v.upper() in LEVELS for v in levels):
            raise _bad(f"trace_level must be a list of {', '.join(LEVELS)}")
        levels = [v.upper() for v in levels]
        if "OFF" in levels and len(levels) > 1:
            raise _bad("trace_level OFF goes alone")
        return levels
    text = value[0] if isinstance(value, list) and len(value) == 1 else value
    try:
        number = int(text)
    except (TypeError, ValueError):
        raise _bad(f"{name} must be an integer, not {shown(repr(value), 40)}") from None
    if name == "trace_rate" and number < 1:
        raise _bad("trace_rate must be at least 1")
    if name == "trace_count" and number < -1:
        raise _bad("trace_count must be -1 (no end) or more")
    return number
