"""SageMaker's front door as Triton serves it (``--allow-sagemaker``), single-model
endpoints: two routes on a port of their own, in front of the V2 HTTP API.

``/ping`` answers as ``/v2/health/<mode>`` (``SAGEMAKER_TRITON_PING_MODE``: ``ready``
unless set); ``/invocations`` infers on ``SAGEMAKER_TRITON_DEFAULT_MODEL_NAME`` (Triton's
placeholder name where it is unset, so such a call is an unknown model's 404). A binary
body gives its JSON header's size in its content type (``BINARY_MIME`` then the size), and
a reply with binary outputs says its own there, where the V2 API has
``Inference-Header-Content-Length``. Multi-model endpoints (``/models``) are
``sagemaker_models``'s; any other path is Triton's 400, with the error line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from modelyard.errors import ModelyardError
from modelyard.frontdoors.http import HttpFrontend, error_reply
from modelyard.frontdoors.rewritten import (
    HEADER_LENGTH,
    Receive,
    Scope,
    Send,
    as_call,
    no_route,
    replay,
    reply,
    with_header_length,
)
from modelyard.frontdoors.sagemaker_models import MODELS_ROOT, MultiModelEndpoints

BINARY_MIME = "application/vnd.sagemaker-triton.binary+json;json-header-size="
RULE = "protocol/sagemaker"
# what Triton infers on where SAGEMAKER_TRITON_DEFAULT_MODEL_NAME is unset
UNSPECIFIED_MODEL = "unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"
_MODELS = re.compile(r"/models(?:/)?([^/]+)?(/invoke)?")


class SageMakerFrontend:
    """The ASGI app of the SageMaker port, in front of ``http`` (the V2 front door)."""

    def __init__(
        self,
        http: HttpFrontend,
        environ: Mapping[str, str] = os.environ,
        models_root: Path = MODELS_ROOT,
    ) -> None:
        self.http = http
        self.ping_mode = environ.get("SAGEMAKER_TRITON_PING_MODE") or "ready"
        self.model = environ.get("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME") or UNSPECIFIED_MODEL
        self.models = MultiModelEndpoints(http, self._invoke, models_root)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.http(scope, receive, send)  # lifespan
            return
        path: str = scope["path"]
        if path == "/ping":
            await self.http(as_call(scope, "GET", f"/v2/health/{self.ping_mode}"), receive, send)
        elif path == "/invocations":
            await self._invoke(scope, receive, send, self.model)
        elif (models := _MODELS.fullmatch(path)) is not None:
            await self.models(scope, receive, send, models[1] or "", models[2] or "")
        else:
            where = "SageMaker's routes: /ping, /invocations, /models"
            await reply(send, *error_reply(no_route(RULE, scope["method"], path, where)))

    async def _invoke(self, scope: Scope, receive: Receive, send: Send, model: str) -> None:
        try:
            body = await self.http.read_body(scope, receive)
            headers = with_header_length(scope["headers"], len(body), BINARY_MIME, RULE)
        except ModelyardError as error:
            await reply(send, *error_reply(error))
            return
        call = as_call(scope, scope["method"], f"/v2/models/{model}/infer", headers=headers)
        await self.http(call, replay(body), _binary_reply_said_in_content_type(send))


def _binary_reply_said_in_content_type(send: Send) -> Send:
    """``send``, with a reply's JSON header size moved into its content type."""

    async def sent(message: dict[str, object]) -> None:
        if message["type"] == "http.response.start":
            headers = message.get("headers") or []
            assert isinstance(headers, list)
            size = next((v for k, v in headers if k == HEADER_LENGTH), None)
            if size is not None:
                kept = [(k, v) for k, v in headers if k not in (HEADER_LENGTH, b"content-type")]
                message = {**message, "headers": [
                    *kept, (b"content-type", BINARY_MIME.encode() + size)
                ]}  # fmt: skip
        await send(message)

    return sent
