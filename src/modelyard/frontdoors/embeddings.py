"""The embedding APIs people already call, over any data plane: OpenAI's ``/v1/embeddings``
and text-embeddings-inference's ``/embed``.

A call names a text model (OpenAI's ``model``; for ``/embed``, the model
``--embedding-model`` names) and its texts; it becomes one V2 infer request of the model's
text input, asking for its embedding and token count outputs, and goes through the same
governance as any infer call on that model: its limits, breakers, auth (an OpenAI key is
a bearer token) and error line, carried in each API's own error document. Texts over
the model's ``max_batch_size`` are sent as several requests, admitted once. The wire
formats are protocol/embeddings.py's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from modelyard import error_rules
from modelyard.dataplane import DataPlane
from modelyard.errors import (
    GovernanceError,
    ModelyardError,
    ProtocolError,
    internal_error,
    retry_after_header,
)
from modelyard.governance.guard import CALL_HEADERS
from modelyard.governance.runtime import Governance
from modelyard.protocol.embeddings import (
    OPENAI_PATH,
    EmbeddingCall,
    error_body,
    error_status,
    openai_body,
    parse_openai,
    parse_tei,
    shaped,
    tei_body,
)
from modelyard.refusal_log import REFUSALS
from modelyard.types import InferRequest, InferResponse, RequestedOutput

log = structlog.get_logger("modelyard.http")

_JSON = [(b"content-type", b"application/json")]
_CALL_HEADERS = frozenset(name.encode() for name in CALL_HEADERS)

Reply = tuple[int, bytes, list[tuple[bytes, bytes]]]


@dataclass(frozen=True, slots=True)
class TextModel:
    """What an embedding call needs of a text model: its input and outputs, its batch."""

    text_input: str
    embedding_output: str
    token_output: str | None
    max_batch_size: int


def text_model(config: dict[str, Any], model: str) -> TextModel:
    """A model's text input, embedding and token count outputs, from its config."""
    texts = [i["name"] for i in config.get("input", []) if i.get("data_type") == "TYPE_STRING"]
    parameters = config.get("parameters") or {}
    counted = (parameters.get("token_count_output") or {}).get("string_value") or None
    vectors = [
        o["name"]
        for o in config.get("output", [])
        if o.get("data_type") in ("TYPE_FP32", "TYPE_FP16") and o["name"] != counted
    ]
    if len(texts) != 1 or len(config.get("input", [])) != 1 or not vectors:
        raise ProtocolError.of(
            error_rules.EMBEDDINGS_MODEL,
            f"model '{model}' does not embed text (it takes "
            f"{', '.join(i['name'] for i in config.get('input', [])) or 'no inputs'})",
        )
    names = {o["name"] for o in config.get("output", [])}
    return TextModel(
        texts[0],
        vectors[0],
        counted if counted in names else None,
        int(config.get("max_batch_size") or 0),
    )


class _InBatches:
    """Sends a request's texts to the data plane ``size`` at a time, together."""

    def __init__(self, dataplane: DataPlane, size: int) -> None:
        self._dataplane = dataplane
        self._size = size

    async def infer(self, request: InferRequest) -> InferResponse:
        (name, texts), = request.inputs.items()
        size = self._size
        if size <= 0 or len(texts) <= size:
            return await self._dataplane.infer(request)
        parts = []
        for start in range(0, len(texts), size):
            part = InferRequest(
                request.model_name, request.model_version, {name: texts[start : start + size]},
                dict(request.input_datatypes), request.outputs, principals=request.principals,
            )  # fmt: skip
            parts.append(self._dataplane.infer(part))
        responses = await asyncio.gather(*parts)
        first = responses[0]
        for index, output in enumerate(first.outputs):
            output.data = np.concatenate([r.outputs[index].data for r in responses])
        return first


class EmbeddingRoutes:
    def __init__(
        self,
        dataplane: DataPlane,
        governance: Governance | None = None,
        default_model: str | None = None,
    ) -> None:
        self.dataplane = dataplane
        self.governance = governance
        self.default_model = default_model

    async def answer(self, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> Reply:
        api = "openai" if path == OPENAI_PATH else "tei"
        governance = self.governance
        call = None
        try:
            asked = parse_openai(body) if api == "openai" else parse_tei(body)
            asked.model = asked.model or self._default()
            model = text_model(self.dataplane.model_config(asked.model, None), asked.model)
            request = _request(asked, model)
            batches = _InBatches(self.dataplane, model.max_batch_size)
            if governance is None:
                response = await batches.infer(request)
            else:
                call = governance.call("infer", asked.model, None)
                for key, value in headers:
                    if key in _CALL_HEADERS:
                        call.take_header(key.decode("latin-1"), value.decode("latin-1"))
                response = await governance.infer(call, _returns(request), batches)
            return 200, _body(asked, model, response), list(_JSON)
        except GovernanceError as error:
            extra = []
            if governance is not None and call is not None:
                extra = [
                    (name.lower().encode(), value.encode())
                    for name, value in governance.rate_limit_headers(call, error).items()
                ]
            return self._refusal(api, path, error, extra)
        except ModelyardError as error:
            return self._refusal(api, path, error, [])
        except Exception as exc:
            log.exception("request_crashed", path=path)
            return self._refusal(api, path, internal_error(exc), [])

    def _default(self) -> str:
        if self.default_model is None:
            raise ProtocolError.of(
                error_rules.NO_EMBEDDING_MODEL,
                "POST /embed embeds with the server's embedding model, and none is named",
            )
        return self.default_model

    @staticmethod
    def _refusal(
        api: str, path: str, error: ModelyardError, extra: list[tuple[bytes, bytes]]
    ) -> Reply:
        REFUSALS.warning(log, "request_failed", path=path, **error.fields())
        headers = list(_JSON)
        if error.retry_after is not None and not any(k == b"retry-after" for k, _ in extra):
            headers.append((b"retry-after", retry_after_header(error.retry_after).encode()))
        return error_status(api, error), error_body(api, error), headers + extra


def _returns(request: InferRequest) -> Callable[[], InferRequest]:
    return lambda: request


def _request(asked: EmbeddingCall, model: TextModel) -> InferRequest:
    texts = np.empty((len(asked.texts), 1), dtype=object)
    texts[:, 0] = [text.encode("utf-8") for text in asked.texts]
    outputs = [RequestedOutput(model.embedding_output)]
    if model.token_output is not None:
        outputs.append(RequestedOutput(model.token_output))
    assert asked.model is not None
    return InferRequest(
        asked.model, None, {model.text_input: texts}, {model.text_input: "BYTES"}, outputs
    )


def _body(asked: EmbeddingCall, model: TextModel, response: InferResponse) -> bytes:
    arrays = {output.name: output.data for output in response.outputs}
    vectors = shaped(asked, arrays[model.embedding_output])
    if asked.api == "tei":
        return tei_body(vectors)
    tokens = 0
    if model.token_output is not None:
        tokens = int(np.asarray(arrays[model.token_output]).sum())
    return openai_body(asked, vectors, tokens)
