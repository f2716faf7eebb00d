"""A python model's own metrics (pb_utils.MetricFamily): the server's store, its /metrics
text, pb_utils' API over it, and a stub's model making them in initialize and execute."""

from __future__ import annotations

import gc
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import pb_utils, python_metrics
from modelyard.engines.base import DecoupledRequest, LoadContext
from modelyard.engines.python import PythonEngine
from modelyard.engines.python_metrics import (
    COUNTER,
    GAUGE,
    HISTOGRAM,
    MODEL_METRICS,
    MetricRefused,
    ModelMetrics,
)
from modelyard.errors import EngineError

# ---- the server's store ----------------------------------------------------------------


def _refused(store: ModelMetrics, owner: str, operation: str, *args: Any) -> str:
    with pytest.raises(MetricRefused) as refused:
        store.call(owner, operation, args)
    return str(refused.value)


def test_counters_gauges_and_histograms_read_as_triton_writes_them() -> None:
    store = ModelMetrics()
    counter = store.call("a", "family", ("requests", "Requests seen", COUNTER))
    gauge = store.call("a", "family", ("temperature", "Degrees", GAUGE))
    histogram = store.call("a", "family", ("latency", "Seconds", HISTOGRAM))
    c = store.call("a", "metric", (counter, {"b": "2", "a": "1"}, None))
    g = store.call("a", "metric", (gauge, {}, None))
    h = store.call("a", "metric", (histogram, {"m": "x"}, [0.1, 1.0, 2.5]))
    store.call("a", "increment", (c, 2023.0))
    store.call("a", "increment", (g, 5.0))
    store.call("a", "increment", (g, -1.5))
    for value in (0.05, 1.0, 6.0):
        store.call("a", "observe", (h, value))
    assert store.call("a", "value", (c, None)) == 2023.0
    assert store.call("a", "value", (g, None)) == 3.5
    assert store.text() == textwrap.dedent("""\
        # HELP requests Requests seen
        # TYPE requests counter
        requests{a="1",b="2"} 2023
        # HELP temperature Degrees
        # TYPE temperature gauge
        temperature 3.5
        # HELP latency Seconds
        # TYPE latency histogram
        latency_count{m="x"} 3
        latency_sum{m="x"} 7.05
        latency_bucket{m="x",le="0.1"} 1
        latency_bucket{m="x",le="1"} 2
        latency_bucket{m="x",le="2.5"} 2
        latency_bucket{m="x",le="+Inf"} 3
        """)


def test_each_kind_refuses_what_triton_refuses_in_its_words() -> None:
    store = ModelMetrics()
    counter_family = store.call("a", "family", ("c", "", COUNTER))
    counter = store.call("a", "metric", (counter_family, {}, None))
    gauge = store.call("a", "metric", (store.call("a", "family", ("g", "", GAUGE)), {}, None))
    histogram_family = store.call("a", "family", ("h", "", HISTOGRAM))
    histogram = store.call("a", "metric", (histogram_family, {}, []))
    assert _refused(store, "a", "increment", counter, -1.0).startswith(
        "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
        "non-negative values.; rule=engine/python-metrics; change: "
    )
    assert "KIND_COUNTER does not support Set" in _refused(store, "a", "set", counter, 1.0)
    assert "KIND_GAUGE does not support Observe" in _refused(store, "a", "observe", gauge, 1.0)
    assert "KIND_HISTOGRAM does not support Value" in _refused(store, "a", "value", histogram, 0)
    assert "does not support Increment" in _refused(store, "a", "increment", histogram, 1.0)
    assert "Unsupported kind" in _refused(store, "a", "family", "k", "", 7)
    for buckets in ([2.5, 0.1], [1, 1, 2]):
        assert "strictly sorted" in _refused(store, "a", "metric", histogram_family, {}, buckets)
    assert "not found" in _refused(store, "a", "metric", histogram_family, {}, None)
    assert "Unexpected buckets" in _refused(store, "a", "metric", counter_family, {}, [1.0])
    assert store.call("a", "value", (counter, None)) == 0.0  # nothing refused changed it


