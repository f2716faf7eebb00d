"""Request traces: Triton's trace settings, and the spans a traced request leaves, read
through OpenTelemetry's in-memory exporter from an in-process HTTP and gRPC front door."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tritonclient.grpc import service_pb2, service_pb2_grpc

from modelyard.errors import ProtocolError
from modelyard.frontdoors.grpc import start_grpc_server
from modelyard.frontdoors.http import HttpFrontend
from modelyard.protocol.v2_grpc import encode_infer_request
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.tracing import Tracing, unknown_model
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import slow_double, write_python_model
from tests.unit.frontdoors.test_http_lane import binary_request, post

PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{PARENT_TRACE}-00f067aa0ba902b7-01"


@contextlib.asynccontextmanager
async def _grpc_stub(
    dp: LocalDataPlane, tracing: Tracing
) -> AsyncIterator[service_pb2_grpc.GRPCInferenceServiceStub]:
    """A gRPC front door on ``dp`` with ``tracing``, and a client's stub of it."""
    server = await start_grpc_server(dp, "127.0.0.1", 0, tracing=tracing)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield service_pb2_grpc.GRPCInferenceServiceStub(channel)
    finally:
        await server.stop(0)


def _tracing(**settings: Any) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    options: dict[str, Any] = {"mode": "opentelemetry", "level": ["TIMESTAMPS"], "rate": 1}
    options.update(settings)
    return Tracing(exporter=exporter, **options), exporter


def test_settings_read_and_change_as_tritons_globally_and_per_model() -> None:
    tracing = Tracing(mode="opentelemetry")
    assert tracing.settings() == {  # the file's settings are Triton's mode's alone
        "trace_level": ["OFF"],
        "trace_rate": "1000",
        "trace_count": "-1",
        "trace_mode": "opentelemetry",
    }
    assert Tracing(mode="triton").settings()["log_frequency"] == "0"
    # opentelemetry's own settings as the command line gave them, a key given twice each time
    options = [("url", "localhost:4318/v1/traces"), ("resource", "a=1"), ("resource", "b=2"),
               ("bsp_max_queue_size", "2048")]  # fmt: skip
    reported = Tracing(mode="opentelemetry", options=options).settings()
    assert reported["url"] == "localhost:4318/v1/traces"
    assert reported["resource"] == ["a=1", "b=2"] and reported["bsp_max_queue_size"] == "2048"
    assert not tracing.on
    changed = tracing.update({"trace_level": ["TIMESTAMPS"], "trace_rate": "1"}, "ranker")
    assert changed["trace_level"] == ["TIMESTAMPS"] and changed["trace_rate"] == "1"
    assert tracing.settings()["trace_level"] == ["OFF"]  # the global one is untouched
    assert tracing.on
    cleared = tracing.update({"trace_level": None}, "ranker")  # null: the global setting
    assert cleared["trace_level"] == ["OFF"] and not tracing.on


@pytest.mark.parametrize(
    "changes",
    [
        {"trace_level": ["LOUD"]},
        {"trace_level": ["OFF", "TIMESTAMPS"]},
        {"trace_rate": "0"},
        {"trace_rate": "often"},
        {"trace_count": "-2"},
        {"trace_file": "/etc/passwd"},
        {"trace_file": None},  # as Triton: a request that names it at all
        {"trace_rate": "-99999999999"},  # past Triton's int, below
        {"trace_mode": "triton"},
        {"colour": "blue"},
    ],
)
def test_a_bad_setting_is_refused_and_nothing_changes(changes: dict[str, Any]) -> None:
    tracing = Tracing(mode="opentelemetry")
    before = tracing.settings()
    with pytest.raises(ProtocolError) as refused:
        tracing.update({"trace_rate": "5", **changes})
    assert "rule=protocol/trace-setting" in refused.value.line()
    assert tracing.settings() == before


def test_triton_mode_without_a_trace_file_refuses_a_level() -> None:
    with pytest.raises(ProtocolError) as refused:
        Tracing().update({"trace_level": ["TIMESTAMPS"]})
    assert "--trace-config triton,file=PATH" in refused.value.line()


def test_the_trace_file_is_not_changed_by_a_request_but_its_log_frequency_is(
    tmp_path: Path,
) -> None:
    tracing = Tracing(file=tmp_path / "trace.json")
    with pytest.raises(ProtocolError) as refused:
        tracing.update({"trace_file": str(tmp_path / "elsewhere.json")})
    assert "trace file location can not be updated through network protocol" in str(refused.value)
    assert refused.value.code.name == "UNIMPLEMENTED"
    assert refused.value.line().startswith("trace file location can not be updated")
    assert tracing.update({"log_frequency": "5"})["log_frequency"] == "5"
    with pytest.raises(ProtocolError):
        tracing.update({"log_frequency": "-1"})
    assert tracing.settings()["trace_file"] == str(tmp_path / "trace.json")


