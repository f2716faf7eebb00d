"""Models' own metrics (a python model's ``pb_utils.MetricFamily``, the identity backend's
counter), kept by the server for /metrics.

A Triton python-backend model makes counters, gauges and histograms of its own; its
process (``python_stub.py``) sends each call here and the server's /metrics shows them
beside Triton's, in the text tritonserver writes (prometheus-cpp's): counters without a
``_total`` suffix, whole numbers without ``.0``, labels sorted by name.

Each ``MetricFamily`` and ``Metric`` object of a model is a handle, owned by the model's
process. Handles of one family name share the family (the first description stays; another
kind is refused), handles of one family and label set share the series. A series goes when
its last handle does, a family when its last handle does, and all of a process's handles
when it ends (its model unloads, or it crashed), as Triton's python backend deletes them.
The store is bounded: families, series, each process's handles, a name's, a description's
and each label's length, labels per series and buckets per histogram; a call past a bound
is refused with an error line the model sees as ``TritonModelException``.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from modelyard import error_rules
from modelyard.errors import EngineError

COUNTER, GAUGE, HISTOGRAM = 0, 1, 2
_KIND_NAMES = {COUNTER: "counter", GAUGE: "gauge", HISTOGRAM: "histogram"}
_TRITON_KINDS = {
    COUNTER: "TRITONSERVER_METRIC_KIND_COUNTER",
    GAUGE: "TRITONSERVER_METRIC_KIND_GAUGE",
    HISTOGRAM: "TRITONSERVER_METRIC_KIND_HISTOGRAM",
}

MAX_FAMILIES = 1024
MAX_SERIES = 16384
MAX_HANDLES_PER_PROCESS = 16384
MAX_NAME_CHARS = 256
MAX_DESCRIPTION_CHARS = 4096
MAX_LABELS = 32
MAX_LABEL_NAME_CHARS = 128
MAX_LABEL_VALUE_CHARS = 1024
MAX_BUCKETS = 64
# what the models' series may add to a /metrics scrape, all together: the limits above
# multiply (16,384 series of 32 long labels and 64 buckets would write tens of GiB)
MAX_TEXT_BYTES = 16 * 2**20
# the server's own families: a model's may not take their names
RESERVED_PREFIXES = ("nv_", "modelyard_")

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


class MetricRefused(Exception):
    """A model's metric call the server refuses: its error line is what the model sees."""

    def __init__(self, detail: str, triton: bool = True) -> None:
        error = EngineError.of(error_rules.PYTHON_METRICS, detail, triton=triton)
        super().__init__(error.line())


def _limit(what: str, count: int, limit: int) -> MetricRefused:
    return MetricRefused(f"{what} ({count} of at most {limit})", triton=False)


@dataclass
class _Series:
    labels: tuple[tuple[str, str], ...]
    handles: int = 0
    value: float = 0.0
    bounds: tuple[float, ...] = ()  # a histogram's upper bounds (+Inf not among them)
    counts: list[int] = field(default_factory=list)  # per bound, then +Inf's
    observed: int = 0
    text_bytes: int = 0  # about what it writes on /metrics


@dataclass
class _Family:
    name: str
    description: str
    kind: int
    handles: int = 0
    series: dict[tuple[tuple[str, str], ...], _Series] = field(default_factory=dict)


@dataclass
class _Handle:
    owner: Hashable
    family: _Family
    series: _Series | None = None  # None: a MetricFamily's handle