def test_a_family_name_keeps_its_kind_and_first_description_while_it_lives() -> None:
    store = ModelMetrics()
    first = store.call("a", "family", ("dup", "first description", COUNTER))
    second = store.call("b", "family", ("dup", "second description", COUNTER))
    assert "Family name already exists with different type" in _refused(
        store, "a", "family", "dup", "d", GAUGE
    )
    one = store.call("a", "metric", (first, {"k": "v"}, None))
    other = store.call("b", "metric", (second, {"k": "v"}, None))  # the same series
    store.call("a", "increment", (one, 7.5))
    assert store.call("b", "value", (other, None)) == 7.5
    store.drop_owner("a")  # a's process ended: b's handles keep the family and the series
    assert store.text() == '# HELP dup first description\n# TYPE dup counter\ndup{k="v"} 7.5\n'
    store.call("b", "drop", (other,))
    assert store.text() == ""  # a family without series is not shown
    store.call("b", "drop", (second,))
    store.call("c", "family", ("dup", "now a gauge", GAUGE))  # gone: its name is free


def test_names_labels_and_handles_are_checked() -> None:
    store = ModelMetrics()
    family = store.call("a", "family", ("ok", "", HISTOGRAM))
    assert "Invalid metric name" in _refused(store, "a", "family", "9lives", "", COUNTER)
    assert "server's own metrics" in _refused(store, "a", "family", "nv_inference_count", "", 0)
    assert "Labels must be a dictionary" in _refused(store, "a", "metric", family, [], [1.0])
    for labels in ({"__x": "v"}, {"le": "v"}, {"a-b": "v"}):
        assert "Invalid label name" in _refused(store, "a", "metric", family, labels, [1.0])
    assert "are strings" in _refused(store, "a", "metric", family, {"k": 1}, [1.0])
    assert "no metric family of this model" in _refused(store, "b", "metric", family, {}, [1.0])
    assert "unknown metric call" in _refused(store, "a", "delete_everything")


@pytest.mark.parametrize(
    ("limit", "bound", "call"),
    [
        ("MAX_FAMILIES", 1, lambda s, f: s.call("a", "family", ("another", "", COUNTER))),
        ("MAX_SERIES", 1, lambda s, f: s.call("a", "metric", (f, {"k": "new"}, None))),
        ("MAX_HANDLES_PER_PROCESS", 2, lambda s, f: s.call("a", "metric", (f, {}, None))),
        (
            "MAX_LABELS",
            2,
            lambda s, f: s.call("a", "metric", (f, {"a": "", "b": "", "c": ""}, None)),
        ),
        ("MAX_LABEL_VALUE_CHARS", 2, lambda s, f: s.call("a", "metric", (f, {"k": "x" * 9}, None))),
        ("MAX_DESCRIPTION_CHARS", 2, lambda s, f: s.call("a", "family", ("long", "x" * 9, GAUGE))),
        ("MAX_TEXT_BYTES", 100, lambda s, f: s.call("a", "metric", (f, {"k": "x" * 60}, None))),
    ],
)
def test_what_a_model_makes_is_bounded(
    monkeypatch: pytest.MonkeyPatch, limit: str, bound: int, call: Any
) -> None:
    store = ModelMetrics()
    family = store.call("a", "family", ("one", "", COUNTER))
    store.call("a", "metric", (family, {"k": "first"}, None))
    monkeypatch.setattr(python_metrics, limit, bound)
    with pytest.raises(MetricRefused) as refused:
        call(store, family)
    assert f"of at most {bound})" in str(refused.value)
    assert "rule=engine/python-metrics" in str(refused.value)
    assert store.text().count("\n") == 3  # what stood before stands


def test_the_text_bytes_of_series_are_given_back_when_they_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(python_metrics, "MAX_TEXT_BYTES", 4096)
    store = ModelMetrics()
    family = store.call("a", "family", ("hist", "", HISTOGRAM))
    buckets = [float(b) for b in range(10)]
    first = store.call("a", "metric", (family, {"k": "x" * 100}, buckets))
    with pytest.raises(MetricRefused):  # a second as long passes the bound
        store.call("a", "metric", (family, {"k": "y" * 100}, buckets))
    store.call("a", "drop", (first,))
    store.call("a", "metric", (family, {"k": "y" * 100}, buckets))  # room again


def test_help_and_label_values_are_escaped() -> None:
    store = ModelMetrics()
    family = store.call("a", "family", ("esc", 'two\nlines \\ "q"', GAUGE))
    metric = store.call("a", "metric", (family, {"k": 'a"b\\c\nd'}, None))
    store.call("a", "set", (metric, float("inf")))
    assert store.text() == (
        '# HELP esc two\\nlines \\\\ "q"\n# TYPE esc gauge\nesc{k="a\\"b\\\\c\\nd"} +Inf\n'
    )


# ---- pb_utils' API -----------------------------------------------------------------------


