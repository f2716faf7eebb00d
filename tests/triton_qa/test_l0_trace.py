"""Triton's qa/L0_trace: the trace extension (``/v2/trace/setting``,
``/v2/models/<model>/trace/setting``, gRPC ``TraceSetting``).

As its test.sh's "Python client library" server: ``--trace-config
triton,file=global_unittest.log --trace-config level=TIMESTAMPS --trace-config rate=1``,
``trace_endpoint_test.py`` (six tests) against ``simple`` (``onnx_int32_int32_int32``
of Triton's generator, version 1; here the example model ``simple`` of the same
tensors, made without running the generator: the file asks only its settings), under
``TRITON_QA=full``.

The default run starts one server for three folders (most of a run is the server's
start): this one's, with the repository of L0_simple_ensemble (whose ``simple`` the
trace file asks for), answering ``trace_endpoint_test.py``, L0_logging's
``logging_endpoint_test.py`` (its server's flags are test.sh's defaults; the trace
flags change nothing it asks) and L0_simple_ensemble's ``test_ensemble_add_sub``
(first: it counts the inferences of each of ``simple``'s versions).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories, test_l0_logging, test_l0_simple_ensemble

pytestmark = pytest.mark.slow

QA_FILE = "trace_endpoint_test.py"
BASE = "onnx_int32_int32_int32"  # test.sh's MODELBASE
T = TypeVar("T")
COUNT = 6  # test.sh's EXPECTED_NUM_TESTS
TRACE_ARGS = [
    "--trace-config", "triton,file=global_unittest.log",
    "--trace-config", "level=TIMESTAMPS",
    "--trace-config", "rate=1",
]  # fmt: skip


# test.sh's OpenTelemetry server, as far as the tests chosen below ask
OTEL_ARGS = [
    "--allow-sagemaker=true", "--model-control-mode=explicit", "--load-model=simple",
    "--load-model=repeat_int32",
    "--load-model=ensemble_add_sub_int32_int32_int32", "--load-model=bls_simple",
    "--load-model=trace_context", "--load-model=input_all_required",
    "--load-model=dynamic_batch", "--load-model=custom_identity_int32",
    "--trace-config=level=TIMESTAMPS", "--trace-config=rate=1", "--trace-config=count=-1",
    "--trace-config=mode=opentelemetry",
    "--trace-config=opentelemetry,resource=test.key=test.value",
    "--trace-config=opentelemetry,resource=service.name=test_triton",
    "--trace-config=opentelemetry,url=localhost:10000/v1/traces",
]  # fmt: skip
# the tests of opentelemetry_unittest.py whose spans modelyard makes as Triton's (one
# request to `simple`, over each protocol, with and without the caller's trace context;
# one to `repeat_int32`; at a rate of 5, requests to the ensemble with and without the
# caller's context; one to the ensemble, its step's span under its own; `bls_simple`'s
# call to the ensemble, its spans under the calling model's; the trace context a python
# model reads; a gRPC call cancelled while it executes, and one cancelled in its queue;
# the identity backend's custom activities, with and without the caller's context; a call
# to SageMaker's /invocations with the caller's context, and one to a model loaded through
# its multi-model endpoint);
# docs/triton-qa.md says what stands in the way of the others
OTEL_TESTS = [
    f"OpenTelemetryTest.test_{protocol}_trace_simple_model{context}"
    for protocol in ("http", "grpc", "streaming_grpc")
    for context in ("", "_context_propagation")
] + [
    "OpenTelemetryTest.test_non_decoupled",
    "OpenTelemetryTest.test_http_trace_triggered",
    "OpenTelemetryTest.test_http_trace_ensemble_model",
    "OpenTelemetryTest.test_http_trace_ensemble_model_context_propagation",
    "OpenTelemetryTest.test_http_trace_bls_model",
    "OpenTelemetryTest.test_http_trace_bls_model_context_propagation",
    "OpenTelemetryTest.test_trace_context_exposed_to_pbe",
    "OpenTelemetryTest.test_grpc_trace_all_input_required_model_cancel",
    "OpenTelemetryTest.test_grpc_trace_model_cancel_in_queue",
    "OpenTelemetryTest.test_custom_backend_tracing",
    "OpenTelemetryTest.test_custom_backend_tracing_context_propagation",
    "OpenTelemetryTest.test_sagemaker_invocation_trace_simple_model_context_propagation",
    "OpenTelemetryTest.test_sagemaker_invoke_trace_simple_model_context_propagation",
]
# what test.sh exports for its OpenTelemetry server: SageMaker's /invocations model
OTEL_ENV = {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "simple"}


def repository(work: Path) -> Path:
    """test.sh's ``trace_models``, as far as the file asks: ``simple``."""
    models = work / "trace_models"
    models.mkdir(exist_ok=True)
    simple_add_sub(models)
    return models


