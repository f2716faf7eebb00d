"""The embedding APIs' wire formats: OpenAI's ``POST /v1/embeddings`` and Hugging Face
text-embeddings-inference's ``POST /embed``.

Wire formats only: a body becomes an ``EmbeddingCall`` (the texts, the model named, the
options), vectors become a body, and an error becomes each API's error document carrying
modelyard's error line. The front door (frontdoors/embeddings.py) runs the call.

OpenAI (``openai.OpenAI(base_url=...).embeddings.create``): ``model`` and ``input`` (a
text or a list of at most 2,048 texts; token arrays are refused: the model tokenizes),
``encoding_format`` ``float`` or ``base64`` (little-endian float32), ``dimensions`` (the
first N, normalised again, as for Matryoshka models), ``user`` (ignored). The answer's
``usage`` counts the tokens the model ran. Errors: ``{"error": {"message", "type",
"param", "code"}}``.

TEI: ``inputs`` (a text or a list), ``normalize`` (default true), ``truncate`` and
``truncation_direction`` (accepted; the model truncates at its own
``max_sequence_length``, on the right), ``dimensions``. The answer is a list of vectors.
Errors: ``{"error", "error_type"}``; a request the model refuses as invalid is 422, as in
TEI.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from modelyard import error_rules
from modelyard.errors import ModelyardError, ProtocolError
from modelyard.protocol.json_body import json_object
from modelyard.protocol.status import http_status

OPENAI_PATH = "/v1/embeddings"
TEI_PATH = "/embed"
EMBEDDING_PATHS = frozenset((OPENAI_PATH, TEI_PATH))
MAX_TEXTS = 2048  # OpenAI's own limit on inputs per request


@dataclass(slots=True)
class EmbeddingCall:
    api: str  # "openai" or "tei"
    model: str | None  # None: TEI's, the server's embedding model
    texts: list[str]
    base64: bool = False
    dimensions: int | None = None
    normalize: bool = False  # TEI's: normalise the vectors the model gives


def _invalid(detail: str, where: str) -> ProtocolError:
    return ProtocolError.of(error_rules.EMBEDDINGS, detail, where=where)


def _bad_json(detail: str) -> ProtocolError:
    return _invalid(f"malformed JSON in embedding request: {detail}", "the request body")


def _texts(value: Any, field: str, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        if len(value) > MAX_TEXTS:
            raise _invalid(f"'{field}' has {len(value)} texts, over {MAX_TEXTS}", where)
        return value
    if isinstance(value, list) and value and all(isinstance(item, (int, list)) for item in value):
        raise _invalid(
            f"'{field}' holds token ids; this server takes text and tokenizes it itself", where
        )
    raise _invalid(f"'{field}' must be a text or a non-empty list of texts", where)


def _dimensions(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _invalid("'dimensions' must be a positive whole number", where)
    return value


def parse_openai(body: bytes) -> EmbeddingCall:
    where = "the body of POST /v1/embeddings (model, input, encoding_format, dimensions)"
    doc = json_object(body, "the embedding request", _bad_json)
    model = doc.get("model")
    if not isinstance(model, str) or not model:
        raise _invalid("'model' must name the model that embeds the texts", where)
    encoding = doc.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise _invalid(f"'encoding_format' must be 'float' or 'base64', not {encoding!r}", where)
    return EmbeddingCall(
        api="openai",
        model=model,
        texts=_texts(doc.get("input"), "input", where),
        base64=encoding == "base64",
        dimensions=_dimensions(doc.get("dimensions"), where),
    )


def parse_tei(body: bytes) -> EmbeddingCall:
    where = "the body of POST /embed (inputs, normalize, dimensions)"
    doc = json_object(body, "the embedding request", _bad_json)
    normalize = doc.get("normalize", True)
    if not isinstance(normalize, bool):
        raise _invalid("'normalize' must be true or false", where)
    for flag in ("truncate",):
        if flag in doc and doc[flag] is not None and not isinstance(doc[flag], bool):
            raise _invalid(f"'{flag}' must be true or false", where)
    return EmbeddingCall(
        api="tei",
        model=None,
        texts=_texts(doc.get("inputs"), "inputs", where),
        dimensions=_dimensions(doc.get("dimensions"), where),
        normalize=normalize,
    )


def shaped(call: EmbeddingCall, vectors: np.ndarray) -> np.ndarray:
    """The vectors as asked: cut to ``dimensions`` and normalised again, or normalised."""
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    width = vectors.shape[1]
    if call.dimensions is not None:
        if call.dimensions > width:
            raise _invalid(
                f"'dimensions' {call.dimensions} is over the model's {width}",
                f"dimensions: at most {width}",
            )
        vectors = vectors[:, : call.dimensions]
    if call.dimensions is not None or call.normalize:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.maximum(norms, 1e-12)
    return vectors


def openai_body(call: EmbeddingCall, vectors: np.ndarray, tokens: int) -> bytes:
    data = []
    for index, vector in enumerate(vectors):
        embedding: Any = (
            base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
            if call.base64
            else vector
        )
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    return orjson.dumps(
        {
            "object": "list",
            "data": data,
            "model": call.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
        option=orjson.OPT_SERIALIZE_NUMPY,
    )


def tei_body(vectors: np.ndarray) -> bytes:
    return orjson.dumps(vectors, option=orjson.OPT_SERIALIZE_NUMPY)


_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}
_TEI_TYPES = {400: "Validation", 413: "Validation", 422: "Validation", 429: "Overloaded"}


def error_status(api: str, error: ModelyardError) -> int:
    status = http_status(error.code)
    return 422 if api == "tei" and status == 400 else status


def error_body(api: str, error: ModelyardError) -> bytes:
    status = error_status(api, error)
    line = error.line()
    if api == "tei":
        kind = _TEI_TYPES.get(status, "Unhealthy" if status == 503 else "Backend")
        return orjson.dumps({"error": line, "error_type": kind})
    return orjson.dumps(
        {
            "error": {
                "message": line,
                "type": _OPENAI_TYPES.get(status, "server_error"),
                "param": None,
                "code": error.rule,
            }
        }
    )
