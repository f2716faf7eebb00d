"""The accuracy report of a converted model against its original.

For every output: max and mean absolute error over the evaluation rows, and,
for 2-D outputs with more than one column (class scores), top-1 agreement.
Also the file size change and the in-process throughput of both at one batch
size, measured alternately in the same process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def compare_outputs(
    original: dict[str, np.ndarray], converted: dict[str, np.ndarray]
) -> dict[str, dict[str, float]]:
    report: dict[str, dict[str, float]] = {}
    for name, expected in original.items():
        got = converted[name]
        row: dict[str, float] = {}
        if np.issubdtype(expected.dtype, np.floating):
            diff = np.abs(expected.astype(np.float64) - got.astype(np.float64))
            row["max_abs_error"] = float(diff.max())
            row["mean_abs_error"] = float(diff.mean())
        else:
            row["exact_match"] = float(np.mean(expected == got))
        if (
            expected.ndim == 2
            and expected.shape[1] > 1
            and np.issubdtype(expected.dtype, np.floating)
        ):
            row["top1_agreement"] = float(np.mean(expected.argmax(1) == got.argmax(1)))
        report[name] = row
    return report


def _rows_per_second(
    session: ort.InferenceSession, feed: dict[str, np.ndarray], seconds: float
) -> float:
    rows = len(next(iter(feed.values())))
    for _ in range(5):
        session.run(None, feed)
    count = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        session.run(None, feed)
        count += 1
    return count * rows / seconds


def accuracy_report(
    original: Path,
    converted: Path,
    data: dict[str, np.ndarray],
    *,
    batch: int = 32,
    seconds: float = 1.0,
) -> dict[str, Any]:
    before, after = _session(original), _session(converted)
    names = [o.name for o in before.get_outputs()]
    expected = dict(zip(names, before.run(names, data), strict=True))
    got = dict(zip(names, after.run(names, data), strict=True))
    rows = min(len(v) for v in data.values())
    feed = {k: np.resize(v, (batch, *v.shape[1:])) for k, v in data.items()}
    speed_before = speed_after = 0.0
    for _ in range(2):  # alternate, so drift on a noisy machine hits both
        speed_before += _rows_per_second(before, feed, seconds / 2)
        speed_after += _rows_per_second(after, feed, seconds / 2)
    return {
        "rows": rows,
        "outputs": compare_outputs(expected, got),
        "size_bytes": {"original": original.stat().st_size, "converted": converted.stat().st_size},
        "size_ratio": converted.stat().st_size / original.stat().st_size,
        "rows_per_s": {"original": speed_before / 2, "converted": speed_after / 2, "batch": batch},
        "speedup": speed_after / speed_before if speed_before else None,
    }


def format_report(report: dict[str, Any], original: Path, converted: Path) -> str:
    lines = [f"{converted} vs {original} on {report['rows']} rows"]
    for name, row in report["outputs"].items():
        parts = [f"{k} {v:.6g}" for k, v in row.items()]
        lines.append(f"  output {name}: " + ", ".join(parts))
    size = report["size_bytes"]
    lines.append(
        f"  size {size['original'] / 1e6:.2f} MB -> {size['converted'] / 1e6:.2f} MB "
        f"({report['size_ratio']:.2f}x)"
    )
    speed = report["rows_per_s"]
    lines.append(
        f"  throughput at batch {speed['batch']}: {speed['original']:.0f} -> "
        f"{speed['converted']:.0f} rows/s ({report['speedup']:.2f}x)"
    )
    return "\n".join(lines)