@pytest.mark.triton_qa_full
def test_trace_endpoint(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_trace")
    args = [*TRACE_ARGS, f"--model-repository={repository(work)}"]
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=work):
        run = harness.run_qa_file(host, work, QA_FILE)
    run.check(count=COUNT)


def stand_in_collector(work: Path) -> None:
    """``./otelcol``, as test.sh downloads it: the stand-in (otel_collector.py)."""
    otelcol = work / "otelcol"
    otelcol.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m tests.triton_qa.otel_collector "$@"\n'
    )
    otelcol.chmod(0o755)


# Triton's src/test/models/repeat_int32 (its C++ `repeat` backend) as test.sh makes it
# not decoupled: one response a request, OUT the one element of IN, IDX 0
REPEAT_CONFIG = """name: "repeat_int32"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: False }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
"""
REPEAT_MODEL = """import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if values.size != 1:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    "a model that is not decoupled sends one response: IN has one element")))
                continue
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", values.astype(np.int32)),
                pb_utils.Tensor("IDX", np.zeros(1, np.uint32)),
            ]))
        return responses
"""


# qa_ensemble_model_repository's simple_onnx_int32_int32_int32 as test.sh makes it: one
# step, the model renamed `simple`
ENSEMBLE_CONFIG = """name: "ensemble_add_sub_int32_int32_int32"
platform: "ensemble"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
ensemble_scheduling { step [ {
  model_name: "simple" model_version: -1
  input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
  output_map { key: "OUTPUT0" value: "OUTPUT0" } output_map { key: "OUTPUT1" value: "OUTPUT1" }
} ] }
"""


def sagemaker_models(work: Path) -> Path:
    """What test.sh puts in ``/opt/ml/models`` for SageMaker's multi-model load:
    ``123456789abcdefghi/model``, ``gen_qa_models.py --onnx``'s ``onnx_int32_int32_int32``
    (version 1) renamed ``simple``."""
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    models = work / "sagemaker_models"
    model = shutil.copytree(generated / BASE, models / "123456789abcdefghi" / "model")
    for version in ("2", "3"):
        shutil.rmtree(model / version)
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace(BASE, "simple"))
    return models


def otel_repository(work: Path) -> Path:
    """test.sh's repository for its OpenTelemetry server, as far as the chosen tests ask:
    ``simple``, ``repeat_int32`` (a python model in the place of Triton's C++ one), the
    one-step ensemble over ``simple``, ``bls_simple``, ``trace_context``, the cancelled
    calls' models and ``custom_identity_int32``."""
    models = repository(work)
    ensemble = models / "ensemble_add_sub_int32_int32_int32"
    (ensemble / "1").mkdir(parents=True)
    (ensemble / "config.pbtxt").write_text(ENSEMBLE_CONFIG)
    (models / "repeat_int32" / "1").mkdir(parents=True)
    (models / "repeat_int32" / "config.pbtxt").write_text(REPEAT_CONFIG)
    (models / "repeat_int32" / "1" / "model.py").write_text(REPEAT_MODEL)
    # test.sh's python models: bls_simple (qa/python_models) and the folder's trace_context
    for name, source in (
        ("bls_simple", work.parent / "python_models" / "bls_simple" / "bls_simple.py"),
        ("trace_context", work / "trace_context.py"),
    ):
        (models / name / "1").mkdir(parents=True)
        shutil.copy(source, models / name / "1" / "model.py")
    # the cancelled calls' models: the folder's input_all_required (2 s an execution) and
    # test.sh's dynamic_batch (the identity backend, 8 s an execution, queued 1 s at most)
    shutil.copytree(work / "models" / "input_all_required", models / "input_all_required")
    (models / "dynamic_batch" / "1").mkdir(parents=True)
    (models / "dynamic_batch" / "config.pbtxt").write_text(DYNAMIC_BATCH_CONFIG)
    (models / "custom_identity_int32" / "1").mkdir(parents=True)
    (models / "custom_identity_int32" / "config.pbtxt").write_text(CUSTOM_IDENTITY_CONFIG)
    return models