def _read(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(path.read_text())
    return records


def _stamps(records: list[dict[str, Any]], trace_id: int) -> list[tuple[str, int]]:
    return [
        (stamp["name"], stamp["ns"])
        for record in records
        if record["id"] == trace_id and "timestamps" in record
        for stamp in record["timestamps"]
    ]


HTTP_STAMPS = [
    "HTTP_RECV_START", "HTTP_RECV_END", "REQUEST_START", "QUEUE_START", "COMPUTE_START",
    "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END",
    "INFER_RESPONSE_COMPLETE", "HTTP_SEND_START", "HTTP_SEND_END",
]  # fmt: skip


def test_a_triton_trace_file_holds_each_request_s_timestamps_and_tensors(tmp_path: Path) -> None:
    """Triton's JSON trace file: written at shutdown when no log frequency is set, one
    array of records; TENSORS adds each input and output."""
    slow_double(tmp_path / "models")
    path = tmp_path / "trace.json"
    tracing = Tracing(level=["TIMESTAMPS", "TENSORS"], rate=1, file=path)

    async def scenario() -> None:
        async with running_dataplane(tmp_path / "models", ControlMode.NONE) as dp:
            app = HttpFrontend(dp, tracing=tracing)
            for index in range(2):
                body, header_length = binary_request(np.full((1, 2), 1.5, np.float32), f"r{index}")
                status, _ = await post(app, body, header_length)
                assert status == 200
            async with _grpc_stub(dp, tracing) as stub:
                request = InferRequest(
                    "slow_double", None, {"x": np.ones((1, 2), np.float32)}, {}, id="g-1"
                )
                await stub.ModelInfer(encode_infer_request(request))

    asyncio.run(scenario())
    assert not path.exists()  # log frequency 0: written when the server stops
    tracing.shutdown()
    records = _read(path)
    heads = [r for r in records if "model_name" in r]
    assert heads == [
        {"id": 1, "model_name": "slow_double", "model_version": 1, "request_id": "r0"},
        {"id": 2, "model_name": "slow_double", "model_version": 1, "request_id": "r1"},
        {"id": 3, "model_name": "slow_double", "model_version": 1, "request_id": "g-1"},
    ]
    for trace_id in (1, 2):
        stamps = _stamps(records, trace_id)
        assert [name for name, _ in stamps] == HTTP_STAMPS
        times = [ns for _, ns in stamps]
        assert times == sorted(times) and times[-1] > times[0]
    grpc_names = [name for name, _ in _stamps(records, 3)]
    assert grpc_names[:2] == ["GRPC_WAITREAD_START", "GRPC_WAITREAD_END"]
    assert grpc_names[-2:] == ["GRPC_SEND_START", "GRPC_SEND_END"]
    tensors = [r for r in records if r["id"] == 1 and "activity" in r]
    assert tensors == [
        {"id": 1, "activity": "TENSOR_QUEUE_INPUT",
         "tensor": {"name": "x", "data": "1.5,1.5", "shape": "1,2", "dtype": "FP32"}},
        {"id": 1, "activity": "TENSOR_BACKEND_OUTPUT",
         "tensor": {"name": "y", "data": "1003,1003", "shape": "1,2", "dtype": "FP32"}},
    ]  # fmt: skip


def test_an_ensembles_steps_are_traces_of_their_own_in_the_file_with_its_parent_id(
    tmp_path: Path,
) -> None:
    """As Triton's trace file: each step a record of its own model and version, numbered
    in the order the steps were sent, its ``parent_id`` the ensemble's trace (a nested
    ensemble's steps: the nested one's), with the request's id and its queue and compute
    stamps; the next request's id comes after the steps'."""
    path = tmp_path / "trace.json"
    tracing = Tracing(level=["TIMESTAMPS"], rate=1, file=path)
    arrived = time.monotonic_ns()
    trace = tracing.begin("ens", None, "r-1", "http", {}, arrived)
    assert trace is not None
    executed = [arrived + 20, arrived + 30, arrived + 40, arrived + 50, arrived + 60]
    # answered in another order than sent; the nested ensemble's step is numbered as sent
    nested = ("simple", "1", arrived + 12, arrived + 14, [], [], None)
    trace.steps.append(("cached", "2", arrived + 71, arrived + 72, [], [], None))  # not executed
    trace.steps.append(("inner", "1", arrived + 11, arrived + 75, [], [nested], None))
    kept = ({"x": np.array([1.5], np.float32)}, {"y": np.array([3], np.int32)})  # TENSORS
    trace.steps.append(("simple", "1", arrived + 10, arrived + 70, executed, [], kept))
    trace.results_ns = arrived + 80
    tracing.finish(trace, "1", arrived + 90)
    following = tracing.begin("ens", None, "r-2", "http", {}, arrived + 100)
    assert following is not None and following.trace_id == 6
    tracing.shutdown()
    records = _read(path)
    heads = [r for r in records if "model_name" in r]
    assert heads == [
        {"id": 1, "model_name": "ens", "model_version": 1, "request_id": "r-1"},
        {"id": 2, "model_name": "simple", "model_version": 1, "request_id": "r-1", "parent_id": 1},
        {"id": 3, "model_name": "inner", "model_version": 1, "request_id": "r-1", "parent_id": 1},
        {"id": 4, "model_name": "simple", "model_version": 1, "request_id": "r-1", "parent_id": 3},
        {"id": 5, "model_name": "cached", "model_version": 2, "request_id": "r-1", "parent_id": 1},
    ]
    assert _stamps(records, 2) == [
        ("REQUEST_START", arrived + 10), ("QUEUE_START", arrived + 20),
        ("COMPUTE_START", arrived + 30), ("COMPUTE_INPUT_END", arrived + 40),
        ("COMPUTE_OUTPUT_START", arrived + 50), ("COMPUTE_END", arrived + 60),
        ("REQUEST_END", arrived + 70),
    ]  # fmt: skip
    assert _stamps(records, 5) == [("REQUEST_START", arrived + 71), ("REQUEST_END", arrived + 72)]
    assert [r for r in records if "activity" in r] == [
        {"id": 2, "activity": "TENSOR_QUEUE_INPUT",
         "tensor": {"name": "x", "data": "1.5", "shape": "1", "dtype": "FP32"}},
        {"id": 2, "activity": "TENSOR_BACKEND_OUTPUT",
         "tensor": {"name": "y", "data": "3", "shape": "1", "dtype": "INT32"}},
    ]  # fmt: skip


def test_a_log_frequency_writes_indexed_files_and_a_count_that_runs_out_writes_at_once(
    tmp_path: Path,
) -> None:
    slow_double(tmp_path / "models")
    every_two = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "a.json", log_frequency=2)
    three = Tracing(level=["TIMESTAMPS"], rate=1, count=3, file=tmp_path / "b.json")

    async def scenario() -> None:
        async with running_dataplane(tmp_path / "models", ControlMode.NONE) as dp:
            for tracing in (every_two, three):
                app = HttpFrontend(dp, tracing=tracing)
                for _ in range(5):
                    body, header_length = binary_request(np.ones((1, 2), np.float32))
                    assert (await post(app, body, header_length))[0] == 200

    asyncio.run(scenario())
    every_two.flush()
    three.flush()
    heads = [r for r in _read(tmp_path / "a.json.0") if "model_name" in r]
    assert [r["id"] for r in heads] == [1, 2]
    assert [r["id"] for r in _read(tmp_path / "a.json.1") if "model_name" in r] == [3, 4]
    assert not (tmp_path / "a.json.2").exists()
    every_two.shutdown()  # the fifth trace, in the next indexed file
    assert [r["id"] for r in _read(tmp_path / "a.json.2") if "model_name" in r] == [5]
    # the count ran out at the third: those three are written at once, then no more traced
    assert [r["id"] for r in _read(tmp_path / "b.json.0") if "model_name" in r] == [1, 2, 3]
    three.shutdown()
    assert not (tmp_path / "b.json").exists() and three.settings()["trace_count"] == "0"


