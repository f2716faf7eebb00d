"""Triton's generate extension on a real server: /generate and /generate_stream over
Triton's decoupled ``mock_llm`` python model and a model that is not decoupled, governed as
infer calls, and what they refuse.

Triton's own tests of the extension (L0_http ``generate_endpoint_test.py``) run from
tests/triton_qa/test_l0_http.py; these need no network namespace.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from modelyard.governance.auth import hash_secret
from tests.support.servers import ServerInProcess, server_in_process

pytestmark = pytest.mark.slow

MOCK_LLM = (
    Path(__file__).resolve().parents[1]
    / "triton_qa/vendor/server/qa/L0_http/generate_models/mock_llm"
)
KEY = "generate-key-1"
ECHO_ONLY_KEY = "echo-key-1"
MAX_BODY = 64 * 1024

# Triton's identity backend: a model that is not decoupled (OUTPUT0 is INPUT0)
ECHO = """
name: "echo"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
"""

SERVICE = f"""\
service: com.example.test.generate
auth:
  enabled: true
  principals:
    caller:
      api_keys: ["{hash_secret(KEY)}"]
      allow: {{infer: ["*"], metadata: ["*"]}}
    echo-only:
      api_keys: ["{hash_secret(ECHO_ONLY_KEY)}"]
      allow: {{infer: ["echo"]}}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInProcess]:
    root = tmp_path_factory.mktemp("generate")
    models = root / "models"
    shutil.copytree(MOCK_LLM, models / "mock_llm")
    (models / "echo" / "1").mkdir(parents=True)
    (models / "echo" / "config.pbtxt").write_text(textwrap.dedent(ECHO))
    service = root / "service.yaml"
    service.write_text(SERVICE)
    flags = ["--service-config", str(service), "--http-max-body-bytes", str(MAX_BODY)]
    with server_in_process(models, *flags) as served:
        yield served


