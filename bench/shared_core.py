"""Batches on a shared core: what a compute-bound model's batcher forms, measured served.

    python bench/shared_core.py [--seconds 5] [--conc 1,8,32,64] [--out bench/out/shared_core.json]

Needs `wrk` (Debian package). One `modelyard serve` with the example mlp_onnx
(256→1024→1024→10) configured as `../shared/peerbench` serves its models
(`max_batch_size: 32`, `max_queue_delay_microseconds: 5000`, one instance, one
intra-op thread) is pinned to core 0, so its event loop and its instance thread
share one core; wrk (one thread) on core 1 sends the same one-row V2 JSON request
at each concurrency. Per concurrency: req/s, p50/p99, and the batch sizes the
server formed, read from its statistics extension (`batch_stats`) before and after.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import Server, cpu_model, cpu_times, post_script, steal_share, wrk  # noqa: E402

from modelyard.examples.build import build_mlp_onnx  # noqa: E402
from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

CONFIG = """platform: "onnxruntime_onnx"
max_batch_size: 32
input [{ name: "input" data_type: TYPE_FP32 dims: [256] }]
output [{ name: "output" data_type: TYPE_FP32 dims: [10] }]
dynamic_batching { max_queue_delay_microseconds: 5000 }
instance_group [{ count: 1 kind: KIND_CPU }]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
"""


def batch_counts(port: int) -> dict[int, int]:
    """Executions so far by batch size (the statistics extension's batch_stats)."""
    doc = httpx.get(f"http://127.0.0.1:{port}/v2/models/mlp_onnx/stats").json()
    return {
        int(b["batch_size"]): int(b["compute_infer"]["count"])
        for b in doc["model_stats"][0].get("batch_stats", [])
    }


def histogram(before: dict[int, int], after: dict[int, int]) -> dict[int, int]:
    return {k: n - before.get(k, 0) for k, n in sorted(after.items()) if n - before.get(k, 0)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--conc", default="1,8,32,64")
    parser.add_argument("--out", type=Path, default=Path("bench/out/shared_core.json"))
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("needs wrk (apt-get install wrk)")
    work = Path(tempfile.mkdtemp(prefix="shared-core-"))
    repo = work / "repo"
    build_mlp_onnx(repo, seed=0)
    (repo / "mlp_onnx" / "config.pbtxt").write_text(CONFIG)
    row = np.random.default_rng(0).standard_normal((1, 256)).astype(np.float32)
    body = work / "body.json"
    body.write_text(
        json.dumps(
            {"inputs": [{"name": "input", "shape": [1, 256], "datatype": "FP32",
                         "data": row.ravel().tolist()}]}
        )
    )  # fmt: skip
    script = work / "post.lua"
    script.write_text(post_script(body, {"Content-Type": "application/json"}))
    port = free_port()
    server = Server(
        serve_command(repo, http_port=port),
        port, "/v2/models/mlp_onnx/ready",
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v2/models/mlp_onnx/infer"
    points: dict[str, Any] = {}
    cpu_before = cpu_times()
    try:
        wrk(url, script, 8, 1)  # warm-up
        for c in (int(x) for x in args.conc.split(",")):
            before = batch_counts(port)
            point: dict[str, Any] = wrk(url, script, c, args.seconds)
            hist = histogram(before, batch_counts(port))
            executions = sum(hist.values())
            point["executions"] = executions
            point["mean_batch"] = sum(k * n for k, n in hist.items()) / max(1, executions)
            point["median_batch"] = statistics.median(
                [k for k, n in hist.items() for _ in range(n)] or [0]
            )
            point["batch_histogram"] = hist
            points[str(c)] = point
            print(
                f"c={c:3d}  {point['requests_per_s']:8.0f} req/s  p50 {point['p50_ms']:.2f} ms"
                f"  p99 {point['p99_ms']:.2f} ms  mean batch {point['mean_batch']:.1f}"
                f"  ({executions} executions)"
            )
    finally:
        server.stop()
    report = {
        "cpu": cpu_model(),
        "steal_share": steal_share(cpu_before, cpu_times()),
        "seconds": args.seconds,
        "points": points,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
