"""Request traces: Triton's trace settings, and the spans a traced request leaves, read
through OpenTelemetry's in-memory exporter from an in-process HTTP and gRPC front door."""

from __future__ import annotations

import asyncio
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
from modelyard.server.manager import ControlMode
from modelyard.tracing import Tracing
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import slow_double
from tests.unit.frontdoors.test_http_lane import binary_request, post

PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{PARENT_TRACE}-00f067aa0ba902b7-01"


def _tracing(**settings: Any) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    options: dict[str, Any] = {"mode": "opentelemetry", "level": ["TIMESTAMPS"], "rate": 1}
    options.update(settings)
    return Tracing(exporter=exporter, **options), exporter


def test_settings_read_and_change_as_tritons_globally_and_per_model() -> None:
    tracing = Tracing(mode="opentelemetry")
    assert tracing.settings() == {
        "trace_level": ["OFF"],
        "trace_rate": "1000",
        "trace_count": "-1",
        "log_frequency": "0",
        "trace_file": "",
        "trace_mode": "opentelemetry",
    }
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


def test_triton_mode_trace_files_are_not_written_so_their_level_is_refused() -> None:
    with pytest.raises(ProtocolError) as refused:
        Tracing().update({"trace_level": ["TIMESTAMPS"]})
    assert "--trace-config mode=opentelemetry" in refused.value.line()


def test_one_request_in_rate_is_traced_while_the_count_lasts() -> None:
    tracing, _ = _tracing(rate=3, count=2)
    picked = [tracing.begin("m", None, None, "http", {}, 0) is not None for _ in range(9)]
    assert picked == [True, False, False, True, False, False, False, False, False]
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
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            server = await start_grpc_server(dp, "127.0.0.1", 0, tracing=tracing)
            try:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
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
            finally:
                await server.stop(0)

    asyncio.run(scenario())
    roots = [s for s in exporter.get_finished_spans() if s.name == "InferRequest"]
    assert len(roots) == 2
    traced, refused = roots
    assert format(traced.context.trace_id, "032x") == PARENT_TRACE
    assert traced.attributes is not None and traced.attributes["modelyard.protocol"] == "grpc"
    assert refused.status.status_code.name == "ERROR"
    assert "input 'x' has shape [1, 3]" in (refused.status.description or "")
