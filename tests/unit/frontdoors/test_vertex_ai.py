"""Vertex AI's front door: the header size a content type gives, and the redirects it takes."""

from __future__ import annotations

import pytest

from modelyard.errors import ModelyardError
from modelyard.frontdoors.rewritten import header_length, with_header_length
from modelyard.frontdoors.vertex_ai import BINARY_MIME, RULE, redirected, vertex_ai_frontend


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