def test_one_request_in_rate_is_traced_while_the_count_lasts() -> None:
    tracing, _ = _tracing(rate=3, count=2)
    picked = [tracing.begin("m", None, None, "http", {}, 0) is not None for _ in range(9)]
    # as Triton's: the 3rd and the 6th (its count then runs out)
    assert picked == [False, False, True, False, False, True, False, False, False]
    assert tracing.settings()["trace_count"] == "0"


def test_model_names_a_caller_sends_keep_no_state() -> None:
    """Sampling counts per owner of settings: random model names grow nothing."""
    tracing, _ = _tracing(rate=1000)
    for index in range(500):
        tracing.begin(f"no-such-model-{index}", None, None, "http", {}, 0)
    assert len(tracing._seen) == 1


def test_a_traced_http_request_leaves_a_span_per_stretch_under_the_callers_trace(
    tmp_path: Path,
) -> None:
    slow_double(tmp_path)
    tracing, exporter = _tracing()

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            app = HttpFrontend(dp, tracing=tracing)
            body, header_length = binary_request(np.ones((1, 2), np.float32), "req-7")
            context = ((b"traceparent", TRACEPARENT.encode()),)
            status, _ = await post(app, body, header_length, headers_too=context)
            assert status == 200

    asyncio.run(scenario())
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"InferRequest", "governance", "decode", "queue", "compute", "response"}
    root = spans["InferRequest"]
    assert format(root.context.trace_id, "032x") == PARENT_TRACE  # the caller's trace
    assert root.attributes is not None
    assert root.attributes["triton.model_name"] == "slow_double"
    assert root.attributes["triton.model_version"] == "1"
    assert root.attributes["triton.request_id"] == "req-7"
    for name in ("governance", "decode", "queue", "compute", "response"):
        child = spans[name]
        assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert root.start_time <= child.start_time <= child.end_time <= root.end_time
    assert spans["queue"].end_time <= spans["compute"].start_time <= spans["response"].start_time
    assert [e.name for e in spans["compute"].events] == [
        "COMPUTE_INPUT_END",
        "COMPUTE_OUTPUT_START",
    ]


