"""Triton python-backend models, model.py unchanged: ``TritonPythonModel`` with
``execute(requests)`` through ``triton_python_backend_utils``, called by tritonclient."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.support.models import write_python_model
from tests.support.servers import ServerProcess, running_server

# written as Triton's python-backend examples write an add/sub model
ADD_SUB = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")
        self.output0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.output1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])
        pb_utils.Logger.log_info("add_sub initialized")

    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if (in_1 < 0).any():
                error = pb_utils.TritonError(
                    "INPUT1 must not be negative", pb_utils.TritonError.INVALID_ARG
                )
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=error))
                continue
            if (in_0 == 999).any():
                raise pb_utils.TritonModelException("999 breaks this model")
            out_0 = pb_utils.Tensor("OUTPUT0", (in_0 + in_1).astype(self.output0_dtype))
            out_1 = pb_utils.Tensor("OUTPUT1", (in_0 - in_1).astype(self.output1_dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_0, out_1]))
        return responses

    def finalize(self):
        pb_utils.Logger.log_info("add_sub cleaning up")
"""

CONFIG = """
name: "add_sub"
backend: "python"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
"""


# the same model, its tensors declared by auto_complete_config instead of config.pbtxt
AUTO_COMPLETED = (
    ADD_SUB
    + """

    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        tensors = [{"name": n, "data_type": "TYPE_FP32", "dims": [4]} for n in ("INPUT0", "INPUT1")]
        config = auto_complete_model_config.as_dict()
        declared = {entry["name"] for entry in config.get("input", [])}
        for tensor in tensors:
            if tensor["name"] not in declared:
                auto_complete_model_config.add_input(tensor)
        for name in ("OUTPUT0", "OUTPUT1"):
            output = {"name": name, "data_type": "TYPE_FP32", "dims": [4]}
            auto_complete_model_config.add_output(output)
        auto_complete_model_config.set_max_batch_size(8)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config
"""
)


# BLS: one model calls another of the same server, synchronously and with async_exec
BLS_CALLER = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            target = "add_sub" if (x >= 0).all() else "no_such_model"
            call = pb_utils.InferenceRequest(
                model_name=target,
                requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", x), pb_utils.Tensor("INPUT1", x)],
            )
            answer = call.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            total = pb_utils.get_output_tensor_by_name(answer, "OUTPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", total)]))
        return responses
"""

ASYNC_BLS_CALLER = BLS_CALLER.replace("def execute", "async def execute").replace(
    "call.exec()", "await call.async_exec()"
)

BLS_CONFIG = """
backend: "python"
max_batch_size: 8
input [{ name: "X" data_type: TYPE_FP32 dims: [ 4 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ 4 ] }]
"""


# each request's own parameters, read as Triton's python backend gives them (a JSON string)
SCALED = """
import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.05)  # slow: the requests that come meanwhile queue, and batch
        responses = []
        for request in requests:
            parameters = json.loads(request.parameters())
            assert "sequence_id" not in parameters and "priority" not in parameters
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            y = pb_utils.Tensor("Y", x * parameters["scale"])
            responses.append(pb_utils.InferenceResponse([y]))
        return responses
