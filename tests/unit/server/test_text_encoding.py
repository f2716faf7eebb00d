"""Text models: the tokenizer before the encoder, pooling after it, and their settings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines.base import Signature, TensorSpec
from modelyard.errors import ModelServerError, ModelyardError
from modelyard.server.embedding_cache import EmbeddingCache, parse_size, text_key
from modelyard.server.text_encoding import is_text_model, load_text_encoding, pool

GRAPH = Signature(
    inputs=[
        TensorSpec("input_ids", "INT64", (-1, -1)),
        TensorSpec("attention_mask", "INT64", (-1, -1)),
        TensorSpec("token_type_ids", "INT64", (-1, -1)),
    ],
    outputs=[TensorSpec("last_hidden_state", "FP32", (-1, -1, 384))],
)
TEXT_CONFIG = """
name: "embed"
max_batch_size: 8
input { name: "TEXT" data_type: TYPE_STRING dims: [1] }
output { name: "EMBEDDING" data_type: TYPE_FP32 dims: [384] }
"""


@pytest.fixture
def version_dir(tmp_path: Path) -> Path:
    from modelyard.examples.text import minilm_dir

    target = tmp_path / "embed" / "1"
    target.mkdir(parents=True)
    shutil.copyfile(minilm_dir() / "tokenizer.json", target / "tokenizer.json")
    return target


def config(extra: str = "") -> mc.ModelConfig:
    return text_format.Parse(TEXT_CONFIG + extra, mc.ModelConfig())


def parameter(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}'


def test_mean_cls_and_last_pooling_read_only_each_rows_own_tokens() -> None:
    states = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    lengths = np.array([2, 4])
    assert np.allclose(pool(states, lengths, "mean")[0], states[0, :2].mean(axis=0))
    assert np.allclose(pool(states, lengths, "mean")[1], states[1].mean(axis=0))
    assert np.array_equal(pool(states, lengths, "cls"), states[:, 0])
    assert np.array_equal(pool(states, lengths, "last")[0], states[0, 1])
    assert np.array_equal(pool(states, lengths, "last")[1], states[1, 3])


def test_a_tokenizer_beside_the_graph_makes_a_text_model_with_the_callers_view(
    version_dir: Path,
) -> None:
    assert is_text_model(version_dir, config(), GRAPH)
    text = load_text_encoding("embed", 1, version_dir, config(), GRAPH)
    assert [(s.name, s.datatype) for s in text.signature.inputs] == [("TEXT", "BYTES")]
    assert [(s.name, s.dims) for s in text.signature.outputs] == [("EMBEDDING", (-1, 384))]
    assert text.pooling == "mean" and text.normalize and text.pooled_from == "last_hidden_state"
    rows = text.encode({"TEXT": np.array([[b"hello world"], [b""]], dtype=object)})
    assert rows[0]["input_ids"].tolist() == [101, 7592, 2088, 102]
    assert rows[0]["attention_mask"].tolist() == [1, 1, 1, 1]
    assert rows[0]["token_type_ids"].tolist() == [0, 0, 0, 0]
    assert rows[1]["input_ids"].tolist() == [101, 102]


def test_texts_are_truncated_at_the_models_length_and_read_within_a_bound(
    version_dir: Path,
) -> None:
    text = load_text_encoding(
        "embed", 1, version_dir, config(parameter("max_sequence_length", "8")), GRAPH
    )
    huge = ("word " * 200_000).encode()  # a megabyte: read only as far as 8 tokens may reach
    (row,) = text.encode({"TEXT": np.array([[huge]], dtype=object)})
    assert len(row["input_ids"]) == 8
    cut = b"a" + "é ".encode() * 300  # a character cut at the byte limit: left out, not refused
    assert cut[: 8 * 64].decode("utf-8", "replace").endswith("\ufffd")
    (row,) = text.encode({"TEXT": np.array([[cut]], dtype=object)})
    assert len(row["input_ids"]) == 8


def test_a_text_that_is_not_utf8_is_refused_with_its_row(version_dir: Path) -> None:
    text = load_text_encoding("embed", 1, version_dir, config(), GRAPH)
    with pytest.raises(ModelServerError, match="row 1 is not UTF-8") as error:
        text.encode({"TEXT": np.array([[b"fine"], [b"\xff\xfe bad"]], dtype=object)})
    assert "rule=model-server/text" in error.value.line()


def test_sentence_transformers_settings_beside_the_model_are_its_defaults(
    version_dir: Path,
) -> None:
    (version_dir / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    (version_dir / "1_Pooling").mkdir()
    (version_dir / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    (version_dir / "modules.json").write_text(json.dumps([{"type": "x.Transformer"}]))
    text = load_text_encoding("embed", 1, version_dir, config(), GRAPH)
    assert (text.max_length, text.pooling, text.normalize) == (64, "cls", False)
    asked = config(parameter("pooling", "last") + parameter("normalize", "true"))
    text = load_text_encoding("embed", 1, version_dir, asked, GRAPH)
    assert (text.pooling, text.normalize) == ("last", True)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (parameter("pooling", "max"), "pooling 'max' is not one of"),
        (parameter("tokenizer", "../tokenizer.json"), "is not a file name"),
        (parameter("tokenizer", "absent.json"), "no tokenizer file absent.json"),
        (parameter("max_sequence_length", "0"), "max_sequence_length '0'"),
        ('input { name: "TOKENS" data_type: TYPE_INT64 dims: [1] }', "takes one BYTES input"),
    ],
)
def test_settings_a_text_model_cannot_serve_are_refused_at_load(
    version_dir: Path, extra: str, words: str
) -> None:
    with pytest.raises(ModelyardError, match=words) as error:
        load_text_encoding("embed", 1, version_dir, config(extra), GRAPH)
    assert error.value.line().startswith("failed to load 'embed' version 1")


def test_a_graph_input_no_tokenizer_fills_is_refused(version_dir: Path) -> None:
    graph = Signature(
        inputs=[*GRAPH.inputs, TensorSpec("pixel_values", "FP32", (-1, 3))],
        outputs=GRAPH.outputs,
    )
    with pytest.raises(ModelServerError, match="'pixel_values' is not one a tokenizer fills"):
        load_text_encoding("embed", 1, version_dir, config(), graph)


def test_the_embedding_cache_keeps_the_least_recently_used_within_its_budget() -> None:
    one = {"EMBEDDING": np.ones((1, 100), np.float32)}  # 400 bytes and the overhead
    cache = EmbeddingCache(budget_bytes=2 * (400 + 200))
    keys = [text_key([f"text {i}".encode()]) for i in range(3)]
    cache.put(keys[0], one)
    cache.put(keys[1], one)
    assert cache.get(keys[0]) is not None  # now the most recently used
    cache.put(keys[2], one)
    assert cache.get(keys[1]) is None and cache.get(keys[0]) is not None
    assert (cache.hits, cache.misses, cache.evictions, len(cache)) == (2, 1, 1, 2)
    assert cache.bytes <= cache.budget_bytes


def test_a_cached_answer_is_a_copy_and_text_pairs_keep_apart() -> None:
    cache = EmbeddingCache(budget_bytes=1 << 20)
    batch = np.zeros((4, 8), np.float32)
    cache.put(text_key([b"a"]), {"EMBEDDING": batch[1:2]})
    batch[1] = 5.0
    kept = cache.get(text_key([b"a"]))
    assert kept is not None and kept["EMBEDDING"].sum() == 0
    assert text_key([b"ab", b"c"]) != text_key([b"a", b"bc"])


@pytest.mark.parametrize(
    ("text", "size"), [("64M", 64 << 20), ("1GiB", 1 << 30), ("512", 512), ("2 kb", 2048)]
)
def test_cache_sizes_read_as_people_write_them(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_a_size_that_is_none_reads_as_none() -> None:
    assert parse_size("lots") is None and parse_size("-5M") is None


def test_a_model_of_two_texts_tokenizes_them_as_a_pair(version_dir: Path) -> None:
    pair = text_format.Parse(
        """
        name: "rerank"
        max_batch_size: 8
        input { name: "QUERY" data_type: TYPE_STRING dims: [1] }
        input { name: "PASSAGE" data_type: TYPE_STRING dims: [1] }
        """
        + parameter("pooling", "cls"),
        mc.ModelConfig(),
    )
    text = load_text_encoding("rerank", 1, version_dir, pair, GRAPH)
    assert [s.name for s in text.signature.inputs] == ["QUERY", "PASSAGE"]
    (row,) = text.encode(
        {
            "QUERY": np.array([[b"hello"]], dtype=object),
            "PASSAGE": np.array([[b"big world"]], dtype=object),
        }
    )
    assert row["input_ids"].tolist() == [101, 7592, 102, 2502, 2088, 102]
    assert row["token_type_ids"].tolist() == [0, 0, 0, 1, 1, 1]