def test_a_traced_grpc_request_and_a_refused_one(tmp_path: Path) -> None:
    slow_double(tmp_path)
    tracing, exporter = _tracing()

    async def scenario() -> None:
        async with (
            running_dataplane(tmp_path, ControlMode.NONE) as dp,
            _grpc_stub(dp, tracing) as stub,
        ):
            request = InferRequest(
                "slow_double", None, {"x": np.ones((1, 2), np.float32)}, {}, id="g-1"
            )
            reply = await stub.ModelInfer(
                encode_infer_request(request), metadata=(("traceparent", TRACEPARENT),)
            )
            assert reply.id == "g-1"
            bad = InferRequest("slow_double", None, {"x": np.ones((1, 3), np.float32)}, {})
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.ModelInfer(encode_infer_request(bad))
            settings = await stub.TraceSetting(service_pb2.TraceSettingRequest())
            assert list(settings.settings["trace_level"].value) == ["TIMESTAMPS"]
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await stub.TraceSetting(
                    service_pb2.TraceSettingRequest(model_name="does-not-exist")
                )
            assert unknown.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert (unknown.value.details() or "").startswith(
                "Request for unknown model : does-not-exist"
            )

    asyncio.run(scenario())
    roots = [s for s in exporter.get_finished_spans() if s.name == "InferRequest"]
    assert len(roots) == 2
    traced, refused = roots
    assert format(traced.context.trace_id, "032x") == PARENT_TRACE
    assert traced.attributes is not None and traced.attributes["modelyard.protocol"] == "grpc"
    assert refused.status.status_code.name == "ERROR"
    assert "Expected [-1,2], got [1,3]" in (refused.status.description or "")


def test_cleared_settings_fall_back_as_tritons_model_to_global_global_to_start(
    tmp_path: Path,
) -> None:
    tracing = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "t.json")
    tracing.update({"trace_rate": "12", "log_frequency": "34"}, "simple")
    tracing.update({"trace_rate": "56", "trace_count": "78", "trace_level": ["OFF"]})
    cleared = tracing.update({"trace_rate": None, "trace_count": None})
    assert (cleared["trace_level"], cleared["trace_rate"], cleared["trace_count"]) == (
        ["OFF"], "1", "-1"
    )  # fmt: skip
    model = tracing.settings("simple")
    assert (model["trace_rate"], model["log_frequency"]) == ("12", "34")
    assert tracing.settings()["log_frequency"] == "0"  # the model's is its own
    model = tracing.update({"trace_rate": None, "trace_level": None}, "simple")
    assert (model["trace_rate"], model["log_frequency"], model["trace_level"]) == (
        "1", "34", ["OFF"]
    )  # fmt: skip
    tracing.update({"log_frequency": None}, "simple")
    assert tracing.models == {}  # nothing of its own is left: it follows the global ones


def test_a_models_own_log_frequency_writes_its_traces_apart(tmp_path: Path) -> None:
    tracing = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "t.json")
    tracing.update({"log_frequency": "2"}, "simple")
    for model in ("simple", "other", "simple"):
        trace = tracing.begin(model, "1", None, "http", {}, time.monotonic_ns())
        assert trace is not None
        tracing.finish(trace, "1", time.monotonic_ns())
    tracing.flush()
    written = json.loads((tmp_path / "t.json.0").read_text())
    assert {r["model_name"] for r in written if "model_name" in r} == {"simple"}
    tracing.shutdown()
    rest = json.loads((tmp_path / "t.json").read_text())
    assert [r["model_name"] for r in rest if "model_name" in r] == ["other"]


def test_a_model_that_is_not_ready_is_refused_in_tritons_words() -> None:
    line = unknown_model("does-not-exist").line()
    assert line.startswith("Request for unknown model : does-not-exist")
    assert "rule=protocol/trace-setting" in line