DYNAMIC_BATCH_CONFIG = """backend: "identity"
max_batch_size: 1
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
instance_group [{ count: 1 kind: KIND_CPU }]
dynamic_batching {
  preferred_batch_size: [ 1 ]
  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 1000000
                         max_queue_size: 8 }
}
parameters [{ key: "execute_delay_ms" value: { string_value: "8000" } }]
"""


# test.sh's second custom_identity_int32 (the identity backend, 500 ms an execution, its
# custom activities: six nested spans, the single activity in every third)
CUSTOM_IDENTITY_CONFIG = """name: "custom_identity_int32"
backend: "identity"
max_batch_size: 1024
input [{ name: "INPUT0"
 data_type: TYPE_INT32
 dims: [ -1 ] }]
output [{ name: "OUTPUT0"
 data_type: TYPE_INT32
 dims: [ -1 ] }]
instance_group [{ kind: KIND_CPU }]
parameters [{ key: "execute_delay_ms"
 value: { string_value: "500" } }, { key: "enable_custom_tracing"
 value: { string_value: "true" } }, { key: "nested_span_count"
 value: { string_value: "6" } }, { key: "single_activity_frequency"
 value: { string_value: "3" } }]
"""


@pytest.mark.triton_qa_full
@pytest.mark.timeout(900)  # about eight minutes: each test waits 25 s or more for its collector
def test_opentelemetry(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_trace")
    stand_in_collector(work)
    args = [*OTEL_ARGS, f"--model-repository={otel_repository(work)}"]
    models = sagemaker_models(work)
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=work, env=OTEL_ENV,
                              prefix=harness.in_opt_ml(models=models)):  # fmt: skip
        run = harness.run_qa_file(host, work, "opentelemetry_unittest.py", *OTEL_TESTS)
    run.check(count=len(OTEL_TESTS))


def test_logging_trace_and_simple_ensemble_on_one_server(
    host: LoopbackHost, tmp_path: Path
) -> None:
    trace = harness.work_directory(tmp_path, "L0_trace")
    logging = harness.work_directory(tmp_path, "L0_logging")
    ensemble = harness.work_directory(tmp_path, "L0_simple_ensemble")
    models = test_l0_simple_ensemble.repository(ensemble)
    args = [*TRACE_ARGS, f"--model-repository={models}"]
    runs = [
        (ensemble, test_l0_simple_ensemble.QA_FILE, [test_l0_simple_ensemble.TESTS[0]], 1),
        (trace, QA_FILE, [], COUNT),
        (logging, test_l0_logging.QA_FILE, [], test_l0_logging.COUNT),
    ]
    failures = []
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=trace):
        for work, qa_file, selection, count in runs:
            run = harness.run_qa_file(host, work, qa_file, *selection)
            try:
                run.check(count=count)
            except AssertionError as error:
                failures.append(f"{work.name}: {error}")
    assert not failures, "\n".join(failures)


