"""The accuracy report of a converted text model: its embeddings against the original's.

A text model (server/text_encoding.py) answers with pooled vectors, so its variant is
judged as its callers would judge it: both versions are loaded as the server loads them
and embed the same texts, and each text's cosine between the two vectors is reported
(the least and the mean), with the texts per second of each, timed alternately in the
same process on batches of texts of one length, as the server batches them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from modelyard.modelfiles.config import read_model_config
from modelyard.server.model_version import ModelVersion, load_model_version
from modelyard.server.token_batching import TokenBatching


def _load(model_dir: Path, version: int) -> tuple[ModelVersion, TokenBatching]:
    loaded = load_model_version(model_dir, version, read_model_config(model_dir), "onnxruntime")
    tokens = getattr(loaded.scheduler, "tokens", None)
    if tokens is None or tokens.text is None:
        loaded.drain_and_unload()
        raise ValueError(f"{model_dir.name} version {version} is not a text model")
    return loaded, tokens


def _batches(texts: list[str], tokens: TokenBatching, size: int = 16) -> list[list[int]]:
    """Indexes of the texts in batches of similar length (what the queue would form)."""
    assert tokens.text is not None
    lengths = [len(row["input_ids"]) for row in tokens.text.encode(_column(texts))]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    return [order[i : i + size] for i in range(0, len(order), size)]


def _column(texts: list[str]) -> dict[str, np.ndarray]:
    column = np.empty((len(texts), 1), dtype=object)
    column[:, 0] = [text.encode("utf-8") for text in texts]
    return {"TEXT": column}


def _embed(loaded: ModelVersion, tokens: TokenBatching, texts: list[str]) -> np.ndarray:
    assert tokens.text is not None
    output = tokens.text.embedding_output
    inputs = {tokens.text.text_inputs[0]: _column(texts)["TEXT"]}
    return tokens.execute_unqueued(loaded.engines[0], inputs, [output], len(texts))[output]


def text_accuracy_report(
    model_dir: Path, original: int, converted: int, texts: list[str], rounds: int = 2
) -> dict[str, Any]:
    before, tokens = _load(model_dir, original)
    after, converted_tokens = _load(model_dir, converted)
    try:
        batches = _batches(texts, tokens)
        vectors = {}
        seconds = {original: 0.0, converted: 0.0}
        for _ in range(rounds):  # alternate, so drift on a noisy machine hits both
            for version, loaded, batching in (
                (original, before, tokens),
                (converted, after, converted_tokens),
            ):
                start = time.perf_counter()
                found = np.zeros((len(texts), 0), np.float32)
                for batch in batches:
                    rows = _embed(loaded, batching, [texts[i] for i in batch])
                    if found.shape[1] == 0:
                        found = np.zeros((len(texts), rows.shape[1]), np.float32)
                    found[batch] = rows
                seconds[version] += time.perf_counter() - start
                vectors[version] = found
    finally:
        before.drain_and_unload()
        after.drain_and_unload()
    a, b = vectors[original], vectors[converted]
    cosines = (a * b).sum(axis=1) / np.maximum(
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12
    )
    worst = int(np.argmin(cosines))
    return {
        "texts": len(texts),
        "cosine": {"min": float(cosines.min()), "mean": float(cosines.mean())},
        "least_alike": texts[worst][:120],
        "texts_per_s": {
            "original": rounds * len(texts) / seconds[original],
            "converted": rounds * len(texts) / seconds[converted],
        },
        "speedup": seconds[original] / seconds[converted],
    }


def format_text_report(report: dict[str, Any], original: Path, converted: Path) -> str:
    speed = report["texts_per_s"]
    return "\n".join(
        [
            f"{converted} vs {original} on {report['texts']} texts",
            f"  cosine of the embeddings: least {report['cosine']['min']:.4f}, "
            f"mean {report['cosine']['mean']:.4f} (least alike: {report['least_alike']!r})",
            f"  throughput: {speed['original']:.1f} -> {speed['converted']:.1f} texts/s "
            f"({report['speedup']:.2f}x)",
        ]
    )
