"""Request parameters and forwarded headers, as Triton's parameters tests check them.

A python-backend model, ``parameter``, answers with the keys and values of the
parameters it was given; an ensemble runs it after an identity step. Each client
(HTTP and gRPC, sync, async and asyncio, a gRPC stream) sends parameters, and
headers that ``--http-header-forward-pattern`` and ``--grpc-header-forward-pattern``
turn into parameters. Reserved names are refused with Triton's words.
"""

from __future__ import annotations

import asyncio
import queue
import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcclient_aio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpclient_aio
from tritonclient.utils import InferenceServerException

from modelyard.processes import serve_command
from tests.support.models import write_python_model
from tests.support.servers import Served, server_in_process

PARAMETER = """
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            parameters = json.loads(request.parameters())
            keys = np.asarray(list(parameters), dtype=object)
            values = np.asarray([str(v) for v in parameters.values()], dtype=object)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("key", keys), pb_utils.Tensor("value", values)]
            ))
        return responses
"""

PARAMETER_CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] }]
output [
  { name: "key" data_type: TYPE_STRING dims: [ -1 ] },
  { name: "value" data_type: TYPE_STRING dims: [ -1 ] }
]
"""

IDENTITY = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor(
                "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            )])
            for r in requests
        ]
"""

IDENTITY_CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] }]
"""

ENSEMBLE_CONFIG = """
platform: "ensemble"
max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] }]
output [
  { name: "key" data_type: TYPE_STRING dims: [ -1 ] },
  { name: "value" data_type: TYPE_STRING dims: [ -1 ] }
]
ensemble_scheduling {
  step [
    {
      model_name: "identity"
      model_version: -1
      input_map { key: "INPUT0" value: "INPUT0" }
      output_map { key: "OUTPUT0" value: "OUTPUT0" }
    },
    {
      model_name: "parameter"
      model_version: -1
      input_map { key: "INPUT0" value: "OUTPUT0" }
      output_map { key: "key" value: "key" }
      output_map { key: "value" value: "value" }
    }
  ]
}
"""

HEADERS = {
    "header_1": "value_1",
    "header_2": "value_2",
    "my_header_1": "my_value_1",
    "my_header_2": "my_value_2",
    "my_header_3": 'This is a "quoted" string with a backslash\\ ',
}
FORWARDED = {key: value for key, value in HEADERS.items() if key.startswith("my_")}
RESERVED = (
    "sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "headers",
    "binary_data_output", "triton_enable_empty_final_response", "triton_final_response",
)  # fmt: skip


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("parameters") / "models"
    write_python_model(repository, "parameter", PARAMETER, PARAMETER_CONFIG)
    write_python_model(repository, "identity", IDENTITY, IDENTITY_CONFIG)
    (repository / "ensemble" / "1").mkdir(parents=True)
    (repository / "ensemble" / "config.pbtxt").write_text(ENSEMBLE_CONFIG)
    return repository


@pytest.fixture(scope="module")
def triton(repository: Path) -> Iterator[Served]:
    with server_in_process(
        repository,
        "--http-header-forward-pattern", "MY_HEADER.*",
        "--grpc-header-forward-pattern", "MY_HEADER.*",
    ) as server:  # fmt: skip
        yield server


def _inputs(module: Any) -> list[Any]:
    item = module.InferInput("INPUT0", [1], "FP32")
    item.set_data_from_numpy(np.asarray([1], dtype=np.float32))
    return [item]


def _seen(result: Any) -> dict[str, str]:
    keys = result.as_numpy("key").astype(str).tolist()
    values = result.as_numpy("value").astype(str).tolist()
    return dict(zip(keys, values, strict=True))


def _every_client(
    server: Served, parameters: dict[str, Any], headers: dict[str, str]
) -> list[dict[str, str]]:
    """What the model saw through each client of Triton's parameters test, in its order."""
    seen = []
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    http = httpclient.InferenceServerClient(server.http_url)
    try:
        for client, module in ((grpc, grpcclient), (http, httpclient)):
            seen.append(_seen(client.infer("parameter", _inputs(module), parameters=parameters,
                                           headers=dict(headers))))  # fmt: skip

        async def aio() -> list[dict[str, str]]:
            answers = []
            for module, url in ((httpclient_aio, server.http_url), (grpcclient_aio,
                                                                   server.grpc_url)):  # fmt: skip
                client = module.InferenceServerClient(url)
                try:
                    result = await client.infer(
                        "parameter", _inputs(module), parameters=parameters, headers=dict(headers)
                    )
                    answers.append(_seen(result))
                finally:
                    await client.close()
            return answers

        seen.extend(asyncio.run(aio()))
        seen.append(_seen(http.async_infer("parameter", _inputs(httpclient), parameters=parameters,
                                           headers=dict(headers)).get_result()))  # fmt: skip
        answers: queue.Queue[Any] = queue.Queue()
        grpc.async_infer("parameter", _inputs(grpcclient), partial(_put, answers),
                         parameters=parameters, headers=dict(headers))  # fmt: skip
        seen.append(_seen(_taken(answers)))
        grpc.start_stream(callback=partial(_put, answers), headers=dict(headers))
        grpc.async_stream_infer("parameter", _inputs(grpcclient), parameters=parameters)
        seen.append(_seen(_taken(answers)))
        grpc.stop_stream()
        seen.append(_seen(http.infer("ensemble", _inputs(httpclient), parameters=parameters,
                                     headers=dict(headers))))  # fmt: skip
    finally:
        grpc.close()
        http.close()
    return seen


