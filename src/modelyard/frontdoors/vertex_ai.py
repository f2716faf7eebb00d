"""Vertex AI's front door as Triton serves it (``--allow-vertex-ai``): two routes on a port
of their own, in front of the V2 HTTP API.

The health route (``AIP_HEALTH_ROUTE``) answers as ``/v2/health/ready``. The prediction
route (``AIP_PREDICT_ROUTE``, POST) infers on the default model or, with the
``X-Vertex-Ai-Triton-Redirect`` header, answers the V2 call the header names
(``v2/models/M/infer``, ``v2/models/M/ready``, ``v2/models/stats``, ``v2``, ``metrics``,
shared memory, the repository), with the method that call takes. A binary body says its
JSON header's size in its content type (``BINARY_MIME`` then the size), the V2 header
``Inference-Header-Content-Length`` being Vertex AI's to leave out. Any other path, and a
redirect to a call Triton's Vertex AI server does not answer, is a 400 with no body.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from modelyard import error_rules
from modelyard.errors import Code, ConfigError, ModelyardError, ProtocolError
from modelyard.frontdoors.http import HttpFrontend, error_reply

BINARY_MIME = "application/vnd.vertex-ai-triton.binary+json;json-header-size="
REDIRECT_HEADER = b"x-vertex-ai-triton-redirect"
_HEADER_LENGTH = b"inference-header-content-length"
_MODEL = re.compile(r"/v2/models/([^/]+)(?:/versions/([0-9]+))?(?:/(infer|ready|config|stats))?")
_SERVER_HEALTH = re.compile(r"/v2/health/(?:live|ready)")
_SHARED_MEMORY = re.compile(
    r"/v2/(?:system|cuda)sharedmemory(?:/region/[^/]+)?/(status|register|unregister)"
)
_REPOSITORY = re.compile(r"/v2/repository(?:/[^/]+)?/(?:index|models/[^/]+/(?:load|unload))")
_LEADING_INTEGER = re.compile(rb"\s*([+-]?\d+)")

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


def _bad_request(detail: str) -> ProtocolError:
    return ProtocolError(
        detail,
        code=Code.INVALID_ARGUMENT,
        rule="protocol/vertex-ai",
        where=f"the request's Content-Type ({BINARY_MIME}<size of its JSON header>)",
    )


def header_length(headers: list[tuple[bytes, bytes]], body_size: int) -> int | None:
    """The JSON header's size a Vertex AI request gives in its content type (None: the
    body is JSON alone), read as Triton reads it (``atoi``: the leading digits, 0 where
    there are none); refused where the type only holds Vertex AI's or the size is out of
    the body's range."""
    for key, value in headers:
        if key != b"content-type":
            continue
        text = value.decode("latin-1")
        at = text.find(BINARY_MIME)
        if at < 0:
            return None
        if at != 0:
            raise _bad_request(
                f"expect MIME type for binary data starts with '{BINARY_MIME}', got: {text}"
            )
        rest = value[len(BINARY_MIME) :]
        number = _LEADING_INTEGER.match(rest)
        size = int(number.group(1)) if number else 0
        if size < 0 or size > body_size:
            raise _bad_request(
                f"inference header size should be in range (0, {body_size}), got: "
                f"{rest.decode('latin-1')}"
            )
        return size
    return None


def redirected(endpoint: str) -> tuple[str, str] | None:
    """The method and path of the V2 call a redirect names (``/`` and the header), as
    Triton's Vertex AI server takes it, or None for one it does not answer."""
    if endpoint in ("/metrics", "/v2/models/stats", "/v2"):
        return "GET", endpoint
    model = _MODEL.fullmatch(endpoint)
    if model is not None:
        return ("POST" if model.group(3) == "infer" else "GET"), endpoint
    if _SERVER_HEALTH.fullmatch(endpoint):
        return "GET", endpoint
    shared_memory = _SHARED_MEMORY.fullmatch(endpoint)
    if shared_memory is not None:
        return ("GET" if shared_memory.group(1) == "status" else "POST"), endpoint
    if _REPOSITORY.fullmatch(endpoint):
        return "POST", endpoint
    return None


def vertex_ai_frontend(
    http: HttpFrontend,
    ready_models: list[str],
    default_model: str | None,
    metrics: Callable[[], bytes],
    environ: Mapping[str, str] = os.environ,
) -> VertexAiFrontend:
    """The front door of the routes Vertex AI's environment names, on the default model (the
    one ready model where none is named), refused in Triton's words as it starts."""

    def refused(detail: str) -> ConfigError:
        return ConfigError.of(error_rules.VERTEX_AI, detail, triton=True)

    predict_route = environ.get("AIP_PREDICT_ROUTE", "")
    health_route = environ.get("AIP_HEALTH_ROUTE", "")
    if not predict_route:  # sic: Triton's text names it API_
        raise refused("API_PREDICT_ROUTE is not defined for Vertex AI endpoint")
    if not health_route:
        raise refused("AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint")
    if default_model is None:
        if len(ready_models) != 1:
            raise refused(
                "Expect the model repository contains only a single model if default model "
                "is not specified"
            )
        default_model = ready_models[0]
    elif default_model not in ready_models:
        raise refused(f"Expect the default model '{default_model}' is loaded")
    return VertexAiFrontend(http, predict_route, health_route, default_model, metrics)


class VertexAiFrontend:
    """The ASGI app of the Vertex AI port, in front of ``http`` (the V2 front door)."""

    def __init__(
        self,
        http: HttpFrontend,
        predict_route: str,
        health_route: str,
        default_model: str,
        metrics: Callable[[], bytes],
    ) -> None:
        self.http = http
        self.predict = re.compile(predict_route)
        self.health = re.compile(health_route)
        self.default_model = default_model
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.http(scope, receive, send)  # lifespan
            return
        path: str = scope["path"]
        if self.health.fullmatch(path):
            await self.http(_as(scope, "GET", "/v2/health/ready"), receive, send)
            return
        if not self.predict.fullmatch(path):
            await _reply(send, 400, [], b"")
            return
        try:
            body = await self.http.read_body(scope, receive)
            headers = [(k, v) for k, v in scope["headers"] if k != _HEADER_LENGTH]
            size = header_length(headers, len(body))
        except ModelyardError as error:
            await _reply(send, *error_reply(error))
            return
        if size is not None:
            headers.append((_HEADER_LENGTH, str(size).encode()))
        redirect = next((v for k, v in headers if k == REDIRECT_HEADER), None)
        if redirect is None:
            target: tuple[str, str] | None = (
                scope["method"], f"/v2/models/{self.default_model}/infer"
            )  # fmt: skip
        elif scope["method"] != "POST":
            await _reply(send, 405, [], b"")
            return
        else:
            target = redirected("/" + redirect.decode("latin-1"))
        if target is None:
            await _reply(send, 400, [], b"")
        elif target[1] == "/metrics":
            text = self.metrics()
            await _reply(send, 200, [(b"content-type", b"text/plain; charset=utf-8")], text)
        else:
            forwarded = {**_as(scope, *target), "headers": headers}
            await self.http(forwarded, _replay(body), send)


def _as(scope: Scope, method: str, path: str) -> Scope:
    return {**scope, "method": method, "path": path, "raw_path": path.encode("latin-1")}


def _replay(body: bytes) -> Receive:
    """The request's body, read once already, for the front door to read again."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _reply(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
