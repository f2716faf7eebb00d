"""MiniLM sentence embeddings served by a real server: the text model, the bare encoder
batched by tokens, the topic classifier, and the embedding APIs people already call.

The reference is computed in this process with torch and transformers from the same
package's weights, one text at a time and without padding: mean pooling over the tokens,
then L2 normalisation (what sentence-transformers does).
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import openai
import pytest
import tritonclient.http as httpclient

from modelyard.discovery import open_registry
from modelyard.discovery.registry import Instance
from modelyard.examples.text import MAX_SEQUENCE_LENGTH, TOPICS, build_text_models, minilm_dir
from modelyard.governance.auth import hash_secret
from tests.support.servers import Served, free_ports, server_in_process, wait_until

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
    LONG + " " + LONG,  # over 256: truncated
]
HELD_OUT = {
    "The referee blew the whistle and the players left the pitch.": "sports",
    "Stir the flour into the melted butter and cook it for two minutes.": "cooking",
    "Expect a cold and rainy afternoon with gusts of wind.": "weather",
    "The programmer deployed a new version of the database to the cloud.": "technology",
}
KEY = "embedding-caller-key"


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
    with server_in_process(repository, "--embedding-model", "text_embedding") as server:
        yield server


@pytest.fixture(scope="module")
def reference() -> dict[str, tuple[np.ndarray, int]]:
    """Each text's vector and token count, from torch and transformers, one at a time."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    source = str(minilm_dir())
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    model = AutoModel.from_pretrained(source, local_files_only=True).eval()
    vectors = {}
    with torch.no_grad():
        for text in [*TEXTS, *SHORT_AND_LONG]:
            tokens = tokenizer(
                text, truncation=True, max_length=MAX_SEQUENCE_LENGTH, return_tensors="pt"
            )
            hidden = model(**tokens).last_hidden_state[0]
            mean = hidden.mean(dim=0)  # one text, no padding: every token counts
            vector = torch.nn.functional.normalize(mean, dim=0).numpy()
            vectors[text] = (vector, int(tokens["input_ids"].shape[1]))
    return vectors


SHORT_AND_LONG = [
    *(f"Sentence number {i} is short." for i in range(12)),
    *(f"{LONG[: 100 + 40 * i]}" for i in range(4)),
]


def embed(
    client: httpclient.InferenceServerClient, texts: list[str], model: str = "text_embedding"
) -> tuple[np.ndarray, np.ndarray]:
    item = httpclient.InferInput("TEXT", [len(texts), 1], "BYTES")
    item.set_data_from_numpy(np.array([[t.encode("utf-8")] for t in texts], dtype=object))
    result = client.infer(model, [item])
    embedding, tokens = result.as_numpy("EMBEDDING"), result.as_numpy("TOKENS")
    assert embedding is not None and tokens is not None
    return embedding, tokens


def assert_close(
    texts: list[str], got: np.ndarray, reference: dict[str, tuple[np.ndarray, int]]
) -> None:
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    for text, vector in zip(texts, got, strict=True):
        cosine = float(vector @ reference[text][0]) / float(np.linalg.norm(vector))
        assert cosine >= 0.9999, (text[:40], cosine)
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def live(server: Served, model: str) -> dict[str, Any]:
    doc = httpx.get(f"http://{server.http_url}/v2/modelyard/stats").json()
    row: dict[str, Any] = next(m for m in doc["models"] if m["name"] == model)
    return row


@pytest.fixture
def client(server: Served) -> Iterator[httpclient.InferenceServerClient]:
    # closed when the test ends: one left to the collector may be closed from another
    # thread later, where its gevent pool cannot be, and fail whichever test runs then
    with httpclient.InferenceServerClient(server.http_url) as triton:
        yield triton


def test_texts_one_per_request_match_torch(
    client: httpclient.InferenceServerClient, reference: dict[str, tuple[np.ndarray, int]]
) -> None:
    for text in TEXTS:
        vector, tokens = embed(client, [text])
        assert_close([text], vector, reference)
        assert tokens.tolist() == [[reference[text][1]]]


