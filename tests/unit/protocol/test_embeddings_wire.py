"""OpenAI's and text-embeddings-inference's embedding bodies, read and written."""

from __future__ import annotations

import base64

import numpy as np
import orjson
import pytest

from modelyard.errors import Code, GovernanceError, ModelyardError
from modelyard.protocol.embeddings import (
    MAX_TEXTS,
    error_body,
    error_status,
    openai_body,
    parse_openai,
    parse_tei,
    shaped,
    tei_body,
)


def test_an_openai_request_names_its_model_and_texts() -> None:
    call = parse_openai(b'{"model": "m", "input": "one text"}')
    assert (call.model, call.texts, call.base64) == ("m", ["one text"], False)
    call = parse_openai(b'{"model": "m", "input": ["a", "b"], "encoding_format": "base64"}')
    assert call.texts == ["a", "b"] and call.base64


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{not json", "malformed JSON"),
        (b"[]", "must be a JSON object"),
        (b'{"input": "x"}', "'model' must name"),
        (b'{"model": "m", "input": []}', "'input' must be a text"),
        (b'{"model": "m", "input": [1, 2, 3]}', "holds token ids"),
        (b'{"model": "m", "input": ["a", 3]}', "'input' must be a text"),
        (b'{"model": "m", "input": "x", "encoding_format": "int8"}', "'encoding_format'"),
        (b'{"model": "m", "input": "x", "dimensions": 0}', "'dimensions' must be"),
        (b'{"model": "m", "input": "x", "dimensions": true}', "'dimensions' must be"),
    ],
)
def test_a_bad_openai_request_is_refused_with_the_field_at_fault(body: bytes, words: str) -> None:
    with pytest.raises(ModelyardError, match=words) as error:
        parse_openai(body)
    assert error.value.code is Code.INVALID_ARGUMENT
    assert "rule=protocol/embeddings" in error.value.line()


def test_more_texts_than_openai_takes_are_refused() -> None:
    body = orjson.dumps({"model": "m", "input": ["x"] * (MAX_TEXTS + 1)})
    with pytest.raises(ModelyardError, match=f"over {MAX_TEXTS}"):
        parse_openai(body)


def test_an_openai_answer_carries_vectors_by_index_and_the_tokens_used() -> None:
    call = parse_openai(b'{"model": "m", "input": ["a", "b"]}')
    vectors = np.array([[0.5, 0.25], [1.0, -1.0]], np.float32)
    doc = orjson.loads(openai_body(call, vectors, tokens=7))
    assert doc["object"] == "list" and doc["model"] == "m"
    assert [d["index"] for d in doc["data"]] == [0, 1]
    assert doc["data"][1]["embedding"] == [1.0, -1.0]
    assert doc["usage"] == {"prompt_tokens": 7, "total_tokens": 7}
    call.base64 = True
    encoded = orjson.loads(openai_body(call, vectors, tokens=7))["data"][0]["embedding"]
    assert np.array_equal(np.frombuffer(base64.b64decode(encoded), "<f4"), vectors[0])


def test_dimensions_cut_the_vector_and_normalise_it_again() -> None:
    call = parse_openai(b'{"model": "m", "input": "x", "dimensions": 2}')
    vector = shaped(call, np.array([[3.0, 4.0, 12.0]], np.float32))
    assert np.allclose(vector, [[0.6, 0.8]])
    call.dimensions = 4
    with pytest.raises(ModelyardError, match="over the model's 3"):
        shaped(call, np.array([[3.0, 4.0, 12.0]], np.float32))


def test_a_tei_request_normalises_unless_asked_not_to() -> None:
    call = parse_tei(b'{"inputs": "x"}')
    assert call.model is None and call.normalize
    assert np.allclose(shaped(call, np.array([[3.0, 4.0]])), [[0.6, 0.8]])
    call = parse_tei(b'{"inputs": ["x", "y"], "normalize": false, "truncate": true}')
    assert call.texts == ["x", "y"] and not call.normalize
    assert orjson.loads(tei_body(np.array([[1.0, 2.0]], np.float32))) == [[1.0, 2.0]]
    with pytest.raises(ModelyardError, match="'normalize' must be"):
        parse_tei(b'{"inputs": "x", "normalize": "yes"}')


def test_each_api_gets_the_error_line_in_its_own_error_document() -> None:
    refused = GovernanceError(
        "request rejected: instance-qps 12/s over limit 10/s",
        code=Code.RESOURCE_EXHAUSTED,
        rule="ratelimit/instance-qps",
        where="limits.infer.instance_qps in service.yaml",
        retry_after=0.2,
    )
    openai = orjson.loads(error_body("openai", refused))["error"]
    assert openai["message"] == refused.line()
    assert (openai["type"], openai["code"]) == ("rate_limit_error", "ratelimit/instance-qps")
    assert error_status("openai", refused) == 429
    tei = orjson.loads(error_body("tei", refused))
    assert (tei["error"], tei["error_type"]) == (refused.line(), "Overloaded")
    invalid = ModelyardError("bad", code=Code.INVALID_ARGUMENT, rule="protocol/embeddings")
    assert (error_status("tei", invalid), error_status("openai", invalid)) == (422, 400)
