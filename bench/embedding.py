"""MiniLM embeddings per second: the served text_embedding ensemble vs the same pipeline in-process.

    python bench/embedding.py [--seconds 5]

In-process, the three steps (tokenizer, onnxruntime encoder, pooling) run
through the same engines the server loads: one text per call, then 32 texts
per call (what a caller that batches by hand gets). Served, a real
``modelyard serve`` process answers ``tritonclient.http`` clients sending one
text per request at concurrency 1 and 32, so batching is the server's. Texts
are the classifier's template sentences (10-15 tokens, the 16-token bucket).
Client and server share the machine: read the ratios, not the absolute numbers.
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

import numpy as np
import tritonclient.http as httpclient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modelyard.examples.text import EmbeddingPipeline, build_text_models, topic_sentences
from tests.support.servers import running_server

TEXTS = topic_sentences()[0]


def in_process(pipeline: EmbeddingPipeline, batch: int, seconds: float) -> dict[str, float]:
    latencies = []
    done = 0
    start_all = time.perf_counter()
    end = start_all + seconds
    while time.perf_counter() < end:
        texts = [TEXTS[(done + i) % len(TEXTS)] for i in range(batch)]
        start = time.perf_counter()
        pipeline.embed(texts)
        latencies.append(time.perf_counter() - start)
        done += batch
    return _summary(latencies, done, time.perf_counter() - start_all)


def served(url: str, concurrency: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def worker(offset: int) -> None:
        nonlocal errors
        client = httpclient.InferenceServerClient(url)
        mine = []
        count = offset
        while time.perf_counter() < end:
            item = httpclient.InferInput("TEXT", [1, 1], "BYTES")
            text = TEXTS[count % len(TEXTS)].encode()
            item.set_data_from_numpy(np.array([[text]], dtype=object), binary_data=True)
            count += 1
            start = time.perf_counter()
            try:
                client.infer("text_embedding", [item])
            except Exception:
                with lock:
                    errors += 1
                continue
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i * 7,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = _summary(latencies, len(latencies), time.perf_counter() - started)
    result["errors"] = errors
    return result


def _summary(latencies: list[float], embeddings: int, elapsed: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "embeddings_per_s": embeddings / elapsed,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=Path("bench/out/embedding.json"))
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path("bench/out/minilm-cache"),
        help="where the exported ONNX file is kept between runs",
    )
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "models"
        build_text_models(repository, seed=0, cache_dir=args.cache_dir)
        pipeline = EmbeddingPipeline(repository)
        pipeline.embed(TEXTS[:32])  # warm up
        results["in_process_1_per_call"] = in_process(pipeline, 1, args.seconds)
        results["in_process_32_per_call"] = in_process(pipeline, 32, args.seconds)
        pipeline.close()
        with running_server(repository, Path(tmp)) as server:
            served(server.http_url, 4, 1.0)  # warm up
            for concurrency in (1, 32):
                results[f"served_c{concurrency}"] = served(
                    server.http_url, concurrency, args.seconds
                )
    report = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_version()}",
        "seconds": args.seconds,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    base = results["in_process_32_per_call"]["embeddings_per_s"]
    print(f"{'mode':<24} {'emb/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'vs in-process x32':>18}")
    for mode, summary in results.items():
        rate = summary["embeddings_per_s"]
        print(
            f"{mode:<24} {rate:>8.0f} {summary['p50_ms']:>8.2f} {summary['p99_ms']:>8.2f} "
            f"{rate / base:>18.2f}"
        )


if __name__ == "__main__":
    main()