def test_texts_of_every_length_in_one_request_come_back_in_order(
    client: httpclient.InferenceServerClient, reference: dict[str, tuple[np.ndarray, int]]
) -> None:
    texts = [*TEXTS, *reversed(SHORT_AND_LONG)]
    vectors, tokens = embed(client, texts)
    assert_close(texts, vectors, reference)
    assert tokens.ravel().tolist() == [reference[t][1] for t in texts]


def test_concurrent_requests_batch_by_tokens_padding_little(
    server: Served, reference: dict[str, tuple[np.ndarray, int]]
) -> None:
    requests = [SHORT_AND_LONG[i % len(SHORT_AND_LONG)] for i in range(96)]

    def one(text: str) -> np.ndarray:
        # closed in its own thread: the client's gevent pool cannot be closed from another
        with httpclient.InferenceServerClient(server.http_url) as client:
            return embed(client, [text])[0]

    before = live(server, "text_embedding")
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, requests))
    after = live(server, "text_embedding")
    assert_close(requests, np.concatenate(results), reference)
    rows = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    assert rows == len(requests)
    assert executions < len(requests)  # requests shared executions
    real = after["tokens"]["real"] - before["tokens"]["real"]
    padded = after["tokens"]["padded"] - before["tokens"]["padded"]
    assert real == sum(reference[text][1] for text in requests)  # each text at its length
    assert real <= padded <= after["tokens"]["max_padding_ratio"] * real


def test_the_bare_encoder_batches_requests_of_different_lengths_exactly(
    server: Served, repository: Path
) -> None:
    graph = ort.InferenceSession(
        str(repository / "minilm_onnx" / "1" / "model.onnx"),
        providers=["CPUExecutionProvider"],
    )
    rng = np.random.default_rng(0)
    requests = [rng.integers(1000, 20000, size=(1 + i % 2, 3 + i % 7)) for i in range(48)]

    def one(ids: np.ndarray) -> np.ndarray:
        with httpclient.InferenceServerClient(server.http_url) as client:
            items = []
            for name, values in (("input_ids", ids), ("attention_mask", np.ones_like(ids))):
                item = httpclient.InferInput(name, list(values.shape), "INT64")
                item.set_data_from_numpy(values.astype(np.int64))
                items.append(item)
            state = client.infer("minilm_onnx", items).as_numpy("last_hidden_state")
            assert state is not None
            return state

    before = live(server, "minilm_onnx")
    with ThreadPoolExecutor(16) as pool:
        states = list(pool.map(one, requests))
    after = live(server, "minilm_onnx")
    for ids, state in zip(requests, states, strict=True):
        alone = graph.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
        assert state.shape == (*ids.shape, 384)  # cut back to the request's own tokens
        assert np.abs(state - alone).max() < 1e-4
    assert after["execution_count"] - before["execution_count"] < len(requests)
    assert after["tokens"]["real"] - before["tokens"]["real"] == sum(r.size for r in requests)


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


def test_metadata_config_and_statistics(server: Served) -> None:
    base = f"http://{server.http_url}/v2/models"
    metadata = httpx.get(f"{base}/text_embedding").json()
    assert metadata["inputs"] == [{"name": "TEXT", "datatype": "BYTES", "shape": [-1, 1]}]
    assert [(o["name"], o["shape"]) for o in metadata["outputs"]] == [
        ("EMBEDDING", [-1, 384]),
        ("TOKENS", [-1, 1]),
    ]
    config = httpx.get(f"{base}/text_embedding/config").json()
    assert config["parameters"]["pooling"]["string_value"] == "mean"
    assert httpx.get(f"{base}/text_classifier").json()["platform"] == "ensemble"
    stats = httpx.get(f"{base}/text_embedding/stats").json()["model_stats"][0]
    assert stats["inference_stats"]["success"]["count"] >= 1
    tokens = live(server, "text_embedding")["tokens"]
    assert tokens["real"] > 0 and sum(tokens["padding_ratio"]["counts"]) >= 1
    metrics = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text
    assert 'modelyard_tokens_total{kind="real",model="text_embedding",version="1"}' in metrics