def test_tritonserver_lays_out_a_requests_spans_as_triton() -> None:
    tracing, exporter = _tracing(spans="triton")
    arrived = time.monotonic_ns()
    trace = tracing.begin("simple", None, "r-1", "grpc", {"traceparent": TRACEPARENT}, arrived)
    assert trace is not None
    trace.timing = [arrived + 10, arrived + 20, arrived + 30, arrived + 40, arrived + 50]
    trace.results_ns = arrived + 60
    tracing.finish(trace, "1", arrived + 70)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"InferRequest", "simple", "compute"}
    root, model, compute = spans["InferRequest"], spans["simple"], spans["compute"]
    assert format(root.context.trace_id, "032x") == PARENT_TRACE  # the caller's trace
    assert model.parent is not None and model.parent.span_id == root.context.span_id
    assert compute.parent is not None and compute.parent.span_id == model.context.span_id
    assert [e.name for e in root.events] == [
        "GRPC_WAITREAD_START", "GRPC_WAITREAD_END", "INFER_RESPONSE_COMPLETE",
        "GRPC_SEND_START", "GRPC_SEND_END",
    ]  # fmt: skip
    assert [e.name for e in model.events] == ["REQUEST_START", "QUEUE_START", "REQUEST_END"]
    assert [e.name for e in compute.events] == [
        "COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END",
    ]  # fmt: skip
    assert compute.end_time - compute.start_time == 30  # execution start to end


def test_a_request_on_a_grpc_stream_is_traced_with_the_streams_context(tmp_path: Path) -> None:
    slow_double(tmp_path)
    tracing, exporter = _tracing()

    async def scenario() -> None:
        async with (
            running_dataplane(tmp_path, ControlMode.NONE) as dp,
            _grpc_stub(dp, tracing) as stub,
        ):
            request = InferRequest(
                "slow_double", None, {"x": np.ones((1, 2), np.float32)}, {}, id="s-1"
            )
            call = stub.ModelStreamInfer(metadata=(("traceparent", TRACEPARENT),))
            await call.write(encode_infer_request(request))
            reply = await call.read()
            assert reply.infer_response.id == "s-1"
            await call.done_writing()

    asyncio.run(scenario())
    roots = [s for s in exporter.get_finished_spans() if s.name == "InferRequest"]
    assert len(roots) == 1
    assert format(roots[0].context.trace_id, "032x") == PARENT_TRACE
    assert roots[0].attributes is not None and roots[0].attributes["triton.request_id"] == "s-1"


def test_a_request_that_continues_a_callers_trace_is_traced_whatever_the_rate() -> None:
    tracing, _ = _tracing(rate=0, count=1)  # rate 0: only those (Triton's way to ask)
    context = {"traceparent": TRACEPARENT}
    now = time.monotonic_ns()
    assert tracing.begin("simple", None, None, "http", {}, now) is None
    assert tracing.begin("simple", None, None, "http", context, now) is not None
    tracing.update({"trace_rate": "1"})
    assert tracing.begin("simple", None, None, "http", {}, now) is not None  # the count's one
    assert tracing.begin("simple", None, None, "http", {}, now) is None  # the count ran out
    assert tracing.begin("simple", None, None, "http", context, now) is not None
    bad = {"traceparent": "00-" + "0" * 32 + "-" + "1" * 16 + "-01"}  # names no trace
    assert tracing.begin("simple", None, None, "http", bad, now) is None


def test_an_ensembles_steps_are_spans_under_its_own_as_tritons() -> None:
    tracing, exporter = _tracing(spans="triton")
    arrived = time.monotonic_ns()
    trace = tracing.begin("ens", None, None, "http", {}, arrived)
    assert trace is not None
    step_timing = [arrived + 20, arrived + 30, arrived + 40, arrived + 50, arrived + 60]
    trace.steps.append(("simple", "1", arrived + 10, arrived + 70, step_timing, [], None))
    nested = ("nop", "1", arrived + 72, arrived + 73, [], [], None)
    trace.steps.append(("inner", "1", arrived + 71, arrived + 74, [], [nested], None))
    trace.results_ns = arrived + 80
    tracing.finish(trace, "1", arrived + 90)
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span.name for span in spans}
    nesting = sorted((by_id.get(s.parent.span_id, "") if s.parent else "", s.name) for s in spans)
    assert nesting == [
        ("", "InferRequest"), ("InferRequest", "ens"), ("ens", "inner"), ("ens", "simple"),
        ("inner", "nop"), ("simple", "compute"),
    ]  # fmt: skip
    ensemble = next(s for s in spans if s.name == "ens")
    assert [e.name for e in ensemble.events] == ["REQUEST_START", "QUEUE_START", "REQUEST_END"]


