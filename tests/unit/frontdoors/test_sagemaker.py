"""SageMaker's front door: its routes onto the V2 front door, and a binary reply's header
size said in its content type."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from modelyard.frontdoors.http import HttpFrontend
from modelyard.frontdoors.sagemaker import (
    BINARY_MIME,
    SageMakerFrontend,
    _binary_reply_said_in_content_type,
)
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager


def _calls(tmp_path: Path, environ: dict[str, str], *calls: tuple[str, str, bytes]) -> list[Any]:
    async def run() -> list[Any]:
        manager = ModelManager(ModelRepository([tmp_path]), ControlMode.EXPLICIT)
        await manager.start()
        http = HttpFrontend(LocalDataPlane(manager), max_body_bytes=1024)
        front = SageMakerFrontend(http, environ)
        transport = httpx.ASGITransport(app=front)
        async with httpx.AsyncClient(transport=transport, base_url="http://sm") as client:
            return [await client.request(method, path, content=body)
                    for method, path, body in calls]  # fmt: skip

    return asyncio.run(run())


def test_routes_answer_as_tritons_sagemaker_server(tmp_path: Path) -> None:
    ping, unnamed, listing, other = _calls(
        tmp_path, {}, ("GET", "/ping", b""), ("POST", "/invocations", b"dummy"),
        ("GET", "/models", b""), ("GET", "/v2/health/ready", b""),
    )  # fmt: skip
    assert ping.status_code == 200  # ready: no model asked for
    assert unnamed.status_code == 404  # Triton's placeholder name: an unknown model
    assert "'unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME' is not found" in unnamed.text
    assert listing.status_code == 501 and "rule=protocol/sagemaker" in listing.text
    assert other.status_code == 400  # no V2 route here: Triton's 400, with the line
    assert "no route for GET /v2/health/ready; rule=protocol/sagemaker" in other.text
    (named,) = _calls(tmp_path, {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "m"},
                      ("POST", "/invocations", b"{}"))  # fmt: skip
    assert "Request for unknown model: 'm' is not found" in named.text
    (oversized,) = _calls(tmp_path, {}, ("POST", "/invocations", b"x" * 2048))
    assert oversized.status_code == 413 and "rule=protocol/max-body-size" in oversized.text


def test_a_binary_reply_says_its_header_size_in_its_content_type() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    rewritten = _binary_reply_said_in_content_type(send)
    binary = [(b"content-type", b"application/octet-stream"),
              (b"inference-header-content-length", b"42"), (b"content-length", b"90")]  # fmt: skip
    asyncio.run(rewritten({"type": "http.response.start", "status": 200, "headers": binary}))
    assert sent[0]["headers"] == [(b"content-length", b"90"),
                                  (b"content-type", (BINARY_MIME + "42").encode())]  # fmt: skip
    json_only = [(b"content-type", b"application/json")]
    asyncio.run(rewritten({"type": "http.response.start", "status": 200, "headers": json_only}))
    assert sent[1]["headers"] == json_only