def test_openai_and_tei_clients_get_the_vectors_v2_gives(
    server: Served, client: httpclient.InferenceServerClient
) -> None:
    texts = ["hello world", LONG, "Größe"]
    vectors, tokens = embed(client, texts)
    with openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused") as caller:
        answer = caller.embeddings.create(model="text_embedding", input=texts)
        packed = caller.embeddings.create(
            model="text_embedding", input="hello world", encoding_format="base64"
        )
        many = caller.embeddings.create(model="text_embedding", input=["a text"] * 150)
    assert [d.index for d in answer.data] == [0, 1, 2]
    assert np.allclose([d.embedding for d in answer.data], vectors, atol=1e-6)
    assert answer.usage.prompt_tokens == int(tokens.sum())
    raw = packed.data[0].embedding
    assert isinstance(raw, str)
    assert np.allclose(np.frombuffer(base64.b64decode(raw), "<f4"), vectors[0], atol=1e-6)
    tei = httpx.post(f"http://{server.http_url}/embed", json={"inputs": texts})
    assert tei.status_code == 200
    assert np.allclose(tei.json(), vectors, atol=1e-6)
    assert len(many.data) == 150  # over max_batch_size 64: sent in three requests


def test_bad_embedding_calls_get_the_error_line_and_the_server_serves_on(
    server: Served, client: httpclient.InferenceServerClient
) -> None:
    url = f"http://{server.http_url}/v1"
    with openai.OpenAI(base_url=url, api_key="x", max_retries=0) as caller:
        with pytest.raises(openai.NotFoundError, match="Request for unknown model: 'nope'"):
            caller.embeddings.create(model="nope", input="text")
        with pytest.raises(openai.BadRequestError, match="does not embed text"):
            caller.embeddings.create(model="minilm_onnx", input="text")
        with pytest.raises(openai.BadRequestError, match="holds token ids"):
            caller.embeddings.create(model="text_embedding", input=[[101, 102]])
    item = httpclient.InferInput("TEXT", [1, 1], "BYTES")
    item.set_data_from_numpy(np.array([[b"\xff\xfe not text"]], dtype=object))
    with pytest.raises(Exception, match="is not UTF-8 text") as error:
        client.infer("text_embedding", [item])
    assert "rule=model-server/text" in str(error.value)
    tei = httpx.post(f"http://{server.http_url}/embed", json={"inputs": [1, 2]})
    assert tei.status_code == 422 and tei.json()["error_type"] == "Validation"
    assert embed(client, ["still served"])[0].shape == (1, 384)


CACHED_CONFIG_EXTRA = """
parameters { key: "embedding_cache_size" value { string_value: "1M" } }
"""