# test.sh's OpenTelemetry servers for "OTel WAR": every request with the caller's trace
# context traced, others as the rate and count say
WAR_ARGS = [
    "--trace-config=level=TIMESTAMPS", "--trace-config=mode=opentelemetry",
    "--trace-config=opentelemetry,url=localhost:10000/v1/traces",
]  # fmt: skip
CALLER = "b7ad6b7169242424"  # the parent span of the traceparent opentelemetry_unittest sends
SEND_BLS = f"""import sys
import opentelemetry_unittest

context = {{"traceparent": "00-0af7651916cd43dd8448eb211c12666c-{CALLER}-01"}}
for _ in range(int(sys.argv[1])):
    opentelemetry_unittest.send_bls_request(
        model_name="ensemble_add_sub_int32_int32_int32",
        headers=context if sys.argv[2] == "1" else None,
    )
"""


def _read_back(host: LoopbackHost, rate: str, count: str) -> None:
    """test.sh's checks of ``get_trace_setting "bls_simple"`` on an OpenTelemetry server."""
    code, body = harness.curl(host, "/v2/models/bls_simple/trace/setting")
    assert code == "200", body
    for expected in ('"trace_level":["TIMESTAMPS"]', f'"trace_rate":"{rate}"',
                     f'"trace_count":"{count}"', '"trace_mode":"opentelemetry"',
                     '"url":"localhost:10000/v1/traces"', '"bsp_max_export_batch_size":"512"',
                     '"bsp_schedule_delay":"5000"', '"bsp_max_queue_size":"2048"'):  # fmt: skip
        assert body.count(expected) == 1, (expected, body)
    assert '"trace_file":' not in body and '"log_frequency":' not in body, body


def _parents(work: Path) -> list[str]:
    """The parent span id of every span the collector wrote ("" for a root)."""
    path = work / "collected_traces.json"
    lines = path.read_text().splitlines() if path.exists() else []
    return [span.get("parentSpanId", "")
            for line in lines if line.strip()
            for resource in json.loads(line).get("resourceSpans", [])
            for scope in resource.get("scopeSpans", [])
            for span in scope.get("spans", [])]  # fmt: skip


def _polled(read: Callable[[], T], done: Callable[[T], bool], within: float) -> T:
    """What ``read`` gives once ``done`` holds of it, or after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not done(value := read()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return value


def _collected(work: Path, done: Callable[[list[str]], bool], within: float) -> list[str]:
    """The parents once ``done`` holds of them, or after ``within`` seconds."""
    return _polled(lambda: _parents(work), done, within)


def _otel_work(tmp_path: Path) -> tuple[Path, Path, Path, list[str]]:
    """test.sh's folder for its OpenTelemetry servers: the work directory with the
    stand-in collector, the repository, the BLS sender and the collector's command."""
    work = harness.work_directory(tmp_path, "L0_trace")
    stand_in_collector(work)
    send = work / "send_bls.py"
    send.write_text(SEND_BLS)
    otelcol = [str(work / "otelcol"), "--config", "./trace-config.yaml"]
    return work, otel_repository(work), send, otelcol


@pytest.mark.triton_qa_full
@pytest.mark.timeout(300)
def test_opentelemetry_settings_and_caller_traces(host: LoopbackHost, tmp_path: Path) -> None:
    """test.sh's two "OTel WAR" servers: each reads its settings back, and at a rate of 0
    only the requests that carry the caller's context are traced; with a count of 1, one
    request of those without it and every one with it."""
    work, models, send, otelcol = _otel_work(tmp_path)
    collector = host.start(otelcol, tmp_path / "collector.log", cwd=work, env=harness.environment())
    try:
        time.sleep(2)  # as opentelemetry_unittest waits for its collector
        args = [*WAR_ARGS, "--trace-config=rate=0", "--trace-config=count=-1",
                f"--model-repository={models}"]  # fmt: skip
        with harness.tritonserver(host, args, tmp_path / "rate0.log", cwd=work):
            _read_back(host, "0", "-1")
            assert harness.run_script(host, send, "10", "0", cwd=work).returncode == 0
            assert _collected(work, bool, within=8) == []  # none of them traced
            assert harness.run_script(host, send, "1", "1", cwd=work).returncode == 0
            parents = _collected(work, lambda p: CALLER in p, within=30)
            assert parents.count(CALLER) == 1 and "" not in parents, parents
        (work / "collected_traces.json").unlink()
        args = [*WAR_ARGS, "--trace-config=rate=5", "--trace-config=count=1",
                f"--model-repository={models}"]  # fmt: skip
        with harness.tritonserver(host, args, tmp_path / "count1.log", cwd=work):
            _read_back(host, "5", "1")
            assert harness.run_script(host, send, "20", "0", cwd=work).returncode == 0
            parents = _collected(work, lambda p: "" in p, within=30)
            assert parents.count("") == 1, parents  # the count's one trace
            for _ in range(10):
                assert harness.run_script(host, send, "1", "1", cwd=work).returncode == 0
                assert harness.run_script(host, send, "1", "0", cwd=work).returncode == 0
            parents = _collected(work, lambda p: p.count(CALLER) >= 10, within=30)
            assert parents.count(CALLER) == 10 and parents.count("") == 1, parents
    finally:
        collector.stop()


