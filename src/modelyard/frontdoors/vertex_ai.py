"""Vertex AI's front door as Triton serves it (``--allow-vertex-ai``): two routes on a port
of their own, in front of the V2 HTTP API.

The health route (``AIP_HEALTH_ROUTE``) answers as ``/v2/health/ready``. The prediction
route (``AIP_PREDICT_ROUTE``, POST) infers on the default model or, with the
``X-Vertex-Ai-Triton-Redirect`` header, answers the V2 call the header names
(``v2/models/M/infer``, ``v2/models/M/ready``, ``v2/models/stats``, ``v2``, ``metrics``,
shared memory, the repository), with the method that call takes. A binary body says its
JSON header's size in its content type (``BINARY_MIME`` then the size), the V2 header
``Inference-Header-Content-Length`` being Vertex AI's to leave out. Any other path, and a
redirect to a call Triton's Vertex AI server does not answer, is Triton's 400 (a
redirect that is no POST its 405), with the error line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from modelyard import error_rules
from modelyard.errors import Code, ConfigError, ModelyardError, shown
from modelyard.frontdoors.http import HttpFrontend, error_reply
from modelyard.frontdoors.http_routes import model_route, route_of
from modelyard.frontdoors.rewritten import (
    Receive,
    Scope,
    Send,
    as_call,
    no_route,
    refused,
    replay,
    reply,
    with_header_length,
)

BINARY_MIME = "application/vnd.vertex-ai-triton.binary+json;json-header-size="
RULE = "protocol/vertex-ai"
REDIRECT_HEADER = b"x-vertex-ai-triton-redirect"
# the V2 calls Triton's Vertex AI server answers through a redirect (their routes'
# answers, http_routes.ROUTES), besides a model's infer call and the metrics
_REDIRECTED = frozenset({
    "_model_ready", "_model_config", "_model_stats", "_model_metadata", "_server_live",
    "_server_ready", "_server_metadata", "_all_stats", "_repository_index",
    "_repository_action", "_shared_memory",
})  # fmt: skip
_ROUTES = "AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE"
_REDIRECTS = (
    "X-Vertex-Ai-Triton-Redirect naming a call Triton's Vertex AI server answers (v2/..., "
    "metrics)"
)


def redirected(endpoint: str) -> tuple[str, str] | None:
    """The method and path of the V2 call a redirect names (``/`` and the header), as
    Triton's Vertex AI server takes it (the method its route takes), or None for one it
    does not answer."""
    if endpoint == "/metrics":
        return "GET", endpoint
    found = route_of(endpoint)
    if found is None:
        return None
    route, _ = found
    infer = route.answer == "" and (model_route(endpoint) or ("", "", ""))[2] == "/infer"
    if infer or route.answer in _REDIRECTED:
        return route.methods[0], endpoint
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
    routes = []
    given = (("AIP_PREDICT_ROUTE", predict_route), ("AIP_HEALTH_ROUTE", health_route))
    for variable, route in given:
        try:  # each a pattern the whole path must match, as Triton's
            routes.append(re.compile(route))
        except re.error as exc:
            raise ConfigError.of(
                error_rules.VERTEX_AI, f"{variable} {route!r} is not a valid route pattern: {exc}"
            ) from None
    return VertexAiFrontend(http, routes[0], routes[1], default_model, metrics)


class VertexAiFrontend:
    """The ASGI app of the Vertex AI port, in front of ``http`` (the V2 front door)."""

    def __init__(
        self,
        http: HttpFrontend,
        predict_route: re.Pattern[str],
        health_route: re.Pattern[str],
        default_model: str,
        metrics: Callable[[], bytes],
    ) -> None:
        self.http = http
        self.predict = predict_route
        self.health = health_route
        self.default_model = default_model
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.http(scope, receive, send)  # lifespan
            return
        if self.health.fullmatch(scope["path"]):
            await self.http(as_call(scope, "GET", "/v2/health/ready"), receive, send)
            return
        try:
            body = await self.http.read_body(scope, receive)
            headers = with_header_length(scope["headers"], len(body), BINARY_MIME, RULE)
            method, path = self._target(scope, headers)
        except ModelyardError as error:
            await reply(send, *error_reply(error))
            return
        if path == "/metrics":
            text = self.metrics()
            await reply(send, 200, [(b"content-type", b"text/plain; charset=utf-8")], text)
        else:
            await self.http(as_call(scope, method, path, headers=headers), replay(body), send)

    def _target(self, scope: Scope, headers: list[tuple[bytes, bytes]]) -> tuple[str, str]:
        """The call a request of the prediction route makes: the default model's infer, or
        the one its redirect names; refused otherwise, with the line."""
        method: str = scope["method"]
        if not self.predict.fullmatch(scope["path"]):
            raise no_route(RULE, method, scope["path"], f"the paths {_ROUTES} name")
        redirect = next((v for k, v in headers if k == REDIRECT_HEADER), None)
        if redirect is None:
            return method, f"/v2/models/{self.default_model}/infer"
        if method != "POST":
            detail = f"a redirected call is a POST, not {shown(method, 20)}"
            raise refused(RULE, detail, _REDIRECTS, Code.METHOD_NOT_ALLOWED)
        endpoint = "/" + redirect.decode("latin-1")
        target = redirected(endpoint)
        if target is None:
            raise no_route(RULE, "POST", endpoint, _REDIRECTS)
        return target