@pytest.fixture
def cached_server(repository: Path, tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    """A text model with an embedding cache, which takes its pooling from the version's
    sentence-transformers files, in explicit model control."""
    target = tmp_path / "models"
    model_dir = target / "cached"
    (model_dir / "1").mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        (model_dir / "1" / name).hardlink_to(repository / "text_embedding" / "1" / name)
    config = (repository / "text_embedding" / "config.pbtxt").read_text()
    config = config.replace('name: "text_embedding"', 'name: "cached"')
    config = "\n".join(line for line in config.splitlines() if '"pooling"' not in line)
    config = config.replace("parameters {", CACHED_CONFIG_EXTRA + "parameters {", 1)
    (model_dir / "config.pbtxt").write_text(config)
    with server_in_process(
        target, "--model-control-mode", "explicit", "--load-model", "cached"
    ) as server:
        yield server, model_dir


def test_the_embedding_cache_answers_repeated_texts_and_never_across_versions(
    cached_server: tuple[Served, Path],
) -> None:
    server, model_dir = cached_server
    texts = ["hello world", "A cat sat on the mat."]
    with httpclient.InferenceServerClient(server.http_url) as client:
        first, _ = embed(client, texts, "cached")
        again, tokens = embed(client, [texts[1], texts[0], "new text"], "cached")
        assert np.array_equal(again[:2], first[::-1]) and tokens[0, 0] == 9
        cache = live(server, "cached")["tokens"]["embedding_cache"]
        assert (cache["hits"], cache["misses"], cache["entries"]) == (2, 3, 3)
        # version 2: the same weights, pooled from the first token (its own settings file)
        shutil.copytree(model_dir / "1", model_dir / "2", copy_function=_link)
        (model_dir / "2" / "1_Pooling").mkdir()
        (model_dir / "2" / "1_Pooling" / "config.json").write_text(
            '{"pooling_mode_cls_token": true}'
        )
        load = httpx.post(f"http://{server.http_url}/v2/repository/models/cached/load")
        assert load.status_code == 200, load.text
        wait_until(lambda: live(server, "cached")["version"] == "2")
        swapped, _ = embed(client, texts, "cached")
    assert float(np.min((swapped * first).sum(axis=1))) < 0.99  # CLS, not the cached means
    cache = live(server, "cached")["tokens"]["embedding_cache"]
    assert (cache["hits"], cache["misses"]) == (0, 2)


def _link(source: str, destination: str) -> None:
    Path(destination).hardlink_to(source)


@pytest.fixture(scope="module")
def governed(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    service = tmp_path_factory.mktemp("governed") / "service.yaml"
    service.write_text(
        "service: com.example.embeddings\n"
        "auth:\n"
        "  enabled: true\n"
        "  principals:\n"
        "    caller:\n"
        f'      bearer_tokens: ["{hash_secret(KEY)}"]\n'
        '      allow: {infer: ["text_embedding"], metadata: ["*"]}\n'
        "limits:\n"
        "  infer:\n"
        "    instance_qps: 2\n"
        "    burst_seconds: 1\n"
    )
    with server_in_process(
        repository,
        "--model-control-mode", "explicit", "--load-model", "text_embedding",
        "--service-config", str(service), "--embedding-model", "text_embedding",
    ) as server:  # fmt: skip
        yield server


def test_embedding_calls_go_through_governance(governed: Served) -> None:
    base = f"http://{governed.http_url}"
    with (
        openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0) as stranger,
        pytest.raises(openai.AuthenticationError, match="rule=auth"),
    ):
        stranger.embeddings.create(model="text_embedding", input="text")
    with (
        openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0) as caller,
        pytest.raises(openai.RateLimitError) as limited,  # 2 calls a second, no more
    ):
        for _ in range(10):
            caller.embeddings.create(model="text_embedding", input="text")
    refused = limited.value.body
    assert isinstance(refused, dict)
    assert "rule=ratelimit/instance-qps" in refused["message"]
    assert "change: limits.infer.instance_qps" in refused["message"]
    assert limited.value.response.headers["retry-after"]
    tei = httpx.post(f"{base}/embed", json={"inputs": "x"}, headers={"authorization": "Bearer no"})
    assert tei.status_code == 401 and "rule=auth" in tei.json()["error"]