def _scope_batches(work: Path) -> int:
    """How many ``scopeSpans`` the collector wrote (test.sh's ``grep -o scopeSpans``)."""
    path = work / "collected_traces.json"
    return path.read_text().count('"scopeSpans"') if path.exists() else 0


PBE_CONTEXT = '{"inputs":[{"name":"expect_none","datatype":"BOOL","shape":[1],"data":[true]}]}'


@pytest.mark.triton_qa_full
@pytest.mark.timeout(300)
def test_batch_span_processor_settings_and_pbe_context(host: LoopbackHost, tmp_path: Path) -> None:
    """test.sh's last five servers: a BLS request's six spans through a batch span
    processor of one place (a drop said in the C++ SDK's words), with a schedule delay of
    0 (more than one export), with an export batch of one (six exports); then the
    ``trace_context`` python model's context None in Triton's mode and with tracing off."""
    work, models, send, otelcol = _otel_work(tmp_path)
    rate = ["--trace-config=rate=1", "--trace-config=count=-1", "--log-verbose=1",
            f"--model-repository={models}"]  # fmt: skip
    cases: list[tuple[str, Callable[[int, str], bool]]] = [
        ("bsp_max_queue_size=1", lambda _, log: "BatchSpanProcessor queue is full" in log),
        ("bsp_schedule_delay=0", lambda batches, _: batches > 1),
        ("bsp_max_export_batch_size=1", lambda batches, _: batches == 6),
    ]
    for setting, holds in cases:
        collector = host.start(otelcol, tmp_path / f"{setting}.collector.log", cwd=work,
                               env=harness.environment())  # fmt: skip
        try:
            (work / "collected_traces.json").unlink(missing_ok=True)
            args = [*WAR_ARGS, *rate, "--trace-config", f"opentelemetry,{setting}"]
            log = tmp_path / f"{setting}.log"
            with harness.tritonserver(host, args, log, cwd=work) as server:
                time.sleep(2)  # as opentelemetry_unittest waits for its collector
                assert harness.run_script(host, send, "1", "0", cwd=work).returncode == 0
                batches, said = _polled(
                    lambda: (_scope_batches(work), server.log()),
                    lambda seen, holds=holds: holds(*seen),  # this case's
                    within=20,
                )
                assert holds(batches, said), (setting, batches)
                if setting.startswith("bsp_max_export_batch_size"):  # and no more come
                    assert _polled(lambda: _scope_batches(work), lambda b: b > 6, 3) == 6
        finally:
            collector.stop()
    for mode in (["--trace-config=level=TIMESTAMPS", "--trace-config=mode=triton"],
                 ["--trace-config=level=OFF", "--trace-config=mode=opentelemetry"]):  # fmt: skip
        with harness.tritonserver(host, [*mode, *rate], tmp_path / "pbe.log", cwd=work):
            code, body = harness.curl_at(host, "localhost:8000/v2/models/trace_context/infer",
                                         "-X", "POST", "-d", PBE_CONTEXT)  # fmt: skip
            assert code == "200", body