"""

SCALED_CONFIG = BLS_CONFIG + "dynamic_batching { max_queue_delay_microseconds: 100000 }\n"


# a model that crashes the process it runs in when its input asks: os._exit, or SIGSEGV
CRASHING = """
import os
import signal

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.pid = os.getpid()

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            if x[0, 0] == -1:
                os._exit(3)
            if x[0, 0] == -2:
                os.kill(os.getpid(), signal.SIGSEGV)
            pid = np.full(x.shape, self.pid, dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", pid)]))
        return responses
"""


# Triton's qa/python_models/identity_fp32 answers so: OUTPUT0 only, of the two its config
# declares (execute as it writes it; the config is its L0_lifecycle sanity test's)
HALF_IDENTITY = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x)]))
        return responses
"""

HALF_CONFIG = """
backend: "python"
max_batch_size: 8
dynamic_batching {}
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
"""

HALF_SEQUENCE_CONFIG = """
backend: "python"
max_batch_size: 0
sequence_batching { direct {} }
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 1, 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 1, 4 ] }
]
"""


@pytest.fixture(scope="module")
def python_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    repository = tmp_path_factory.mktemp("python") / "models"
    write_python_model(repository, "add_sub", ADD_SUB, CONFIG)
    write_python_model(repository, "auto_add_sub", AUTO_COMPLETED, 'backend: "python"\n')
    write_python_model(repository, "bls", BLS_CALLER, BLS_CONFIG)
    write_python_model(repository, "async_bls", ASYNC_BLS_CALLER, BLS_CONFIG)
    write_python_model(repository, "scaled", SCALED, SCALED_CONFIG)
    write_python_model(repository, "crashing", CRASHING, BLS_CONFIG)
    write_python_model(repository, "half", HALF_IDENTITY, HALF_CONFIG)
    write_python_model(repository, "half_sequence", HALF_IDENTITY, HALF_SEQUENCE_CONFIG)
    with running_server(repository, tmp_path_factory.mktemp("logs")) as process:
        yield process


def _call(
    protocol: str,
    server: ServerProcess,
    first: np.ndarray,
    second: np.ndarray,
    model: str = "add_sub",
) -> Any:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = server.grpc_url if protocol == "grpc" else server.http_url
    client = module.InferenceServerClient(url)
    try:
        inputs = [module.InferInput(n, list(first.shape), "FP32") for n in ("INPUT0", "INPUT1")]
        inputs[0].set_data_from_numpy(first)
        inputs[1].set_data_from_numpy(second)
        return client.infer(model, inputs)
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_triton_python_model_serves_unchanged(
    python_server: ServerProcess, protocol: str
) -> None:
    first = np.random.default_rng(0).random((2, 4), dtype=np.float32)
    second = np.ones((2, 4), dtype=np.float32)
    result = _call(protocol, python_server, first, second)
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), first + second)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), first - second)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_responses_triton_error_reaches_the_caller_with_its_code(
    python_server: ServerProcess, protocol: str
) -> None:
    ones = np.ones((1, 4), dtype=np.float32)
    with pytest.raises(InferenceServerException) as refused:
        _call(protocol, python_server, ones, -ones)
    assert "INPUT1 must not be negative" in str(refused.value)
    assert refused.value.status() in ("400", "StatusCode.INVALID_ARGUMENT")
    with pytest.raises(InferenceServerException) as broken:
        _call(protocol, python_server, np.full((1, 4), 999, dtype=np.float32), ones)
    assert "999 breaks this model" in str(broken.value)
    assert broken.value.status() in ("500", "StatusCode.INTERNAL")
    result = _call(protocol, python_server, ones, ones)  # and it serves on
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), ones * 2)


def test_the_model_read_its_config_as_triton_passes_it(python_server: ServerProcess) -> None:
    """args["model_config"] keeps the proto's field names (data_type, max_batch_size)."""
    log = Path(python_server.log_path).read_text()
    assert "add_sub initialized" in log


def test_auto_complete_config_declares_the_tensors_a_config_leaves_out(
    python_server: ServerProcess,
) -> None:
    client = httpclient.InferenceServerClient(python_server.http_url)
    try:
        config = client.get_model_config("auto_add_sub")
    finally:
        client.close()
    assert config["max_batch_size"] == 8 and "dynamic_batching" in config
    assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
    assert [o["data_type"] for o in config["output"]] == ["TYPE_FP32", "TYPE_FP32"]
    ones = np.ones((3, 4), dtype=np.float32)
    result = _call("http", python_server, ones, ones, "auto_add_sub")
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), ones * 2)


@pytest.mark.parametrize("model", ["bls", "async_bls"])
def test_a_python_model_calls_another_model_of_the_server(
    python_server: ServerProcess, model: str
) -> None:
    """Triton's BLS: InferenceRequest(...).exec() (or async_exec) runs on the callee's
    scheduler; the callee's statistics count the call; its errors come back in the response."""
    client = httpclient.InferenceServerClient(python_server.http_url)
    try:
        before = client.get_inference_statistics("add_sub")["model_stats"][0]["inference_count"]
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        item = httpclient.InferInput("X", [2, 4], "FP32")
        item.set_data_from_numpy(x)
        np.testing.assert_allclose(client.infer(model, [item]).as_numpy("Y"), x * 2)
        after = client.get_inference_statistics("add_sub")["model_stats"][0]["inference_count"]
        assert after - before == 2
        item.set_data_from_numpy(-x - 1)
        with pytest.raises(InferenceServerException) as failed:
            client.infer(model, [item])
        assert (
            "Failed for execute the inference request. Model 'no_such_model' is not ready. "
            "Request for unknown model: 'no_such_model' is not found"
        ) in str(failed.value)
    finally:
        client.close()


def test_each_request_of_a_batch_reads_its_own_parameters(python_server: ServerProcess) -> None:
    """Requests batched together still come to execute(requests) one by one, each with its
    rows and the parameters its caller sent (the protocol's own left out)."""
    x = np.arange(4, dtype=np.float32).reshape(1, 4)

    def call(scale: int) -> np.ndarray:
        client = grpcclient.InferenceServerClient(python_server.grpc_url)
        try:
            item = grpcclient.InferInput("X", [1, 4], "FP32")
            item.set_data_from_numpy(x)
            result = client.infer("scaled", [item], parameters={"scale": scale}, priority=1)
            return result.as_numpy("Y")  # type: ignore[no-any-return]
        finally:
            client.close()

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(call, range(1, 7)))
    for scale, answer in enumerate(answers, 1):
        np.testing.assert_array_equal(answer, x * scale)
    stats = httpx.get(f"http://{python_server.http_url}/v2/models/scaled/stats").json()
    (model,) = stats["model_stats"]
    assert model["inference_count"] == 6
    assert model["execution_count"] < 6  # batched: several requests in one execute


