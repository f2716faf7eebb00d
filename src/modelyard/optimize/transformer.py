"""onnxruntime's transformer optimisations for a BERT-class encoder, kept only when exact
and faster.

``onnxruntime.transformers.optimizer`` rewrites an exported encoder's attention, layer
normalisation and GELU subgraphs into fused operators (``Attention``,
``SkipLayerNormalization``, ``EmbedLayerNormalization``, ``BiasGelu``), which compute the
same function in fewer passes over memory. The rewrite is checked here against the
original graph on the caller's inputs (token states compared where the attention mask
keeps them) and written only when every difference is within the tolerance.

Faster is not a given: onnxruntime's own session optimisations already fuse layer
normalisation, GELU and the attention's matrix products of an export, and on a CPU
without AVX-512 the fused ``Attention`` kernel can be slower than that. ``faster`` times
the two on the same inputs, alternately, and says which to serve.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np


def _session(path: Path) -> object:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _run(path: Path, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(_session(path).run(None, feed))  # type: ignore[attr-defined]


def faster(first: Path, second: Path, feeds: list[dict[str, np.ndarray]], rounds: int = 5) -> Path:
    """The graph that computes ``feeds`` sooner on one thread: each round times both in
    turn, so a machine's drift hits both; the best round of each counts."""
    sessions = {path: _session(path) for path in (first, second)}
    best = dict.fromkeys(sessions, float("inf"))
    for _ in range(rounds):
        for path, session in sessions.items():
            start = time.perf_counter()
            for feed in feeds:
                session.run(None, feed)  # type: ignore[attr-defined]
            best[path] = min(best[path], time.perf_counter() - start)
    return first if best[first] <= best[second] else second


def largest_difference(
    expected: list[np.ndarray], got: list[np.ndarray], mask: np.ndarray | None
) -> float:
    """The largest absolute difference between two graphs' outputs, over the positions the
    attention mask keeps for outputs with a token axis."""
    worst = 0.0
    for want, have in zip(expected, got, strict=True):
        difference = np.abs(want.astype(np.float64) - have.astype(np.float64))
        if mask is not None and difference.shape[:2] == mask.shape:
            difference = difference[mask.astype(bool)]
        worst = max(worst, float(difference.max(initial=0.0)))
    return worst


def fuse_attention(
    source: Path,
    target: Path,
    *,
    num_heads: int,
    hidden_size: int,
    check: dict[str, np.ndarray],
    tolerance: float = 1e-4,
) -> float:
    """Write the fused graph of ``source`` to ``target``; returns the largest difference.

    Raises ``ValueError`` (and writes nothing) when the fused graph's outputs on ``check``
    differ from the original's by more than ``tolerance``.
    """
    from onnxruntime.transformers import optimizer

    model = optimizer.optimize_model(
        str(source), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=0
    )
    partial = target.with_name(f"{target.name}.{os.getpid()}.fused")
    model.save_model_to_file(str(partial))
    try:
        difference = largest_difference(
            _run(source, check), _run(partial, check), check.get("attention_mask")
        )
        if difference > tolerance:
            raise ValueError(
                f"the fused graph differs from {source.name} by {difference:.3g} "
                f"(tolerance {tolerance:g})"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return difference
