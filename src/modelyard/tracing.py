"""Request tracing: Triton's trace settings; Triton's trace files or OpenTelemetry spans.

``--trace-config level=TIMESTAMPS`` (or TENSORS) with ``triton,file=PATH`` writes
Triton's JSON trace files (``trace_file.py``); with ``mode=opentelemetry`` (and
``opentelemetry,url=...``, ``opentelemetry,resource=k=v``) each traced request is
exported as spans. ``rate=N`` traces one request in N while ``count`` lasts (-1: no
end); with spans, a request that continues a caller's trace (a valid ``traceparent``) is
traced whatever they say, as Triton's (``rate=0``: those alone). Each request of a gRPC
stream is traced as a ModelInfer call. ``GET/POST /v2[/models/X]/trace/setting`` and
gRPC ``TraceSetting`` read and change the level, rate, count and log frequency live, for
all models or one, as in Triton; the file is the command line's alone. A model's own
setting cleared (``null``) falls back to the global one, a global one cleared to the
command line's; a model's settings are asked and changed only while it is ready
(Triton's ``Request for unknown model : X`` otherwise), so they are as many as the
repository's models.

Times are taken on the monotonic clock where they happen: arrival (the request read
in whole), admission by governance, queueing, execution start, compute start and
end, execution end, results, and the reply sent. The records or spans are made once
the reply is sent, from those times: an untraced request costs one attribute read,
and a traced one no allocation on the scheduler's path but a list for its times.

In a file, a request's timestamps are Triton's: ``HTTP_RECV_START``/``_END`` (or
gRPC's ``GRPC_WAITREAD_START``/``_END``) both at arrival (a slow upload is the
caller's time and is not timed), ``REQUEST_START``, ``QUEUE_START``,
``COMPUTE_START``, ``COMPUTE_INPUT_END``, ``COMPUTE_OUTPUT_START``, ``COMPUTE_END``,
``REQUEST_END`` and ``INFER_RESPONSE_COMPLETE`` at the results, and
``HTTP_SEND_START``/``_END`` around encoding and sending the reply. A request answered
without an execution here (a cache hit, a forward) has no queue or compute stamps.

As spans, a traced request is ``InferRequest``, carrying the model, version and
request id, with a child for each stretch of its life: ``governance`` (arrival to
admission), ``decode`` (to its queueing), ``queue``, ``compute`` and ``response``
(results to the reply sent). ``tritonserver`` lays them out as Triton does
(``spans="triton"``): ``InferRequest`` with the receive, response and send events, its
child named after the model (``REQUEST_START``, ``QUEUE_START``, ``REQUEST_END``) and
that one's child ``compute`` (the four ``COMPUTE_*`` events), for the dashboards and
queries Triton's users keep. A request that arrives with a W3C ``traceparent``
continues that trace; a gateway passes its own on to the instance. The OpenTelemetry
SDK is imported only when spans are exported.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelyard import error_rules
from modelyard.engines.base import StepTimes, TracedSteps, TraceTimes
from modelyard.errors import Code, ProtocolError, shown
from modelyard.trace_file import TraceFile, tensor_record
from modelyard.types import v2_datatype

LEVELS = ("OFF", "TIMESTAMPS", "TENSORS")
# the key of a file trace's context (``RequestTrace.model_context``)
TRITON_TRACE_ID = "triton_trace_id"
DEFAULT_URL = "http://localhost:4318/v1/traces"  # Triton's default collector address
_SETTINGS = (  # Triton's names
    "trace_level",
    "trace_rate",
    "trace_count",
    "log_frequency",
    "trace_file",
    "trace_mode",
)

# settings a request may only repeat: what it says instead, the status, whether in Triton's words
_SET_AT_START: dict[str, tuple[str, Code, bool]] = {
    "trace_file": (  # Triton's words
        "trace file location can not be updated through network protocol",
        Code.UNIMPLEMENTED,
        True,
    ),
    "trace_mode": (
        "trace_mode is set when the server starts (--trace-config)",
        Code.INVALID_ARGUMENT,
        False,
    ),
}


def _bad(detail: str, code: Code = Code.INVALID_ARGUMENT, triton: bool = False) -> ProtocolError:
    return ProtocolError(
        detail,
        code=code,
        rule="protocol/trace-setting",
        where="the trace setting request (trace_level, trace_rate, trace_count, log_frequency)",
        triton=triton,
    )


@dataclass
class ModelTraceSettings:
    """The settings a model traces by; None: the global one's."""

    level: list[str] | None = None
    rate: int | None = None
    count: int | None = None
    log_frequency: int | None = None  # its traces then go to the file in files of their own

    def empty(self) -> bool:
        return (self.level, self.rate, self.count, self.log_frequency) == (None,) * 4


