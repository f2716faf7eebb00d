"""Vertex AI's front door: the header size a content type gives, and the redirects it takes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from modelyard.errors import ModelyardError
from modelyard.frontdoors.http import HttpFrontend
from modelyard.frontdoors.rewritten import header_length, with_header_length
from modelyard.frontdoors.vertex_ai import BINARY_MIME, RULE, redirected, vertex_ai_frontend
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager


def sized(content_type: str, body_size: int = 100) -> int | None:
    return header_length([(b"content-type", content_type.encode())], body_size, BINARY_MIME, RULE)


def test_a_binary_body_says_its_json_header_size_in_its_content_type() -> None:
    assert sized("application/json") is None
    assert header_length([], 100, BINARY_MIME, RULE) is None
    # the V2 header is the front door's to give: a caller's own is left out
    given = [(b"inference-header-content-length", b"3"), (b"content-type", b"application/json")]
    assert with_header_length(given, 100, BINARY_MIME, RULE) == [given[1]]
    binary = [(b"content-type", (BINARY_MIME + "42").encode())]
    assert with_header_length(binary, 100, BINARY_MIME, RULE)[-1] == (
        b"inference-header-content-length", b"42",
    )  # fmt: skip
    assert sized(BINARY_MIME + "42") == 42
    assert sized(BINARY_MIME + "100") == 100
    # read as C's atoi: the leading digits, 0 where there are none
    assert sized(BINARY_MIME + "7abc") == 7
    assert sized(BINARY_MIME + "additional-string42") == 0


@pytest.mark.parametrize(
    ("content_type", "said"),
    [
        ("additional-string/" + BINARY_MIME + "4", "expect MIME type for binary data starts"),
        (BINARY_MIME + "-123", "inference header size should be in range (0, 100), got: -123"),
        (BINARY_MIME + "12345", "inference header size should be in range (0, 100), got: 12345"),
    ],
)
def test_a_malformed_size_is_refused_in_tritons_words(content_type: str, said: str) -> None:
    with pytest.raises(ModelyardError) as refused:
        sized(content_type)
    assert refused.value.code.name == "INVALID_ARGUMENT"
    assert said in refused.value.line() and "rule=protocol/vertex-ai" in refused.value.line()


def test_redirects_take_the_method_of_the_call_they_name() -> None:
    assert redirected("/v2/models/m/infer") == ("POST", "/v2/models/m/infer")
    assert redirected("/v2/models/m/versions/2/ready") == ("GET", "/v2/models/m/versions/2/ready")
    assert redirected("/v2/models/m") == ("GET", "/v2/models/m")
    assert redirected("/metrics") == ("GET", "/metrics")
    assert redirected("/v2/health/live") == ("GET", "/v2/health/live")
    assert redirected("/v2/systemsharedmemory/status") == ("GET", "/v2/systemsharedmemory/status")
    assert redirected("/v2/cudasharedmemory/region/r/unregister")[0] == "POST"  # type: ignore[index]
    assert redirected("/v2/repository/index") == ("POST", "/v2/repository/index")
    assert redirected("/v2/repository/models/m/load") == ("POST", "/v2/repository/models/m/load")
    # what Triton's Vertex AI server does not answer: a 400
    for endpoint in ("/v2/models/m/generate", "/v2/logging", "/v2/trace/setting", "/"):
        assert redirected(endpoint) is None


def _start(environ: dict[str, str], ready: list[str], default: str | None = None) -> str:
    """The refusal vertex_ai_frontend starts with, as its error line ("" where it starts)."""
    try:
        vertex_ai_frontend(None, ready, default, lambda: b"", environ)  # type: ignore[arg-type]
    except ModelyardError as refused:
        return refused.line()
    return ""


def test_the_start_is_refused_in_tritons_words() -> None:
    routes = {"AIP_PREDICT_ROUTE": "/predict", "AIP_HEALTH_ROUTE": "/health"}
    assert _start(routes, ["m"]) == ""
    assert _start({"AIP_HEALTH_ROUTE": "/health"}, ["m"]).startswith(
        "API_PREDICT_ROUTE is not defined for Vertex AI endpoint"
    )
    assert "AIP_HEALTH_ROUTE is not defined" in _start({"AIP_PREDICT_ROUTE": "/p"}, ["m"])
    assert "only a single model" in _start(routes, ["a", "b"])
    assert _start(routes, ["a", "b"], "b") == ""
    assert "Expect the default model 'c' is loaded" in _start(routes, ["a", "b"], "c")
    # the routes are patterns: one that does not compile is refused with its line
    broken = _start({**routes, "AIP_PREDICT_ROUTE": "/predict("}, ["m"])
    assert "AIP_PREDICT_ROUTE '/predict(' is not a valid route pattern" in broken
    assert "rule=serve/vertex-ai" in broken


def _vertex_calls(tmp_path: Path, *calls: tuple[str, str, dict[str, str], bytes]) -> list[Any]:
    """Calls to a Vertex AI front door (routes /predict and /health, default model m)
    over a server with no model loaded."""

    async def run() -> list[Any]:
        manager = ModelManager(ModelRepository([tmp_path]), ControlMode.EXPLICIT)
        await manager.start()
        http = HttpFrontend(LocalDataPlane(manager), max_body_bytes=1024)
        routes = {"AIP_PREDICT_ROUTE": "/predict", "AIP_HEALTH_ROUTE": "/health"}
        front = vertex_ai_frontend(http, ["m"], None, lambda: b"nv_x 1\n", routes)
        transport = httpx.ASGITransport(app=front)
        async with httpx.AsyncClient(transport=transport, base_url="http://v") as client:
            return [await client.request(method, path, headers=headers, content=body)
                    for method, path, headers, body in calls]  # fmt: skip

    return asyncio.run(run())


def test_bad_calls_get_tritons_status_with_the_error_line(tmp_path: Path) -> None:
    redirect = "X-Vertex-Ai-Triton-Redirect"
    health, elsewhere, not_post, unanswered, oversized, bad_size, metrics = _vertex_calls(
        tmp_path,
        ("GET", "/health", {}, b""),
        ("POST", "/v2/models/m/infer", {}, b"{}"),  # the V2 paths are not this port's
        ("GET", "/predict", {redirect: "v2/health/live"}, b""),
        ("POST", "/predict", {redirect: "v2/logging"}, b""),
        ("POST", "/predict", {}, b"x" * 2048),
        ("POST", "/predict", {"Content-Type": BINARY_MIME + "-1"}, b"{}"),
        ("POST", "/predict", {redirect: "metrics"}, b""),
    )  # fmt: skip
    assert health.status_code == 200
    assert elsewhere.status_code == 400
    assert "no route for POST /v2/models/m/infer; rule=protocol/vertex-ai" in elsewhere.text
    assert not_post.status_code == 405 and "a redirected call is a POST" in not_post.text
    assert unanswered.status_code == 400 and "no route for POST /v2/logging" in unanswered.text
    assert oversized.status_code == 413 and "rule=protocol/max-body-size" in oversized.text
    assert bad_size.status_code == 400 and "rule=protocol/vertex-ai" in bad_size.text
    assert metrics.status_code == 200 and metrics.text == "nv_x 1\n"