@pytest.fixture
def wired() -> Iterator[ModelMetrics]:
    """pb_utils' metric calls on a store of their own, as a stub's process sends them."""
    store = ModelMetrics()

    def ask(operation: str, args: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            return ("ok", store.call("model", operation, args))
        except MetricRefused as refused:
            return ("error", str(refused))

    pb_utils.metrics_through(ask, lambda operation, args: store.call("model", operation, args))
    yield store
    pb_utils.metrics_through(None, None)


def test_pb_utils_metric_families_as_triton_documents_them(wired: ModelMetrics) -> None:
    family = pb_utils.MetricFamily(
        name="requests_total_py", description="d", kind=pb_utils.MetricFamily.COUNTER
    )
    first = family.Metric(labels={"k": "v"})
    second = family.Metric(labels={"k": "v"})
    first.increment(2)
    assert second.value() == 2.0
    del first, second  # the family keeps the series: a Metric made again reads it
    assert family.Metric(labels={"k": "v"}).value() == 2.0
    with pytest.raises(pb_utils.TritonModelException, match=r"^Failed to increment metric value: "
                       r"TRITONSERVER_METRIC_KIND_COUNTER can only be"):  # fmt: skip
        family.Metric(labels={"k": "v"}).increment(-1)
    histogram = pb_utils.MetricFamily("h", "d", pb_utils.MetricFamily.HISTOGRAM)
    with pytest.raises(pb_utils.TritonModelException, match="Missing required buckets"):
        histogram.Metric(labels={})
    with pytest.raises(pb_utils.TritonModelException, match=r"^Error when creating Metric: Bucket"):
        histogram.Metric(buckets=[2.0, 1.0])
    with pytest.raises(pb_utils.TritonModelException, match="Unexpected buckets found"):
        family.Metric(buckets=[1.0])
    with pytest.raises(pb_utils.TritonModelException, match="Labels must be a dictionary"):
        family.Metric(labels=[("k", "v")])  # type: ignore[arg-type]
    with pytest.raises(pb_utils.TritonModelException, match=r"^Error when creating MetricFamily"):
        pb_utils.MetricFamily("h", "d", pb_utils.MetricFamily.GAUGE)
    with pytest.raises(TypeError):
        pb_utils.MetricFamily("g", "d", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        family.Metric().increment("1")
    assert 'requests_total_py{k="v"} 2\n' in wired.text()


def test_a_metric_of_a_deleted_family_says_so_and_the_family_goes(wired: ModelMetrics) -> None:
    family = pb_utils.MetricFamily("gone", "d", pb_utils.MetricFamily.GAUGE)
    metric = family.Metric(labels={"k": "v"})
    metric.set(3)
    assert "gone{" in wired.text()
    del family
    gc.collect()
    for call in (lambda: metric.set(1), lambda: metric.increment(1), metric.value):
        with pytest.raises(pb_utils.TritonModelException,
                           match="the corresponding 'MetricFamily' has been deleted"):  # fmt: skip
            call()
    assert wired.text() == ""


def test_a_model_in_the_server_s_process_is_told_where_metrics_are_served() -> None:
    with pytest.raises(pb_utils.TritonModelException, match="in a process of their own"):
        pb_utils.MetricFamily("x", "d", pb_utils.MetricFamily.COUNTER)


# ---- a stub's model ----------------------------------------------------------------------

MODEL = """
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.family = pb_utils.MetricFamily(
            name="stub_requests", description="requests seen",
            kind=pb_utils.MetricFamily.COUNTER)
        self.metric = self.family.Metric(labels={"model": args["model_name"]})
        # a thread of the model's, between requests
        gauges = pb_utils.MetricFamily("stub_background", "", pb_utils.MetricFamily.GAUGE)
        threading.Thread(target=lambda: gauges.Metric().set(42)).start()
        self.gauges = gauges

    def execute(self, requests):
        self.metric.increment(len(requests))
        try:
            self.metric.set(1)
        except pb_utils.TritonModelException as error:
            said = str(error)
        value = np.array([self.metric.value(), len(said)], dtype=np.float32)
        responses = [pb_utils.InferenceResponse([pb_utils.Tensor("Y", value)]) for _ in requests]
        if not DECOUPLED:
            return responses
        for request, response in zip(requests, responses):
            request.get_response_sender().send(
                response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

CONFIG = """
name: "metered"
backend: "python"
output [{ name: "Y" data_type: TYPE_FP32 dims: [ 2 ] }]
"""


def _executed(engine: PythonEngine, decoupled: bool) -> Any:
    if not decoupled:
        return engine.execute({}, ["Y"])["Y"]
    got: list[Any] = []
    engine.execute_decoupled(
        [DecoupledRequest({}, ["Y"], lambda outputs, error, final: got.append(outputs), bool)]
    )
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    return got[0]["Y"]


@pytest.mark.parametrize("decoupled", [False, True])
def test_a_stub_s_model_makes_metrics_from_any_thread_and_they_go_when_it_unloads(
    tmp_path: Path, decoupled: bool
) -> None:
    version_dir = tmp_path / "metered" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(MODEL.replace("DECOUPLED", str(decoupled)))
    policy = "model_transaction_policy { decoupled: true }" if decoupled else ""
    config = text_format.Parse(CONFIG + policy, mc.ModelConfig())
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config))
    try:
        deadline = time.monotonic() + 10
        while "stub_background 42\n" not in MODEL_METRICS.text():
            assert time.monotonic() < deadline, MODEL_METRICS.text()
            time.sleep(0.01)
        for count in (1.0, 2.0):
            value, said = _executed(engine, decoupled)
            assert value == count and said > 0
        assert 'stub_requests{model="metered"} 2\n' in MODEL_METRICS.text()
    finally:
        engine.unload()
    assert "stub_requests" not in MODEL_METRICS.text()
    assert "stub_background" not in MODEL_METRICS.text()


def test_the_server_s_metrics_text_carries_the_models_own_after_triton_s(tmp_path: Path) -> None:
    from modelyard.metrics import make_registry, metrics_text
    from modelyard.modelfiles.repository import ModelRepository
    from modelyard.server.manager import ModelManager

    manager = ModelManager(ModelRepository(tmp_path))
    family = MODEL_METRICS.call("owner-of-this-test", "family", ("shown_here", "d", GAUGE))
    try:
        MODEL_METRICS.call("owner-of-this-test", "metric", (family, {}, None))
        text = metrics_text(manager, make_registry(manager, cpu_metrics=False)).decode()
        assert "# TYPE shown_here gauge\nshown_here 0\n" in text
        assert text.index("nv_inference_count") < text.index("shown_here")
    finally:
        MODEL_METRICS.drop_owner("owner-of-this-test")
    assert (
        "shown_here"
        not in metrics_text(manager, make_registry(manager, cpu_metrics=False)).decode()
    )


CRASHING = """
import os

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.family = pb_utils.MetricFamily("stub_crashing", "", pb_utils.MetricFamily.COUNTER)
        self.family.Metric().increment(1)

    def execute(self, requests):
        os._exit(3)
"""


def test_the_metrics_of_a_model_s_process_that_crashed_go_with_it(tmp_path: Path) -> None:
    version_dir = tmp_path / "metered" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(CRASHING)
    engine = PythonEngine()
    engine.load(
        LoadContext(
            version_dir / "model.py", version_dir, text_format.Parse(CONFIG, mc.ModelConfig())
        )
    )
    try:
        assert "stub_crashing 1\n" in MODEL_METRICS.text()
        with pytest.raises(EngineError, match="exit code 3"):
            engine.execute({}, ["Y"])
        deadline = time.monotonic() + 10
        while "stub_crashing" in MODEL_METRICS.text():
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        engine.unload()


def test_a_metrics_socket_serves_each_call_and_closes_on_an_oversized_one() -> None:
    import socket
    import threading
    from multiprocessing.connection import Connection

    from modelyard.engines import python_stub

    server_end, model_end = socket.socketpair()
    serving = threading.Thread(
        target=python_stub._serve_metrics, args=(Connection(server_end.detach()),)
    )
    serving.start()
    channel = python_stub._MetricsChannel(model_end.detach())
    status, family = channel.ask("family", ("socket_served", "", COUNTER))
    assert status == "ok"
    assert channel.ask("metric", (family, {"k": 1}, None))[0] == "error"  # refused, answered
    assert channel.ask("metric", (family, {}, None))[0] == "ok"
    assert "socket_served 0\n" in MODEL_METRICS.text()
    channel.tell("drop", ("x" * python_stub.MAX_METRIC_CALL_BYTES,))
    serving.join(5)
    assert not serving.is_alive()  # it closed the socket, and the model's handles went
    assert "socket_served" not in MODEL_METRICS.text()
    assert channel.ask("family", ("again", "", COUNTER))[0] == "error"