def test_a_model_sees_its_span_s_context_and_its_own_calls_nest_under_it() -> None:
    """Triton's python backend: ``request.trace().get_context()`` is the W3C context of the
    model's span, and a BLS request made with ``trace=request.trace()`` is a span under it,
    in the same trace (an ensemble called so has its steps under its own)."""
    tracing, exporter = _tracing(spans="triton")
    arrived = time.monotonic_ns()
    trace = tracing.begin("bls", None, None, "http", {"traceparent": TRACEPARENT}, arrived)
    assert trace is not None
    context = json.loads(trace.model_context() or "")
    version, trace_hex, span_hex, flags = context["traceparent"].split("-")
    assert (version, trace_hex, flags) == ("00", PARENT_TRACE, "01")
    child = tracing.begin_child("ens", json.dumps(context), arrived + 5)
    assert child is not None
    step_timing = [arrived + 20, arrived + 30, arrived + 40, arrived + 50, arrived + 60]
    child.steps.append(("simple", "1", arrived + 10, arrived + 70, step_timing, [], None))
    tracing.finish_child(child, "1", arrived + 75)
    trace.timing = [arrived + 1, arrived + 2, arrived + 3, arrived + 80, arrived + 85]
    trace.results_ns = arrived + 90
    tracing.finish(trace, "1", arrived + 95)
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span.name for span in spans}
    nesting = sorted((by_id.get(s.parent.span_id, "") if s.parent else "", s.name) for s in spans)
    assert nesting == [
        ("", "InferRequest"), ("InferRequest", "bls"), ("bls", "compute"), ("bls", "ens"),
        ("ens", "simple"), ("simple", "compute"),
    ]  # fmt: skip
    model = next(s for s in spans if s.name == "bls")
    assert format(model.context.span_id, "016x") == span_hex  # the context is its span's
    assert {format(s.context.trace_id, "032x") for s in spans} == {PARENT_TRACE}
    assert tracing.begin_child("ens", "not json", arrived) is None  # no trace to join
    assert tracing.begin_child("ens", '{"traceparent": "00-0-0-00"}', arrived) is None


@pytest.mark.parametrize("batching", ["", "sequence_batching { direct { } }"])
def test_a_python_model_reads_its_request_s_trace_context(tmp_path: Path, batching: str) -> None:
    write_python_model(tmp_path, "context", CONTEXT_MODEL, CONTEXT_CONFIG + batching)
    sequence = {"sequence_id": 7, "sequence_start": True, "sequence_end": True}

    async def scenario(dp: LocalDataPlane) -> None:
        tracing, _ = _tracing(spans="triton")

        def request() -> InferRequest:
            return InferRequest(
                "context", None, {"IN": np.array([1], np.int32)}, {"IN": "INT32"},
                parameters=dict(sequence) if batching else {},
            )  # fmt: skip

        untraced = await dp.infer(request())
        assert untraced.outputs[0].data.tolist() == [b"none"]
        traced_request = request()
        traced_request.trace = trace = tracing.begin("context", None, None, "http", {}, 0)
        assert trace is not None
        traced = await dp.infer(traced_request)
        (said,) = traced.outputs[0].data.tolist()
        assert said.decode() == trace.model_context()

    asyncio.run(_on_dataplane(tmp_path, scenario))


CUSTOM_TRACING_CONFIG = """
backend: "identity"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }]
parameters [
  { key: "enable_custom_tracing" value: { string_value: "true" } },
  { key: "nested_span_count" value: { string_value: "2" } },
  { key: "single_activity_frequency" value: { string_value: "2" } }
]
"""