def _post(
    server: ServerInProcess,
    path: str,
    body: Any,
    key: str | None = KEY,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    sent = dict(headers or {})
    if key is not None:
        sent["x-api-key"] = key
    content = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return httpx.post(f"http://{server.http_url}{path}", content=content, headers=sent, timeout=30)


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    chunks = response.text.split("\n\n")
    assert chunks[-1] == "", response.text
    events = []
    for chunk in chunks[:-1]:
        assert chunk.startswith("data: ") and "\n" not in chunk, chunk
        events.append(json.loads(chunk[len("data: ") :]))
    return events


def test_generate_answers_the_models_one_response(server: ServerInProcess) -> None:
    response = _post(
        server, "/v2/models/mock_llm/generate", {"id": "7", "PROMPT": "hi", "STREAM": False}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"TEXT": "hi", "id": "7", "model_name": "mock_llm",
                               "model_version": "1"}  # fmt: skip


def test_generate_stream_sends_each_response_as_an_event(server: ServerInProcess) -> None:
    # REPETITION is no input of the model: a parameter, which the model reads
    body = {"PROMPT": ["hi"], "STREAM": True, "REPETITION": 3}
    response = _post(server, "/v2/models/mock_llm/versions/1/generate_stream", body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert [e["TEXT"] for e in _events(response)] == ["hi", "hi", "hi"]


def test_an_error_after_the_first_response_is_an_event(server: ServerInProcess) -> None:
    body = {"PROMPT": ["hi"], "STREAM": True, "REPETITION": 1, "FAIL_LAST": True}
    response = _post(server, "/v2/models/mock_llm/generate_stream", body)
    assert response.status_code == 200
    first, error = _events(response)
    assert first["TEXT"] == "hi"
    assert error["error"] == "An Error Occurred"  # the model's message, whole
    # a python model's own error leads in its words, as Triton answers it
    assert error["error_line"].startswith("An Error Occurred; rule=engine/python")
    # the first response decides the status: an error first is its code
    body["REPETITION"] = 0
    response = _post(server, "/v2/models/mock_llm/generate_stream", body)
    assert response.status_code == 500
    assert [e["error"] for e in _events(response)] == ["An Error Occurred"]


def test_a_model_that_is_not_decoupled_streams_its_one_response(server: ServerInProcess) -> None:
    for route in ("generate", "generate_stream"):
        response = _post(server, f"/v2/models/echo/{route}", {"INPUT0": [1, 2, 3]})
        assert response.status_code == 200, response.text
        answer = response.json() if route == "generate" else _events(response)[0]
        assert answer["OUTPUT0"] == [1, 2, 3]
    response = _post(server, "/v2/models/echo/generate_stream", {"INPUT0": [5]})
    assert [e["OUTPUT0"] for e in _events(response)] == [5]  # one value: the value alone


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
@pytest.mark.parametrize(
    ("model", "body", "headers", "status", "words"),
    [
        ("mock_llm", "{bad", {}, 400, "failed to parse the request JSON buffer"),
        ("mock_llm", "[1]", {}, 400, "attempt to get members for non-object"),
        ("nope", {}, {}, 404, "Request for unknown model: 'nope' is not found"),
        ("mock_llm", {"PROMPT": "x", "STREAM": True, "PARAMS": {"a": 1}}, {}, 400,
         "parameter 'PARAMS' has invalid type. It should be either 'int', 'bool', or 'string'."),
        ("mock_llm", {"PROMPT": "x", "other": "param"}, {}, 400,
         "expected number of inputs between 2 and 3 but got 1 inputs for model 'mock_llm'"),
        ("mock_llm", '{"PROMPT": "x", "STREAM": false, "PROMPT": "y"}', {}, 400,
         "input 'PROMPT' already exists in request"),
        ("mock_llm", {f"p{i}": i for i in range(1100)}, {}, 400,
         "[protocol] generate request has 1100 fields or more"),
        ("mock_llm", {"PROMPT": "x", "STREAM": True}, {"content-encoding": "gzip"}, 400,
         "Unsupported content-encoding, only 'identity' is supported."),
        ("mock_llm", {"PROMPT": "x" * MAX_BODY, "STREAM": True}, {}, 413,
         "[protocol] request body of"),
    ],
)  # fmt: skip
def test_a_request_refused_before_any_response_is_a_json_error(
    server: ServerInProcess,
    route: str,
    model: str,
    body: Any,
    headers: dict[str, str],
    status: int,
    words: str,
) -> None:
    response = _post(server, f"/v2/models/{model}/{route}", body, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    line = response.json()["error"]
    assert line.startswith(words), line
    assert "; rule=" in line and "; change: " in line


def test_generate_refuses_a_model_that_answers_other_than_once(server: ServerInProcess) -> None:
    for repetitions, counted in ((0, "0 responses"), (2, "more than 1 response")):
        body = {"PROMPT": "hi", "STREAM": True, "REPETITION": repetitions}
        response = _post(server, "/v2/models/mock_llm/generate", body)
        assert response.status_code == 400
        assert response.json()["error"].startswith(
            "generate expects model to produce exactly 1 response, use generate stream for "
            f"model that generates various number of responses ({counted}); "
            "rule=protocol/generate-one-response; change: POST "
            "/v2/models/mock_llm/generate_stream"
        )
        streamed = _post(server, "/v2/models/mock_llm/generate_stream", body)
        assert streamed.status_code == 200 and len(_events(streamed)) == repetitions


def test_generate_is_governed_as_an_infer_call(server: ServerInProcess) -> None:
    body = {"PROMPT": "hi", "STREAM": False}
    for route in ("generate", "generate_stream"):
        path = f"/v2/models/mock_llm/{route}"
        unkeyed = _post(server, path, body, key=None)
        assert unkeyed.status_code == 401
        assert unkeyed.json()["error"].startswith("[governance]")
        other = _post(server, path, body, key=ECHO_ONLY_KEY)
        assert other.status_code == 403, other.text
        assert "mock_llm" in other.json()["error"]
    assert _post(server, "/v2/models/echo/generate", {"INPUT0": [1]}, key=ECHO_ONLY_KEY).is_success


def test_a_generate_route_takes_post_only(server: ServerInProcess) -> None:
    response = httpx.get(
        f"http://{server.http_url}/v2/models/mock_llm/generate", headers={"x-api-key": KEY}
    )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_a_caller_that_goes_cancels_its_request(server: ServerInProcess) -> None:
    # ten responses a second apart, uncancelled; the model stops once it reads is_cancelled()
    body = json.dumps({"PROMPT": ["hi"], "STREAM": True, "REPETITION": 10, "DELAY": 1})
    url = f"http://{server.http_url}"
    headers = {"x-api-key": KEY}
    with httpx.stream(
        "POST", f"{url}/v2/models/mock_llm/generate_stream", content=body, headers=headers,
        timeout=30,
    ) as response:  # fmt: skip
        first = next(line for line in response.iter_lines() if line)
    assert json.loads(first[len("data: ") :])["TEXT"] == "hi"
    left = time.monotonic() + 6
    while time.monotonic() < left:
        stats = httpx.get(f"{url}/v2/modelyard/stats", headers=headers).json()
        if stats["instance"]["in_flight"] == 0:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the request still runs after its caller went: {stats}")