def test_a_model_that_crashes_its_process_fails_its_batch_and_the_next_one_is_served(
    python_server: ServerProcess,
) -> None:
    """Each instance runs in a process of its own, as Triton's stub: a crash is that
    process's end, not the server's; the next request starts it again (initialize runs)."""
    url = f"http://{python_server.http_url}/v2/models/crashing/infer"

    def infer(first: float) -> httpx.Response:
        body = {"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32",
                            "data": [first, 0, 0, 0]}]}  # fmt: skip
        return httpx.post(url, json=body, timeout=30)

    first_pid = infer(1).json()["outputs"][0]["data"][0]
    assert first_pid not in (0, python_server.process.pid)
    for crash, how in ((-1, "exit code 3"), (-2, "signal SIGSEGV")):
        failed = infer(crash)
        assert failed.status_code == 500
        line = failed.json()["error"]
        assert f"The model's process ended while executing ({how})" in line
        assert "rule=engine/python-stub" in line
        answer = infer(1)
        assert answer.status_code == 200, answer.text
        pid = answer.json()["outputs"][0]["data"][0]
        assert pid != first_pid  # a new process, initialized again
        first_pid = pid
    # the server and its other models went on
    assert python_server.process.poll() is None
    assert _call("http", python_server, np.ones((1, 4), np.float32), np.ones((1, 4), np.float32)
                 ).as_numpy("OUTPUT0").tolist() == [[2, 2, 2, 2]]  # fmt: skip


@pytest.mark.parametrize("flag", ["--disable-auto-complete-config", "--strict-model-config=true"])
def test_without_auto_completion_a_config_is_taken_as_written(tmp_path: Path, flag: str) -> None:
    """tritonserver's --disable-auto-complete-config: auto_complete_config is not called,
    so a config that leaves the tensors to it does not load; a whole one does."""
    repository = tmp_path / "models"
    write_python_model(repository, "auto_add_sub", AUTO_COMPLETED, 'backend: "python"\n')
    write_python_model(repository, "add_sub", ADD_SUB, CONFIG)
    with running_server(repository, tmp_path, flag, "--strict-readiness=false") as server:
        index = httpx.post(f"http://{server.http_url}/v2/repository/index").json()
        states = {row["name"]: row.get("state") for row in index}
        assert states == {"add_sub": "READY", "auto_add_sub": "UNAVAILABLE"}
        reason = next(row["reason"] for row in index if row["name"] == "auto_add_sub")
        assert "initialize failed" in reason, reason  # its config has no OUTPUT0 to read


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("asked", [None, ["OUTPUT0", "OUTPUT1"], ["OUTPUT1"]])
@pytest.mark.parametrize("model", ["half", "half_sequence"])
def test_an_output_the_model_leaves_out_is_left_out_of_the_response(
    python_server: ServerProcess, protocol: str, asked: list[str] | None, model: str
) -> None:
    """Triton answers with the outputs its backend gave: a declared output the model did not
    return is not in the response, whether the request named it or asked for every output,
    and the request succeeds. Three calls of a shape: the HTTP front door answers the later
    ones through the lane it keeps for the shape."""
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = python_server.grpc_url if protocol == "grpc" else python_server.http_url
    client = module.InferenceServerClient(url)
    shape = [2, 4] if model == "half" else [1, 4]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    inputs = [module.InferInput(name, shape, "FP32") for name in ("INPUT0", "INPUT1")]
    for item in inputs:
        item.set_data_from_numpy(x)
    outputs = [module.InferRequestedOutput(name) for name in asked] if asked else None
    sequence = {"sequence_id": 7, "sequence_start": True} if model == "half_sequence" else {}
    try:
        for _ in range(3):
            result = client.infer(model, inputs, outputs=outputs, **sequence)
            assert result.as_numpy("OUTPUT1") is None
            if protocol == "grpc":  # an empty list is no field in protobuf's JSON
                response = result.get_response(as_json=True)
                names = [o["name"] for o in response.get("outputs", [])]
            else:  # Triton's JSON always has the list
                names = [o["name"] for o in result.get_response()["outputs"]]
            if asked == ["OUTPUT1"]:
                assert names == []
            else:
                assert names == ["OUTPUT0"]
                np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
            sequence = {"sequence_id": 7} if sequence else {}
    finally:
        client.close()