def test_the_identity_backend_s_custom_activities_are_spans_and_stamps_as_tritons(
    tmp_path: Path,
) -> None:
    """Triton's identity backend with ``enable_custom_tracing``: each traced request's
    ``CUSTOM_ACTIVITY`` span and nested ``CUSTOM_ACTIVITY<n>`` spans under its model's span,
    ``CUSTOM_SINGLE_ACTIVITY`` an event of the span open at it; in a trace file, stamps.
    An untraced request reports nothing and waits for nothing."""
    model = tmp_path / "custom_identity" / "1"
    model.mkdir(parents=True)
    (model.parent / "config.pbtxt").write_text(CUSTOM_TRACING_CONFIG)
    tracing, exporter = _tracing(spans="triton")
    file_tracing = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "trace.json")

    def request() -> InferRequest:
        return InferRequest(
            "custom_identity", None, {"INPUT0": np.array([[4]], np.int32)}, {"INPUT0": "INT32"}
        )

    async def scenario(dp: LocalDataPlane) -> None:
        started = time.monotonic()
        await dp.infer(request())
        assert time.monotonic() - started < 0.1  # no activity, no sleep
        for each in (tracing, file_tracing):
            traced = request()
            traced.trace = trace = each.begin("custom_identity", None, None, "http", {}, 0)
            assert trace is not None
            answer = await dp.infer(traced)
            assert answer.outputs[0].data.tolist() == [[4]]
            trace.answered(answer)
            each.finish(trace, "1", time.monotonic_ns())

    asyncio.run(_on_dataplane(tmp_path, scenario))
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span.name for span in spans}
    nesting = sorted((by_id.get(s.parent.span_id, "") if s.parent else "", s.name) for s in spans)
    assert nesting == [
        ("", "InferRequest"), ("CUSTOM_ACTIVITY0", "CUSTOM_ACTIVITY1"),
        ("InferRequest", "custom_identity"), ("custom_identity", "CUSTOM_ACTIVITY"),
        ("custom_identity", "CUSTOM_ACTIVITY0"), ("custom_identity", "compute"),
    ]  # fmt: skip
    events = {span.name: [e.name for e in span.events] for span in spans}
    assert events["CUSTOM_ACTIVITY"] == ["CUSTOM_ACTIVITY_START", "CUSTOM_ACTIVITY_END"]
    assert events["CUSTOM_ACTIVITY0"] == [
        "CUSTOM_ACTIVITY0_START", "CUSTOM_SINGLE_ACTIVITY", "CUSTOM_ACTIVITY0_END",
    ]  # fmt: skip
    assert events["CUSTOM_ACTIVITY1"] == ["CUSTOM_ACTIVITY1_START", "CUSTOM_ACTIVITY1_END"]
    assert sorted(events["custom_identity"]) == [
        "CUSTOM_SINGLE_ACTIVITY", "QUEUE_START", "REQUEST_END", "REQUEST_START",
    ]  # fmt: skip
    named = {span.name: span for span in spans}
    outer, inner = named["CUSTOM_ACTIVITY0"], named["CUSTOM_ACTIVITY1"]
    assert outer.start_time < inner.start_time < inner.end_time <= outer.end_time
    assert named["CUSTOM_ACTIVITY"].end_time - named["CUSTOM_ACTIVITY"].start_time >= 90e6
    file_tracing.shutdown()
    names = [name for name, _ in _stamps(_read(tmp_path / "trace.json"), 1)]
    assert names[names.index("COMPUTE_INPUT_END") + 1 : names.index("COMPUTE_OUTPUT_START")] == [
        "CUSTOM_ACTIVITY_START", "CUSTOM_ACTIVITY_END", "CUSTOM_SINGLE_ACTIVITY",
        "CUSTOM_ACTIVITY0_START", "CUSTOM_SINGLE_ACTIVITY", "CUSTOM_ACTIVITY1_START",
        "CUSTOM_ACTIVITY1_END", "CUSTOM_ACTIVITY0_END",
    ]  # fmt: skip


async def _on_dataplane(
    repository: Path, scenario: Callable[[LocalDataPlane], Awaitable[None]]
) -> None:
    async with running_dataplane(repository, ControlMode.NONE) as dp:
        await scenario(dp)


CONTEXT_CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }]
output [{ name: "OUT" data_type: TYPE_STRING dims: [ 1 ] }]
"""
CONTEXT_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            context = request.trace().get_context()
            said = np.array([(context or "none").encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", said)]))
        return responses
"""


def test_a_grpc_call_the_caller_cancels_ends_its_spans_unanswered(tmp_path: Path) -> None:
    """As Triton's: the request's spans end once what ran of it has (its compute, here),
    the root with only the call's read events (no response or send)."""
    slow_double(tmp_path, delay=0.3)
    tracing, exporter = _tracing(spans="triton")

    async def scenario() -> None:
        async with (
            running_dataplane(tmp_path, ControlMode.NONE) as dp,
            _grpc_stub(dp, tracing) as stub,
        ):
            request = InferRequest(
                "slow_double", None, {"x": np.ones((1, 2), np.float32)}, {}
            )
            call = stub.ModelInfer(encode_infer_request(request))
            await asyncio.sleep(0.1)  # executing
            call.cancel()
            for _ in range(100):  # its spans end once its execution has
                if exporter.get_finished_spans():
                    break
                await asyncio.sleep(0.01)

    asyncio.run(scenario())
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"InferRequest", "slow_double", "compute"}
    assert [e.name for e in spans["InferRequest"].events] == [
        "GRPC_WAITREAD_START", "GRPC_WAITREAD_END"
    ]  # fmt: skip
    assert [e.name for e in spans["slow_double"].events] == [
        "REQUEST_START", "QUEUE_START", "REQUEST_END"
    ]  # fmt: skip


def test_a_decoupled_python_model_reads_its_request_s_trace_context(tmp_path: Path) -> None:
    config = CONTEXT_CONFIG + "model_transaction_policy { decoupled: true }\n"
    write_python_model(tmp_path, "context", DECOUPLED_CONTEXT_MODEL, config)

    async def scenario(dp: LocalDataPlane) -> None:
        tracing, _ = _tracing(spans="triton")
        request = InferRequest("context", None, {"IN": np.array([1], np.int32)}, {"IN": "INT32"})
        request.trace = trace = tracing.begin("context", None, None, "grpc", {}, 0)
        assert trace is not None
        said = [
            item.response.outputs[0].data.tolist()
            async for item in dp.infer_stream(request)
            if item.response is not None
        ]
        assert said == [[(trace.model_context() or "").encode()]]

    asyncio.run(_on_dataplane(tmp_path, scenario))