class ModelMetrics:
    """The server's store of its python models' metrics, safe for any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, _Family] = {}
        self._handles: dict[int, _Handle] = {}
        self._owned: dict[Hashable, set[int]] = {}
        self._series_count = 0
        self._text_bytes = 0
        self._ids = itertools.count(1)

    # ---- the calls a model's process sends ------------------------------

    def call(self, owner: Hashable, operation: str, args: tuple[Any, ...]) -> Any:
        """One call of ``owner``'s model: ``family``, ``metric``, ``increment``, ``set``,
        ``observe``, ``value``, ``drop``; raises MetricRefused."""
        with self._lock:
            if operation == "family" and len(args) == 3:
                return self._new_family(owner, *args)
            if operation == "metric" and len(args) == 3:
                return self._new_metric(owner, *args)
            if operation == "drop" and len(args) == 1:
                self._drop(owner, args[0])
                return None
            if operation in ("increment", "set", "observe", "value") and len(args) == 2:
                return self._operate(owner, operation, *args)
        raise MetricRefused(f"unknown metric call '{str(operation)[:64]}'", triton=False)

    def drop_owner(self, owner: Hashable) -> None:
        """A model's process ended: its families and series go, unless another's use them."""
        with self._lock:
            for handle in sorted(self._owned.get(owner, ())):
                self._drop(owner, handle)
            self._owned.pop(owner, None)

    def _new_family(self, owner: Hashable, name: Any, description: Any, kind: Any) -> int:
        if not isinstance(name, str) or not isinstance(description, str):
            raise MetricRefused("a metric family's name and description are strings")
        if kind not in _KIND_NAMES or isinstance(kind, bool):
            raise MetricRefused("Unsupported kind passed to MetricFamily constructor.")
        if len(name) > MAX_NAME_CHARS or not _METRIC_NAME.fullmatch(name):
            raise MetricRefused(
                f"Invalid metric name '{name[:MAX_NAME_CHARS]}': letters, digits, '_' and ':', "
                f"not starting with a digit, at most {MAX_NAME_CHARS} characters",
                triton=False,
            )
        if name.startswith(RESERVED_PREFIXES):
            raise MetricRefused(
                f"metric name '{name}' starts with {' or '.join(RESERVED_PREFIXES)}, which the "
                "server's own metrics use",
                triton=False,
            )
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise _limit(f"metric family '{name}' has a description too long", len(description),
                         MAX_DESCRIPTION_CHARS)  # fmt: skip
        family = self._families.get(name)
        if family is not None and family.kind != kind:
            raise MetricRefused(
                f"Family name already exists with different type: '{name}' is a "
                f"{_KIND_NAMES[family.kind]}, not a {_KIND_NAMES[kind]}"
            )
        if family is None and len(self._families) >= MAX_FAMILIES:
            raise _limit("the server keeps no more metric families of models",
                         len(self._families), MAX_FAMILIES)  # fmt: skip
        self._check_handles(owner)
        if family is None:
            family = self._families[name] = _Family(name, description, kind)
        return self._add_handle(owner, family, None)

    def _new_metric(self, owner: Hashable, family_handle: Any, labels: Any, buckets: Any) -> int:
        family = self._handle(owner, family_handle, family=True).family
        key = self._labels(labels, family.kind)
        bounds = self._bounds(buckets, family.kind)
        self._check_handles(owner)
        series = family.series.get(key)
        if series is None:
            if self._series_count >= MAX_SERIES:
                raise _limit("the server keeps no more metric series of models",
                             self._series_count, MAX_SERIES)  # fmt: skip
            text_bytes = _text_bytes(family.name, key, bounds)
            if self._text_bytes + text_bytes > MAX_TEXT_BYTES:
                raise _limit("the models' series would write more bytes on /metrics than "
                             "the server allows", self._text_bytes + text_bytes,
                             MAX_TEXT_BYTES)  # fmt: skip
            series = _Series(key, bounds=bounds, counts=[0] * (len(bounds) + 1),
                             text_bytes=text_bytes)  # fmt: skip
            family.series[key] = series
            self._series_count += 1
            self._text_bytes += text_bytes
        return self._add_handle(owner, family, series)

    @staticmethod
    def _labels(labels: Any, kind: int) -> tuple[tuple[str, str], ...]:
        if not isinstance(labels, dict):
            raise MetricRefused("Failed to create metric. Labels must be a dictionary.")
        if len(labels) > MAX_LABELS:
            raise _limit("a metric has too many labels", len(labels), MAX_LABELS)
        for name, value in labels.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise MetricRefused(
                    f"label {str(name)[:MAX_LABEL_NAME_CHARS]!r}: a label's name and value are "
                    f"strings, got {type(name).__name__} and {type(value).__name__}",
                    triton=False,
                )
            if (
                len(name) > MAX_LABEL_NAME_CHARS
                or not _LABEL_NAME.fullmatch(name)
                or name.startswith("__")
                or (kind == HISTOGRAM and name == "le")
            ):
                raise MetricRefused(
                    f"Invalid label name '{name[:MAX_LABEL_NAME_CHARS]}': letters, digits and "
                    f"'_', not starting with a digit or '__' ('le' is a histogram's own), at "
                    f"most {MAX_LABEL_NAME_CHARS} characters",
                    triton=False,
                )
            if len(value) > MAX_LABEL_VALUE_CHARS:
                raise _limit(f"label '{name}' has a value too long", len(value),
                             MAX_LABEL_VALUE_CHARS)  # fmt: skip
        return tuple(sorted(labels.items()))

    @staticmethod
    def _bounds(buckets: Any, kind: int) -> tuple[float, ...]:
        if kind != HISTOGRAM:
            if buckets is not None:
                raise MetricRefused("Failed to create metric. Unexpected buckets found.")
            return ()
        if buckets is None:
            raise MetricRefused("Bucket boundaries not found in Metric args.")
        if not isinstance(buckets, list | tuple) or not all(
            isinstance(b, int | float) and not isinstance(b, bool) for b in buckets
        ):
            raise MetricRefused("Failed to create metric. Buckets must be a list of numbers.")
        if len(buckets) > MAX_BUCKETS:
            raise _limit("a histogram has too many buckets", len(buckets), MAX_BUCKETS)
        bounds = tuple(float(b) for b in buckets)
        if any(math.isnan(b) for b in bounds) or any(
            low >= high for low, high in itertools.pairwise(bounds)
        ):
            raise MetricRefused("Bucket Boundaries must be strictly sorted")
        return bounds

    def _check_handles(self, owner: Hashable) -> None:
        held = len(self._owned.get(owner, ()))
        if held >= MAX_HANDLES_PER_PROCESS:
            raise _limit("the model holds too many MetricFamily and Metric objects", held,
                         MAX_HANDLES_PER_PROCESS)  # fmt: skip

    def _add_handle(self, owner: Hashable, family: _Family, series: _Series | None) -> int:
        handle = next(self._ids)
        self._handles[handle] = _Handle(owner, family, series)
        self._owned.setdefault(owner, set()).add(handle)
        family.handles += 1
        if series is not None:
            series.handles += 1
        return handle

    def _handle(self, owner: Hashable, handle: Any, family: bool) -> _Handle:
        found = self._handles.get(handle) if isinstance(handle, int) else None
        if found is None or found.owner != owner or (found.series is None) != family:
            what = "metric family" if family else "metric"
            shown = handle if isinstance(handle, int) and abs(handle) < 2**63 else "of that kind"
            raise MetricRefused(f"no {what} of this model has handle {shown}", triton=False)
        return found

    def _drop(self, owner: Hashable, handle: Any) -> None:
        found = self._handles.get(handle) if isinstance(handle, int) else None
        if found is None or found.owner != owner:
            return  # dropped already (its process ended first)
        del self._handles[handle]
        self._owned[owner].discard(handle)
        family, series = found.family, found.series
        if series is not None:
            series.handles -= 1
            if series.handles == 0:
                del family.series[series.labels]
                self._series_count -= 1
                self._text_bytes -= series.text_bytes
        family.handles -= 1
        if family.handles == 0:
            self._series_count -= len(family.series)
            self._text_bytes -= sum(each.text_bytes for each in family.series.values())
            del self._families[family.name]

    def _operate(self, owner: Hashable, operation: str, handle: Any, value: Any) -> float | None:
        found = self._handle(owner, handle, family=False)
        series, kind = found.series, found.family.kind
        assert series is not None
        triton_kind = _TRITON_KINDS[kind]
        if operation == "value":
            if kind == HISTOGRAM:
                raise MetricRefused(f"{triton_kind} does not support Value")
            return series.value
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise MetricRefused(f"a metric's value is a number, not {type(value).__name__}",
                                triton=False)  # fmt: skip
        value = float(value)
        if operation == "increment":
            if kind == HISTOGRAM:
                raise MetricRefused(f"{triton_kind} does not support Increment")
            if kind == COUNTER and not value >= 0.0:
                raise MetricRefused(
                    f"{triton_kind} can only be incremented monotonically by non-negative values."
                )
            series.value += value
        elif operation == "set":
            if kind != GAUGE:
                raise MetricRefused(f"{triton_kind} does not support Set")
            series.value = value
        else:
            if kind != HISTOGRAM:
                raise MetricRefused(f"{triton_kind} does not support Observe")
            bucket = (
                len(series.bounds)
                if math.isnan(value)
                else bisect.bisect_left(series.bounds, value)
            )
            series.counts[bucket] += 1
            series.observed += 1
            series.value += value
        return None

    # ---- /metrics -------------------------------------------------------------

    def text(self) -> str:
        """The families that have series, in Prometheus text format, as Triton writes them."""
        lines: list[str] = []
        with self._lock:
            for family in self._families.values():
                if not family.series:
                    continue
                name = family.name
                lines.append(f"# HELP {name} {_escape_help(family.description)}")
                lines.append(f"# TYPE {name} {_KIND_NAMES[family.kind]}")
                for series in family.series.values():
                    labels = [f'{k}="{_escape_label(v)}"' for k, v in series.labels]
                    if family.kind != HISTOGRAM:
                        lines.append(f"{name}{_braces(labels)} {_number(series.value)}")
                        continue
                    lines.append(f"{name}_count{_braces(labels)} {series.observed}")
                    lines.append(f"{name}_sum{_braces(labels)} {_number(series.value)}")
                    cumulative = 0
                    for bound, count in zip((*series.bounds, math.inf), series.counts,
                                            strict=True):  # fmt: skip
                        cumulative += count
                        le = [*labels, f'le="{_number(bound)}"']
                        lines.append(f"{name}_bucket{_braces(le)} {cumulative}")
        return "".join(line + "\n" for line in lines)


def _text_bytes(name: str, labels: tuple[tuple[str, str], ...], bounds: tuple[float, ...]) -> int:
    """About what a series writes on /metrics: a line per value (a histogram's count, sum
    and each bucket's, with its ``le``), each with the name and every label."""
    line = len(name) + sum(len(k) + len(v) + 4 for k, v in labels) + 32
    if not bounds:
        return line
    return (len(bounds) + 3) * (line + 32)


def _braces(labels: list[str]) -> str:
    return "{" + ",".join(labels) + "}" if labels else ""


def _number(value: float) -> str:
    """prometheus-cpp's way: the shortest text that reads back, ``1`` for 1.0, ``+Inf``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


# the server's one store (Triton's metrics registry is its process's too)
MODEL_METRICS = ModelMetrics()
