"""What governance learns of an HTTP call from its path and headers."""

from __future__ import annotations

from typing import Any

from modelyard.gateway import http


class _Service:
    service = "com.example.svc"


def scope(path: str, *headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"method": "POST", "path": path, "headers": list(headers)}


def test_a_call_carries_interface_model_and_credentials() -> None:
    call = http._call_from_headers(
        _Service(),  # type: ignore[arg-type]
        scope(
            "/v2/models/ranker/versions/2/infer",
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer tok-1 "),
            (b"x-request-id", b"req-7"),
        ),
    )
    assert (call.interface, call.model, call.version) == ("infer", "ranker", "2")
    assert (call.bearer_token, call.api_key, call.request_id) == ("tok-1", None, "req-7")
    key_call = http._call_from_headers(
        _Service(),  # type: ignore[arg-type]
        scope("/v2/repository/models/ranker/load", (b"x-api-key", b"k")),
    )
    assert (key_call.interface, key_call.api_key) == ("admin", "k")


def test_remembered_paths_stay_bounded() -> None:
    http._ROUTES.clear()
    for i in range(http._ROUTES_MAX + 10):
        assert http.classify("GET", f"/v2/models/m{i}")[1] == f"m{i}"
        assert http.model_route(f"/v2/models/m{i}/versions/2/infer") == (f"m{i}", "2", "/infer")
    assert len(http._ROUTES) <= http._ROUTES_MAX
    assert http.classify("GET", "/v2/health/ready") == ("health", None, None)
    assert http.model_route("/v2/models/stats") is None