DECOUPLED_CONTEXT_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            context = request.trace().get_context()
            said = np.array([(context or "none").encode()], dtype=np.object_)
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", said)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def test_the_batch_span_processor_takes_tritons_bsp_settings() -> None:
    tracing = Tracing(
        mode="opentelemetry", level=["TIMESTAMPS"], rate=1,
        bsp={"bsp_max_queue_size": 64, "bsp_schedule_delay": 250, "bsp_max_export_batch_size": 32},
    )  # fmt: skip
    tracing._make_tracer()
    (processor,) = tracing._provider._active_span_processor._span_processors
    assert (processor.max_queue_size, processor.schedule_delay_millis,
            processor.max_export_batch_size) == (64, 250, 32)  # fmt: skip
    tracing.shutdown()


def test_a_count_set_later_counts_its_own_and_the_replaced_settings_traces_go_to_the_file(
    tmp_path: Path,
) -> None:
    """As Triton replaces its settings object: what the old settings collected is saved
    when a request changes them (to PATH without a log frequency), apart from the new."""
    slow_double(tmp_path / "models")
    tracing = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "count.json")

    async def scenario() -> None:
        async with running_dataplane(tmp_path / "models", ControlMode.NONE) as dp:
            app = HttpFrontend(dp, tracing=tracing)
            for sent in range(7):
                if sent == 4:
                    tracing.update({"trace_count": "2"})
                body, header_length = binary_request(np.ones((1, 2), np.float32))
                assert (await post(app, body, header_length))[0] == 200

    asyncio.run(scenario())
    tracing.flush()
    assert [r["id"] for r in _read(tmp_path / "count.json.0") if "model_name" in r] == [5, 6]
    assert tracing.settings()["trace_count"] == "0"
    tracing.shutdown()
    assert [r["id"] for r in _read(tmp_path / "count.json") if "model_name" in r] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("name", "said"),
    [("trace_rate", "[ 0, 4294967295 ]"), ("trace_count", "[ -1, 2147483647 ]"),
     ("log_frequency", "[ 0, 4294967295 ]")],
)  # fmt: skip
def test_a_number_past_tritons_int_is_refused_in_its_words(name: str, said: str) -> None:
    tracing = Tracing(mode="opentelemetry")
    with pytest.raises(ProtocolError) as refused:
        tracing.update({name: "10000000000"})
    assert refused.value.line().startswith(
        f"Unable to parse '{name}', value is out of range {said}, got: 10000000000"
    )
    if name != "log_frequency":  # the file's setting: Triton's mode's alone
        assert tracing.update({name: "2147483647"})[name] == "2147483647"


def test_a_log_frequency_without_a_trace_file_is_kept_and_reported() -> None:
    tracing = Tracing()
    assert tracing.update({"log_frequency": "3"})["log_frequency"] == "3"
    assert tracing.update({"log_frequency": "1"}, model="m")["log_frequency"] == "1"
    assert tracing.settings()["log_frequency"] == "3"
    assert tracing.update({"log_frequency": None})["log_frequency"] == "0"


def test_a_models_own_call_traced_to_the_file_is_a_trace_with_its_callers_parent_id(
    tmp_path: Path,
) -> None:
    from modelyard.engines.pb_utils import InferenceTrace

    tracing = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "bls.json")
    caller = tracing.begin("bls", "1", None, "http", {}, time.monotonic_ns())
    assert caller is not None
    context = caller.model_context()
    assert context is not None and InferenceTrace(context).get_context() is None  # as Triton's
    child = tracing.begin_child("simple", context, time.monotonic_ns())
    assert child is not None and child.parent_id == caller.trace_id
    assert tracing.begin_child("simple", '{"triton_trace_id": "99"}', 0) is None  # no such
    assert tracing.begin_child("simple", "not json", 0) is None
    tracing.finish_child(child, "1", time.monotonic_ns())
    tracing.finish(caller, "1", time.monotonic_ns())
    tracing.shutdown()
    records = _read(tmp_path / "bls.json")
    heads = {r["id"]: r for r in records if "model_name" in r}
    assert heads[child.trace_id]["parent_id"] == caller.trace_id
    assert "parent_id" not in heads[caller.trace_id]
    stamps = [name for name, _ in _stamps(records, child.trace_id)]
    assert stamps[0] == "REQUEST_START" and not any(n.startswith("HTTP") for n in stamps)