def _put(answers: queue.Queue[Any], result: Any, error: Any) -> None:
    answers.put(error if error is not None else result)


def _taken(answers: queue.Queue[Any]) -> Any:
    result = answers.get(timeout=30)
    assert not isinstance(result, InferenceServerException), result
    return result


@pytest.mark.parametrize(
    "parameters",
    [
        {"key1": "value1", "key2": "value2"},
        {"key1": 1, "key2": 2},
        {"key1": 123.123, "key2": 321.321},
        {"key1": True, "key2": "value2"},
    ],
)
def test_each_client_s_parameters_reach_the_model_and_an_ensemble_s_step(
    triton: Served, parameters: dict[str, Any]
) -> None:
    expected = {key: str(value) for key, value in parameters.items()}
    seen = _every_client(triton, parameters, {})
    assert len(seen) == 8
    assert all(answer == expected for answer in seen), seen


def test_headers_that_match_the_pattern_reach_the_model_as_parameters(
    triton: Served,
) -> None:
    plain = httpclient.InferenceServerClient(triton.http_url)
    try:
        for _ in range(3):  # a lane is kept for requests of this shape, headers aside
            assert _seen(plain.infer("parameter", _inputs(httpclient))) == {}
        seen = _every_client(triton, {"key1": "value1"}, HEADERS)
        expected = {"key1": "value1", **FORWARDED}
        differing = [(place, answer) for place, answer in enumerate(seen) if answer != expected]
        assert all(answer == expected for answer in seen), differing  # place: _every_client's
        # a request with no matching header takes the lane again, and sees none of them
        for _ in range(3):
            assert _seen(plain.infer("parameter", _inputs(httpclient))) == {}
    finally:
        plain.close()


def test_a_parameter_starting_with_triton_is_refused_over_http(triton: Served) -> None:
    body = {
        "inputs": [{"name": "INPUT0", "shape": [1], "datatype": "FP32", "data": [1.0]}],
        "parameters": {"triton_final_response": True},
    }
    answer = httpx.post(f"http://{triton.http_url}/v2/models/parameter/infer", json=body)
    assert answer.status_code == 400
    assert (
        "parameter keys starting with 'triton_' are reserved for Triton usage"
        in (answer.json()["error"])
    )
    assert "rule=protocol/v2-request" in answer.json()["error"]
    ok = httpx.post(
        f"http://{triton.http_url}/v2/models/parameter/infer", json={**body, "parameters": {}}
    )
    assert ok.status_code == 200


def test_a_case_sensitive_pattern_forwards_no_lower_cased_grpc_metadata(repository: Path) -> None:
    with server_in_process(
        repository, "--grpc-header-forward-pattern", "(?-i)MY_HEADER.*"
    ) as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        try:
            seen = _seen(client.infer("parameter", _inputs(grpcclient), headers=HEADERS))
        finally:
            client.close()
    assert seen == {}


@pytest.mark.slow
def test_a_reserved_header_that_matches_is_refused_with_triton_s_words(repository: Path) -> None:
    with server_in_process(
        repository,
        "--http-header-forward-pattern", ".*", "--grpc-header-forward-pattern", ".*",
    ) as server:  # fmt: skip
        url = f"http://{server.http_url}/v2/models/parameter/infer"
        body = {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        try:
            for key in RESERVED:
                answer = httpx.post(url, json=body, headers={key: "dummy-value"})
                assert answer.status_code == 400, (key, answer.text)
                assert (
                    f"Header '{key}' is reserved for Triton usage and cannot be forwarded"
                    in answer.json()["error"]
                )
                with pytest.raises(InferenceServerException, match="reserved for Triton usage"):
                    grpc.infer("parameter", _inputs(grpcclient), headers={key: "dummy-value"})
            # every header is a parameter now, and the server goes on serving
            seen = _seen(grpc.infer("parameter", _inputs(grpcclient), headers={"x-team": "a"}))
            assert seen["x-team"] == "a"
            assert httpx.post(url, json=body).status_code == 200
        finally:
            grpc.close()


def test_a_pattern_that_is_not_a_regular_expression_is_refused_at_start(
    repository: Path,
) -> None:
    command = serve_command(repository, http_port=0, metrics_port=-1)
    done = subprocess.run(
        [*command, "--http-header-forward-pattern", "MY_(HEADER"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "--http-header-forward-pattern MY_(HEADER: not a regular expression" in done.stderr
    assert "rule=serve/triton-flag" in done.stderr and "Traceback" not in done.stderr
