"""In-process engine throughput vs served throughput, in one run.

    python bench/engine_vs_served.py [--seconds 5] [--models tiny_onnx,mlp_onnx]

For each example ONNX model: onnxruntime called in-process with one-row inputs,
then the same rows through a real ``modelyard serve`` process with
``tritonclient.http`` at concurrency 1 and 16 (binary tensors). The server and
the load run on the same machine, so the served numbers include the client's
own cost; the ratio, not the absolute number, is the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import onnxruntime as ort
import tritonclient.http as httpclient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modelyard.examples.build import build_example_repository, example_inputs
from tests.support.servers import running_server


def in_process(repository: Path, model: str, seconds: float) -> dict[str, float]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(repository / model / "1" / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    feed = example_inputs(model, 1)
    latencies = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        session.run(None, feed)
        latencies.append(time.perf_counter() - start)
    return _summary(latencies, seconds)


def served(url: str, model: str, concurrency: int, seconds: float) -> dict[str, float]:
    inputs = example_inputs(model, 1)
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def worker() -> None:
        nonlocal errors
        client = httpclient.InferenceServerClient(url)
        wire = []
        for name, array in inputs.items():
            item = httpclient.InferInput(name, list(array.shape), "FP32")
            item.set_data_from_numpy(array, binary_data=True)
            wire.append(item)
        mine = []
        while time.perf_counter() < end:
            start = time.perf_counter()
            try:
                client.infer(model, wire)
            except Exception:
                with lock:
                    errors += 1
                continue
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = _summary(latencies, seconds)
    result["errors"] = errors
    return result


def _summary(latencies: list[float], seconds: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "requests_per_s": len(ordered) / seconds,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[int(len(ordered) * 0.99) - 1] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--models", default="tiny_onnx,mlp_onnx")
    parser.add_argument("--out", type=Path, default=Path("bench/out/engine_vs_served.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "models"
        build_example_repository(repository, text_models=False)
        report: dict[str, object] = {
            "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_version()}",
            "results": {},
        }
        results: dict[str, dict[str, object]] = {}
        with running_server(repository, Path(tmp)) as server:
            for model in args.models.split(","):
                row: dict[str, object] = {"in_process": in_process(repository, model, args.seconds)}
                for concurrency in (1, 16):
                    row[f"served_c{concurrency}"] = served(
                        server.http_url, model, concurrency, args.seconds
                    )
                results[model] = row
        report["results"] = results
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{'model':<12} {'mode':<12} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'ratio':>6}")
    for model, row in results.items():
        base = row["in_process"]["requests_per_s"]  # type: ignore[index]
        for mode, summary in row.items():
            rps = summary["requests_per_s"]  # type: ignore[index]
            print(
                f"{model:<12} {mode:<12} {rps:>9.0f} {summary['p50_ms']:>8.2f} "  # type: ignore[index]
                f"{summary['p99_ms']:>8.2f} {rps / base:>6.2f}"  # type: ignore[index]
            )


if __name__ == "__main__":
    main()