@dataclass
class RequestTrace:
    """One traced request's times (monotonic ns) and what its spans carry."""

    model: str
    version: str | None
    request_id: str | None
    protocol: str
    root: Any  # its span, open from its arrival until its reply is sent (None: to a file)
    arrived_ns: int
    trace_id: int = 0  # Triton's: one more per traced request
    context: dict[str, str] | None = None  # the W3C trace context it came with
    last: bool = False  # the count ran out with it
    file_owner: str | None = None  # the model whose own log frequency its record follows
    admitted_ns: int = 0
    # enqueued, execution start, compute start, compute end, execution end (the scheduler's),
    # and the activities its model reported
    timing: TraceTimes = field(default_factory=TraceTimes)
    results_ns: int = 0
    error: str | None = None
    # at the TENSORS level: its inputs (name -> (datatype, array)) and its response's outputs
    tensors: bool = False
    inputs: dict[str, tuple[str, Any]] | None = None
    outputs: list[Any] | None = None
    # an ensemble's: each step's model, version, sent and answered (ns), execution times
    # and a nested ensemble's own steps
    steps: TracedSteps = field(default_factory=TracedSteps)
    # Triton's span of the model's request, open while it executes (its context is what
    # the model sees: pb_utils' request.trace().get_context(), and what its BLS calls join)
    model_span: Any = None
    parent_id: int | None = None  # a model's own call's: its caller's trace (to a file)

    def model_context(self) -> str | None:
        """The trace context a model's calls carry of this request: the W3C context, as
        Triton's python backend gives it (JSON: ``{"traceparent": ...}``), or, where traces
        go to a file, this trace's id (``{"triton_trace_id": "N"}``, which the model's
        ``get_context()`` does not show, as Triton's shows none then)."""
        span = self.model_span or self.root
        if span is None:
            return json.dumps({TRITON_TRACE_ID: str(self.trace_id)}) if self.trace_id else None
        from opentelemetry.propagate import inject
        from opentelemetry.trace import set_span_in_context

        carrier: dict[str, str] = {}
        inject(carrier, context=set_span_in_context(span))
        return json.dumps(carrier)

    def decoded(self, request: Any) -> None:
        """The request as decoded (an ``InferRequest``): its id, and its inputs if kept."""
        self.request_id = request.id
        if self.tensors:
            self.inputs = {
                name: (request.input_datatypes.get(name, ""), array)
                for name, array in request.inputs.items()
            }

    def answered(self, response: Any) -> None:
        """The response (an ``InferResponse``): its version, and its outputs if kept."""
        self.results_ns = time.monotonic_ns()
        self.version = response.model_version
        if self.tensors:
            self.outputs = list(response.outputs)

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
        file: Path | None = None,
        log_frequency: int = 0,
        spans: str = "modelyard",
        bsp: dict[str, int] | None = None,
        options: list[tuple[str, str]] | None = None,
    ) -> None:
        self.mode = mode
        self.spans = spans  # the layout of a request's spans: modelyard's, or Triton's
        self.level = level or ["OFF"]
        self.rate = rate
        self.count = count
        # what a global setting cleared goes back to: the command line's
        self._defaults = {"level": self.level, "rate": rate, "count": count}
        self.models: dict[str, ModelTraceSettings] = {}
        self._seen: dict[str | None, int] = {}  # per owner of settings: None, the global
        self._url = url
        self._resource = resource or {}
        self._exporter = exporter
        self._bsp = bsp or {}  # the batch span processor's settings Triton names bsp_*
        # the mode's own settings as the trace settings report them (opentelemetry's url,
        # resources, batch span processor)
        self._options = options or []
        self._tracer: Any = None
        self._file = None if file is None else TraceFile(file, log_frequency)
        self._unfiled_frequency = log_frequency  # reported where there is no file
        self._last_id = 0
        self._offset_ns = time.time_ns() - time.monotonic_ns()
        self.on = False
        self._refresh()

    # ---- settings (Triton's trace extension) ---------------------------

    @property
    def writes_files(self) -> bool:
        return self.mode == "triton" and self._file is not None

    def _refresh(self) -> None:
        levels = [self.level] + [m.level for m in self.models.values() if m.level is not None]
        exported = self.mode == "opentelemetry" or self.writes_files
        self.on = exported and any(lv != ["OFF"] for lv in levels)
        if self.on and self.mode == "opentelemetry" and self._tracer is None:
            self._tracer = self._make_tracer()

    def settings(self, model: str | None = None) -> dict[str, Any]:
        own = self.models.get(model or "") if model else None
        level = own.level if own and own.level is not None else self.level
        rate = own.rate if own and own.rate is not None else self.rate
        count = own.count if own and own.count is not None else self.count
        said: dict[str, Any] = {
            "trace_level": list(level),
            "trace_rate": str(rate),
            "trace_count": str(count),
        }
        if self.mode == "triton":  # the file's settings are Triton's mode's alone
            if self._file is not None:
                frequency = self._file.frequency(model if own else None)
            elif own is not None and own.log_frequency is not None:
                frequency = own.log_frequency
            else:
                frequency = self._unfiled_frequency
            said["log_frequency"] = str(frequency)
            said["trace_file"] = str(self._file.path) if self._file else ""
        said["trace_mode"] = self.mode
        for key, value in self._options:  # a key given twice (resource=...) lists each
            if key in said:
                said[key] = [*([said[key]] if isinstance(said[key], str) else said[key]), value]
            else:
                said[key] = value
        return said

    def update(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        """Apply a trace setting request (all checked before any applies); the settings."""
        parsed = self._parsed_changes(changes, model)
        frequency_given = "log_frequency" in parsed
        frequency = parsed.pop("log_frequency", None)
        self._check_applicable(parsed.get("trace_level"), frequency, model)
        if self._file is not None and (model is None or model in self.models):
            self._file.retire(model)  # as Triton replaces the settings object
        target = self.models.setdefault(model, ModelTraceSettings()) if model else None
        for name, value in parsed.items():
            key = {"trace_level": "level", "trace_rate": "rate", "trace_count": "count"}[name]
            if target is not None:
                setattr(target, key, value)
            else:
                setattr(self, key, self._defaults[key] if value is None else value)
        if frequency_given and self._file is not None:
            self._file.set_log_frequency(frequency, model)
        elif frequency_given and target is None:
            self._unfiled_frequency = 0 if frequency is None else frequency
        if target is not None:
            target.log_frequency = frequency if frequency_given else target.log_frequency
            if target.empty():  # nothing of its own: the global settings, as Triton
                del self.models[model or ""]
        self._refresh()
        return self.settings(model)

    def _parsed_changes(self, changes: dict[str, Any], model: str | None) -> dict[str, Any]:
        """The request's settings parsed (None: back to the global one's); the file and the
        mode only as they are, since they are set at start."""
        if not isinstance(changes, dict):
            raise _bad("a trace setting request is a JSON object")
        parsed: dict[str, Any] = {}
        for name, value in changes.items():
            if name not in _SETTINGS:
                raise _bad(f"unknown trace setting '{shown(str(name), 40)}'")
            if name == "trace_file":  # as Triton: any request that names it, even as it is
                raise _bad(*_SET_AT_START[name])
            if name in _SET_AT_START:
                if value is None or value == self.settings(model).get(name):
                    continue
                raise _bad(*_SET_AT_START[name])
            parsed[name] = None if value is None else _parse(name, value)
        return parsed

    def _check_applicable(self, level: Any, frequency: Any, model: str | None) -> None:
        """A level other than OFF needs somewhere to go (a log frequency without a file is
        kept and reported, as Triton keeps it: nothing is written either way)."""
        if level is not None and level != ["OFF"] and self.mode == "triton" and not self._file:
            raise ProtocolError.of(
                error_rules.TRACE_FILE,
                f"trace_level {level} in Triton's mode needs a trace file, and none was given "
                "at start",
            )

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
        # as Triton's, a request that continues a caller's trace is always traced (its
        # spans belong to that trace), whatever the rate and count say
        forced = self.mode == "opentelemetry" and _continues_a_trace(headers)
        if count == 0 and not forced:
            return None
        rate = settings.rate if settings and settings.rate is not None else self.rate
        counter = model if settings is not None else None  # no key per name a caller sends
        seen = self._seen.get(counter, 0) + 1
        self._seen[counter] = seen
        # as Triton's: the rate-th request is the first traced (0: only the forced ones)
        hit = rate >= 1 and seen % rate == 0
        if not hit and not forced:
            return None
        if hit and count is not None and count > 0:
            if owner:
                self.models[model].count = count - 1
            else:
                self.count = count - 1
        self._last_id += 1
        if self.mode == "triton":
            trace = RequestTrace(model, version, request_id, protocol, None, arrived_ns)
            trace.trace_id = self._last_id
            if settings is not None and settings.log_frequency is not None:
                trace.file_owner = model
            trace.context = headers or None
            trace.last = count == 1
            trace.tensors = trace.steps.tensors = "TENSORS" in level
            return trace
        from opentelemetry.propagate import extract

        attributes = {"triton.model_name": model, "modelyard.protocol": protocol}
        root = self._tracer.start_span(
            "InferRequest",
            context=extract(headers) if headers else None,
            start_time=arrived_ns + self._offset_ns,
            attributes=attributes,
        )
        trace = RequestTrace(model, version, request_id, protocol, root, arrived_ns)
        trace.trace_id = self._last_id
        if self.spans == "triton":
            trace.model_span = self._start_model_span(root, model, arrived_ns)
        return trace

    def begin_child(self, model: str, context: str, arrived_ns: int) -> RequestTrace | None:
        """A model's own call (Triton's BLS) made with its request's trace context
        (``RequestTrace.model_context``): the called model's span under the caller's, in the
        caller's trace; None when the context is not one, spans are not exported, or they
        are laid out as modelyard serve's own (which has no model span to nest under)."""
        if self._tracer is None and self._file is not None:
            return self._file_child(model, context, arrived_ns)
        if self._tracer is None or self.spans != "triton":
            return None
        from opentelemetry.propagate import extract
        from opentelemetry.trace import get_current_span

        try:
            carrier = json.loads(context)
        except ValueError:
            return None
        if not isinstance(carrier, dict):
            return None
        parent = extract({str(k): str(v) for k, v in carrier.items()})
        if not get_current_span(parent).get_span_context().is_valid:
            return None
        trace = RequestTrace(model, None, None, "bls", None, arrived_ns)
        self._last_id += 1
        trace.trace_id = self._last_id
        trace.model_span = self._start_model_span(parent, model, arrived_ns, context=True)
        return trace

    def _file_child(self, model: str, context: str, arrived_ns: int) -> RequestTrace | None:
        """A model's own call made while its request is traced to the file: a trace of its
        own whose ``parent_id`` is the caller's (as Triton's BLS calls are traced)."""
        try:
            parent = int(json.loads(context)[TRITON_TRACE_ID])
        except (ValueError, TypeError, KeyError, IndexError):
            return None  # not a file trace's context
        if not 0 < parent <= self._last_id:
            return None
        trace = RequestTrace(model, None, None, "bls", None, arrived_ns)
        self._last_id += 1
        trace.trace_id = self._last_id
        trace.parent_id = parent
        return trace

    def finish_child(self, trace: RequestTrace, model_version: str, answered_ns: int) -> None:
        """Record a model's own call (``begin_child``) from the times it gathered: its
        spans, or its trace in the file."""
        if trace.model_span is None:
            self.finish(trace, model_version, answered_ns)
            return
        results = max(answered_ns, trace.arrived_ns)
        self._end_model_span(trace.model_span, model_version, trace.arrived_ns, results,
                             trace.timing, trace.trace_id)  # fmt: skip
        self._step_spans(trace.model_span, trace.steps, trace.trace_id)

    @staticmethod
    def propagation_headers(trace: RequestTrace) -> dict[str, str]:
        """The W3C trace context a forwarded request carries: this request's span (or the
        context it came with, when traces go to a file)."""
        if trace.root is None:
            return dict(trace.context or {})
        from opentelemetry.propagate import inject
        from opentelemetry.trace import set_span_in_context

        carrier: dict[str, str] = {}
        inject(carrier, context=set_span_in_context(trace.root))
        return carrier

    def finish(
        self, trace: RequestTrace, model_version: str, sent_ns: int, cancelled: bool = False
    ) -> None:
        """Record the request from the times it gathered: in the file, or as its spans.
        ``cancelled``: its caller cancelled it, and it was never answered (Triton's spans
        then have no response or send events)."""
        if trace.root is None:
            if self._file is not None:
                steps = _steps_in_start_order(trace.steps)  # as Triton's: each a trace
                first_step_id = self._last_id + 1
                self._last_id += len(steps)
                records = functools.partial(
                    _triton_records, trace, model_version, sent_ns, steps, first_step_id
                )
                self._file.add(records, trace.last, trace.file_owner)
            return
        from opentelemetry.trace import Status, StatusCode

        wall = self._offset_ns
        root = trace.root
        root.set_attribute("triton.model_version", model_version)
        if trace.request_id:  # over HTTP, known once the body was decoded
            root.set_attribute("triton.request_id", trace.request_id)
        if self.spans == "triton":
            self._triton_spans(trace, model_version, sent_ns, cancelled)
        else:
            self._modelyard_spans(trace, sent_ns)
        if trace.error is not None:
            root.set_status(Status(StatusCode.ERROR, trace.error))
        root.end(end_time=max(sent_ns, trace.arrived_ns) + wall)

    def _modelyard_spans(self, trace: RequestTrace, sent_ns: int) -> None:
        from opentelemetry.trace import set_span_in_context

        tracer, wall = self._tracer, self._offset_ns
        inside = set_span_in_context(trace.root)
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

    def _triton_spans(
        self, trace: RequestTrace, model_version: str, sent_ns: int, cancelled: bool = False
    ) -> None:
        """Triton's layout: the root's events, the model's span, its ``compute`` span."""
        wall, root = self._offset_ns, trace.root
        arrived = trace.arrived_ns
        results = max(trace.results_ns, trace.admitted_ns, arrived)
        timing = trace.timing
        executed = len(timing) >= 5
        if executed:
            results = max(results, timing[4])
        sent = max(sent_ns, results)
        wire = "GRPC_WAITREAD" if trace.protocol == "grpc" else "HTTP_RECV"
        send = "GRPC_SEND" if trace.protocol == "grpc" else "HTTP_SEND"
        events = [(f"{wire}_START", arrived), (f"{wire}_END", arrived)]
        if not cancelled:
            events += [("INFER_RESPONSE_COMPLETE", results), (f"{send}_START", results),
                       (f"{send}_END", sent)]  # fmt: skip
        for name, at in events:
            root.add_event(name, timestamp=at + wall)
        queued = trace.admitted_ns or arrived
        model = trace.model_span or self._start_model_span(root, trace.model, arrived)
        self._end_model_span(model, model_version, queued, results, timing, trace.trace_id)
        self._step_spans(model, trace.steps, trace.trace_id)

    def _step_spans(self, parent: Any, steps: list[StepTimes], trace_id: int) -> None:
        """An ensemble's steps' spans under its own (a nested ensemble's under its)."""
        for step, version, sent, answered, timing, inner, _ in steps:
            span = self._model_span(parent, step, version, sent, sent, answered, timing, trace_id)
            self._step_spans(span, inner, trace_id)

    def _model_span(
        self,
        parent: Any,
        name: str,
        version: str,
        start: int,
        queued: int,
        end: int,
        timing: list[int],
        trace_id: int,
    ) -> Any:
        """Triton's span of one model's request, and its ``compute`` if it executed."""
        model = self._start_model_span(parent, name, start)
        self._end_model_span(model, version, queued, end, timing, trace_id)
        return model

    def _start_model_span(self, parent: Any, name: str, start: int, context: bool = False) -> Any:
        """A model's span, open from ``start`` (monotonic ns), under the span ``parent`` (or,
        ``context``: under the context ``parent``)."""
        from opentelemetry.trace import set_span_in_context

        model = self._tracer.start_span(
            name,
            context=parent if context else set_span_in_context(parent),
            start_time=start + self._offset_ns,
            attributes={"triton.model_name": name},
        )
        model.add_event("REQUEST_START", timestamp=start + self._offset_ns)
        return model

    def _end_model_span(
        self, model: Any, version: str, queued: int, end: int, timing: list[int], trace_id: int
    ) -> None:
        """A model's span's version, queue and end, with its ``compute`` if it executed."""
        from opentelemetry.trace import set_span_in_context

        tracer, wall = self._tracer, self._offset_ns
        model.set_attribute("triton.model_version", int(version) if version.isdigit() else -1)
        model.set_attribute("triton.trace_id", trace_id)
        executed = len(timing) >= 5
        model.add_event("QUEUE_START", timestamp=(timing[0] if executed else queued) + wall)
        if executed:
            _, started, input_end, output_start, done = timing[:5]
            compute = tracer.start_span(
                "compute", context=set_span_in_context(model), start_time=started + wall
            )
            for event, at in (
                ("COMPUTE_START", started), ("COMPUTE_INPUT_END", input_end),
                ("COMPUTE_OUTPUT_START", output_start), ("COMPUTE_END", done),
            ):  # fmt: skip
                compute.add_event(event, timestamp=at + wall)
            compute.end(end_time=max(started, done) + wall)
            end = max(end, done)
        self._activity_spans(model, getattr(timing, "activities", ()))
        model.add_event("REQUEST_END", timestamp=end + wall)
        model.end(end_time=end + wall)

    def _activity_spans(self, model: Any, activities: Sequence[tuple[str, int]]) -> None:
        """A model's custom activities as Triton's tracer lays them out: a name ending
        ``_START`` opens a span (its name the rest) inside the innermost open one, ``_END``
        closes the innermost, and each is an event of the span open at it; a span left open
        ends with the last activity."""
        from opentelemetry.trace import set_span_in_context

        wall, opened = self._offset_ns, [model]
        for name, at in activities:
            if name.endswith("_START") and len(name) > len("_START"):
                opened.append(self._tracer.start_span(
                    name[: -len("_START")], context=set_span_in_context(opened[-1]),
                    start_time=at + wall,
                ))  # fmt: skip
            opened[-1].add_event(name, timestamp=at + wall)
            if name.endswith("_END") and len(name) > len("_END") and len(opened) > 1:
                opened.pop().end(end_time=at + wall)
        last = activities[-1][1] if activities else 0
        for span in reversed(opened[1:]):
            span.end(end_time=last + wall)

    def flush(self) -> None:
        """Wait until the file has every trace finished so far (tests read it then)."""
        if self._file is not None:
            self._file.flush()

    def shutdown(self) -> None:
        if self._file is not None:
            self._file.close()
        provider = getattr(self, "_provider", None)
        if provider is not None:
            provider.shutdown()

    def _make_tracer(self) -> Any:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        resource = Resource.create({"service.name": "modelyard", **self._resource})
        provider = TracerProvider(resource=resource)
        if self._exporter is not None:  # given: tests read spans at once
            provider.add_span_processor(SimpleSpanProcessor(self._exporter))
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            from modelyard.otel_export import batch_processor

            exporter = OTLPSpanExporter(endpoint=self._url)
            provider.add_span_processor(batch_processor(exporter, self._bsp))
        self._provider = provider
        return provider.get_tracer("modelyard")


def _triton_records(
    trace: RequestTrace,
    model_version: str,
    sent_ns: int,
    steps: list[tuple[StepTimes, StepTimes | None]],
    first_step_id: int,
) -> list[Any]:
    """A request's records in a Triton trace file: what it is, its timestamps, its tensors;
    an ensemble's ``steps`` after (``_steps_in_start_order``), each a trace of its own (ids
    from ``first_step_id``) whose ``parent_id`` is its ensemble's."""
    trace_id = trace.trace_id
    head: dict[str, Any] = {
        "id": trace_id,
        "model_name": trace.model,
        "model_version": int(model_version) if model_version.isdigit() else -1,
    }
    if trace.request_id:
        head["request_id"] = trace.request_id
    if trace.parent_id is not None:  # a model's own call: no wire of its own
        head["parent_id"] = trace.parent_id
    wire = "GRPC_WAITREAD" if trace.protocol == "grpc" else "HTTP_RECV"
    send = "GRPC_SEND" if trace.protocol == "grpc" else "HTTP_SEND"
    arrived = trace.arrived_ns
    results = max(trace.results_ns, trace.admitted_ns, arrived)
    stamps = [] if trace.parent_id is not None else [(f"{wire}_START", arrived),
                                                     (f"{wire}_END", arrived)]  # fmt: skip
    stamps += [("REQUEST_START", arrived), *_execution_stamps(trace.timing)]
    if len(trace.timing) >= 5:
        results = max(results, trace.timing[4])
    stamps.append(("REQUEST_END", results))
    if trace.parent_id is None:
        stamps += [
            ("INFER_RESPONSE_COMPLETE", results),
            (f"{send}_START", results),
            (f"{send}_END", max(sent_ns, results)),
        ]
    records: list[Any] = [head]
    records += [{"id": trace_id, "timestamps": [{"name": n, "ns": ns}]} for n, ns in stamps]
    for name, (datatype, array) in (trace.inputs or {}).items():
        records.append(tensor_record(trace_id, "TENSOR_QUEUE_INPUT", name, datatype, array))
    for output in trace.outputs or ():
        records.append(
            tensor_record(trace_id, "TENSOR_BACKEND_OUTPUT", output.name, output.datatype,
                          output.data)
        )  # fmt: skip
    ids = {id(step): number for number, (step, _) in enumerate(steps, first_step_id)}
    for step, parent in steps:
        model, version, sent, answered, timing, _, tensors = step
        step_id = ids[id(step)]
        head = {"id": step_id, "model_name": model,
                "model_version": int(version) if version.isdigit() else -1}  # fmt: skip
        if trace.request_id:  # as Triton's: a step's request carries the ensemble's id
            head["request_id"] = trace.request_id
        head["parent_id"] = trace_id if parent is None else ids[id(parent)]
        records.append(head)
        ended = max(answered, timing[4]) if len(timing) >= 5 else answered
        step_stamps = [("REQUEST_START", sent), *_execution_stamps(timing), ("REQUEST_END", ended)]
        records += [{"id": step_id, "timestamps": [{"name": n, "ns": ns}]} for n, ns in step_stamps]
        if tensors is not None:  # the step's request's inputs, its answer's outputs
            for activity, arrays in zip(("TENSOR_QUEUE_INPUT", "TENSOR_BACKEND_OUTPUT"), tensors,
                                        strict=True):  # fmt: skip
                records += [tensor_record(step_id, activity, name, v2_datatype(array), array)
                            for name, array in arrays.items()]  # fmt: skip
    return records


def _steps_in_start_order(
    steps: list[StepTimes], parent: StepTimes | None = None
) -> list[tuple[StepTimes, StepTimes | None]]:
    """Every step, a nested ensemble's too, with the step it is part of (None: the
    request's own), in the order they were sent: the order Triton numbers their traces."""
    flat: list[tuple[StepTimes, StepTimes | None]] = []
    for step in steps:
        flat.append((step, parent))
        flat += _steps_in_start_order(step[5], step)
    return sorted(flat, key=lambda pair: pair[0][2])


def _execution_stamps(timing: list[int]) -> list[tuple[str, int]]:
    """The queue and compute stamps of an execution's times (none when it did not execute
    here), with the activities its model reported while it computed."""
    if len(timing) < 5:
        return []
    enqueued, started, input_end, output_start, executed = timing[:5]
    return [
        ("QUEUE_START", enqueued),
        ("COMPUTE_START", started),
        ("COMPUTE_INPUT_END", input_end),
        *getattr(timing, "activities", ()),
        ("COMPUTE_OUTPUT_START", output_start),
        ("COMPUTE_END", executed),
    ]


def _continues_a_trace(headers: dict[str, str]) -> bool:
    """Whether a request came with a W3C trace context that names a trace and a span."""
    parts = headers.get("traceparent", "").split("-") if headers else []
    return (
        len(parts) == 4
        and len(parts[1]) == 32
        and len(parts[2]) == 16
        and parts[1].strip("0") != ""
        and parts[2].strip("0") != ""
    )


def unknown_model(model: str) -> ProtocolError:
    """A trace setting asked for a model that is not ready, in Triton's words."""
    return ProtocolError(
        f"Request for unknown model : {shown(model, 80)}",
        code=Code.INVALID_ARGUMENT,
        rule="protocol/trace-setting",
        where="GET /v2/repository/index lists the models; a model's trace settings are "
        "asked while it is ready",
        triton=True,
    )


_INT32_MIN, _INT32_MAX, _UINT32_MAX = -(2**31), 2**31 - 1, 2**32 - 1


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
    if not _INT32_MIN <= number <= _INT32_MAX:  # where Triton's parse of an int ends
        low, high = ("-1", str(_INT32_MAX)) if name == "trace_count" else ("0", str(_UINT32_MAX))
        raise _bad(f"Unable to parse '{name}', value is out of range [ {low}, {high} ], "
                   f"got: {shown(str(text), 40)}", triton=True)  # fmt: skip
    if name == "trace_rate" and number < 1:
        raise _bad("trace_rate must be at least 1")
    if name == "trace_count" and number < -1:
        raise _bad("trace_count must be -1 (no end) or more")
    if name == "log_frequency" and number < 0:
        raise _bad("log_frequency must be 0 (at shutdown) or more")
    return number