def test_embedding_calls_reach_a_text_model_through_the_gateway(
    server: Served, client: httpclient.InferenceServerClient, tmp_path: Path
) -> None:
    service = "com.example.embeddings"
    registry_url = f"embedded://{tmp_path / 'registry.db'}"
    registry = open_registry(registry_url)
    entry = Instance(
        service=service,
        group="a",
        instance_id="text-1",
        http=server.http_url,
        grpc=server.grpc_url,
        models={"text_embedding": {"1": "READY"}},
    )
    asyncio.run(registry.register(entry, ttl=300))
    asyncio.run(registry.aclose())
    (http_port,) = free_ports(1)
    with (tmp_path / "gateway.log").open("wb") as log:
        gateway = subprocess.Popen(
            [
                sys.executable, "-m", "modelyard.cli.main", "gateway", "--service", service,
                "--registry", registry_url, "--http-port", str(http_port), "--grpc-port", "-1",
                "--embedding-model", "text_embedding",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
    base = f"http://127.0.0.1:{http_port}"
    try:

        def configured() -> bool:
            assert gateway.poll() is None, (tmp_path / "gateway.log").read_text()
            try:
                url = f"{base}/v2/models/text_embedding/config"
                return httpx.get(url, timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(configured, timeout=60)
        texts = ["through the gateway", LONG]
        vectors, tokens = embed(client, texts)
        with openai.OpenAI(base_url=f"{base}/v1", api_key="unused") as caller:
            answer = caller.embeddings.create(model="text_embedding", input=texts)
        tei = httpx.post(f"{base}/embed", json={"inputs": texts})
    finally:
        gateway.terminate()
        gateway.wait(15)
    assert np.allclose([d.embedding for d in answer.data], vectors, atol=1e-6)
    assert answer.usage.prompt_tokens == int(tokens.sum())
    assert tei.status_code == 200 and np.allclose(tei.json(), vectors, atol=1e-6)


TORCH_ENCODER_CONFIG = """
name: "torch_encoder"
platform: "pytorch_libtorch"
max_batch_size: 16
dynamic_batching { max_queue_delay_microseconds: 20000 }
input [
  { name: "INPUT__0" data_type: TYPE_INT64 dims: [-1] },
  { name: "INPUT__1" data_type: TYPE_INT64 dims: [-1] }
]
output [
  { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [-1, 4] },
  { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [4] }
]
parameters { key: "max_batch_tokens" value { string_value: "256" } }
"""


def test_a_torchscript_encoder_declared_in_its_config_is_batched_by_tokens(
    tmp_path: Path,
) -> None:
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.embedding = torch.nn.Embedding(100, 4)

        def forward(
            self, ids: torch.Tensor, mask: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor]:
            weights = mask.unsqueeze(-1).float()
            states = self.embedding(ids) * weights
            mean = states.sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
            return states + mean.unsqueeze(1), mean

    model_dir = tmp_path / "models" / "torch_encoder"
    (model_dir / "1").mkdir(parents=True)
    encoder = Encoder().eval()
    torch.jit.save(torch.jit.script(encoder), str(model_dir / "1" / "model.pt"))
    (model_dir / "config.pbtxt").write_text(TORCH_ENCODER_CONFIG)
    rng = np.random.default_rng(1)
    requests = [rng.integers(1, 100, size=(1, 2 + i % 6)) for i in range(24)]

    def one(url: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with httpclient.InferenceServerClient(url) as client:
            items = []
            for name, values in (("INPUT__0", ids), ("INPUT__1", np.ones_like(ids))):
                item = httpclient.InferInput(name, list(values.shape), "INT64")
                item.set_data_from_numpy(values.astype(np.int64))
                items.append(item)
            result = client.infer("torch_encoder", items)
            states, mean = result.as_numpy("OUTPUT__0"), result.as_numpy("OUTPUT__1")
            assert states is not None and mean is not None
            return states, mean

    with server_in_process(tmp_path / "models") as server:
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda ids: one(server.http_url, ids), requests))
        stats = live(server, "torch_encoder")
    with torch.no_grad():
        for ids, (states, mean) in zip(requests, answers, strict=True):
            want_states, want_mean = encoder(torch.from_numpy(ids), torch.ones(ids.shape).long())
            assert states.shape == (1, ids.shape[1], 4)
            assert np.allclose(states, want_states.numpy(), atol=1e-6)
            assert np.allclose(mean, want_mean.numpy(), atol=1e-6)
    assert stats["execution_count"] < len(requests)  # lengths 2 to 7 shared executions
    assert stats["tokens"]["real"] == sum(ids.size for ids in requests)
