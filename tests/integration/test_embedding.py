"""MiniLM sentence embeddings and the topic classifier, served as ensembles by a real server.

The reference is computed in this process with torch and transformers from the
same package's weights, one text at a time and without padding: mean pooling
over the tokens, then L2 normalisation (what sentence-transformers does).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

from modelyard.examples.text import MAX_SEQUENCE_LENGTH, TOPICS, build_text_models, minilm_dir
from tests.support.servers import Served, server_in_process

pytestmark = pytest.mark.slow

LONG = (
    "The committee met on Tuesday to review the proposal for the new public library, which "
    "would replace the old building on the corner of Main Street and Elm Avenue. Members "
    "discussed the budget, the timeline for construction, the number of parking spaces, the "
    "size of the children's reading room, and whether the café on the ground floor should stay "
    "open in the evenings. After a long debate about costs, accessibility, energy efficiency, "
    "and the opinions collected from residents at three town hall meetings, they agreed to ask "
    "the architects for a revised plan with more windows, solar panels on the roof, a bigger "
    "hall for community events, and quiet study rooms for students preparing for exams."
)
TEXTS = [
    "hello world",
    "A cat sat on the mat.",
    "",
    "Größe",
    "日本語のテキスト",
    "Party time 🎉🙂 with emoji!",
    "Ça va très bien, merci — und Ihnen?",
    LONG,  # about 150 tokens
    LONG + " " + LONG,  # over 256: truncated on both sides
]
HELD_OUT = {
    "The referee blew the whistle and the players left the pitch.": "sports",
    "Stir the flour into the melted butter and cook it for two minutes.": "cooking",
    "Expect a cold and rainy afternoon with gusts of wind.": "weather",
    "The programmer deployed a new version of the database to the cloud.": "technology",
}


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    target = tmp_path_factory.mktemp("text") / "models"
    # the ONNX export is cached across test sessions in pytest's cache directory
    pytest_cache = getattr(pytestconfig, "cache", None)  # absent with -p no:cacheprovider
    cache = (
        pytest_cache.mkdir("modelyard-minilm-onnx")
        if pytest_cache is not None
        else tmp_path_factory.mktemp("onnx-cache")
    )
    build_text_models(target, seed=0, cache_dir=cache)
    return target


@pytest.fixture(scope="module")
def server(repository: Path) -> Iterator[Served]:
    with server_in_process(repository) as server:
        yield server


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    source = str(minilm_dir())
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    model = AutoModel.from_pretrained(source, local_files_only=True).eval()
    vectors = {}
    with torch.no_grad():
        for text in TEXTS:
            tokens = tokenizer(
                text, truncation=True, max_length=MAX_SEQUENCE_LENGTH, return_tensors="pt"
            )
            hidden = model(**tokens).last_hidden_state[0]
            mean = hidden.mean(dim=0)  # one text, no padding: every token counts
            vectors[text] = torch.nn.functional.normalize(mean, dim=0).numpy()
    return vectors


def embed(client: httpclient.InferenceServerClient, texts: list[str]) -> np.ndarray:
    item = httpclient.InferInput("TEXT", [len(texts), 1], "BYTES")
    item.set_data_from_numpy(np.array([[t.encode("utf-8")] for t in texts], dtype=object))
    result = client.infer("text_embedding", [item])
    embedding = result.as_numpy("EMBEDDING")
    assert embedding is not None
    return embedding


def assert_close(texts: list[str], got: np.ndarray, reference: dict[str, np.ndarray]) -> None:
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    for text, vector in zip(texts, got, strict=True):
        cosine = float(vector @ reference[text]) / float(np.linalg.norm(vector))
        assert cosine >= 0.9999, (text[:40], cosine)
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def onnx_stats(server: Served) -> dict[str, Any]:
    url = f"http://{server.http_url}/v2/models/minilm_onnx/stats"
    stats: dict[str, Any] = httpx.get(url).json()["model_stats"][0]
    return stats


@pytest.fixture
def client(server: Served) -> Iterator[httpclient.InferenceServerClient]:
    # closed when the test ends: one left to the collector may be closed from another
    # thread later, where its gevent pool cannot be, and fail whichever test runs then
    with httpclient.InferenceServerClient(server.http_url) as triton:
        yield triton


def test_texts_one_per_request_match_torch(
    client: httpclient.InferenceServerClient, reference: dict[str, np.ndarray]
) -> None:
    for text in TEXTS:
        assert_close([text], embed(client, [text]), reference)


def test_texts_in_one_request_match_torch(
    client: httpclient.InferenceServerClient, reference: dict[str, np.ndarray]
) -> None:
    assert_close(TEXTS, embed(client, TEXTS), reference)  # padded together to 256 tokens
    short = TEXTS[:7]
    assert_close(short, embed(client, short), reference)


def test_many_concurrent_requests_batch_and_match_torch(
    server: Served, reference: dict[str, np.ndarray]
) -> None:
    requests = [TEXTS[i % 7] for i in range(96)]  # the short ones: two length buckets

    def one(text: str) -> np.ndarray:
        # closed in its own thread: the client's gevent pool cannot be closed from another
        with httpclient.InferenceServerClient(server.http_url) as client:
            return embed(client, [text])

    before = onnx_stats(server)
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, requests))
    after = onnx_stats(server)
    assert_close(requests, np.concatenate(results), reference)
    rows = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    assert rows == len(requests)
    assert executions < len(requests)  # requests of one length bucket shared batches


def test_the_classifier_names_the_topic_of_held_out_sentences(
    client: httpclient.InferenceServerClient,
) -> None:
    texts = list(HELD_OUT)
    item = httpclient.InferInput("TEXT", [len(texts), 1], "BYTES")
    item.set_data_from_numpy(np.array([[t.encode()] for t in texts], dtype=object))
    outputs = [
        httpclient.InferRequestedOutput("label"),
        httpclient.InferRequestedOutput("probabilities", class_count=1),
    ]
    result = client.infer("text_classifier", [item], outputs=outputs)
    labels = result.as_numpy("label")
    top = result.as_numpy("probabilities")
    assert labels is not None and top is not None
    assert [label.decode() for label in labels.ravel()] == list(HELD_OUT.values())
    for row, topic in zip(top.ravel(), HELD_OUT.values(), strict=True):
        value, index, label = row.decode().split(":")
        assert label == topic and TOPICS[int(index)] == topic and float(value) > 0.5


def test_ensemble_metadata_config_and_statistics(server: Served) -> None:
    base = f"http://{server.http_url}/v2/models"
    metadata = httpx.get(f"{base}/text_classifier").json()
    assert metadata["platform"] == "ensemble"
    assert metadata["inputs"] == [{"name": "TEXT", "datatype": "BYTES", "shape": [-1, 1]}]
    assert [o["name"] for o in metadata["outputs"]] == ["label", "probabilities"]
    config = httpx.get(f"{base}/text_embedding/config").json()
    steps = config["ensemble_scheduling"]["step"]
    assert [s["model_name"] for s in steps] == ["minilm_tokenizer", "minilm_onnx", "minilm_pooling"]
    stats = httpx.get(f"{base}/text_embedding/stats").json()["model_stats"][0]
    assert stats["name"] == "text_embedding"
    assert stats["inference_stats"]["success"]["count"] >= 1
    assert httpx.get(f"http://{server.http_url}/v2/health/ready").status_code == 200
