"""``modelyard bench``: closed-loop sweeps and open-loop fixed-rate load."""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path
from typing import Any

from modelyard.bench.loadgen import Step, Target, WorkerPool
from modelyard.bench.report import format_table, summarize, write_json, write_plot


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default="127.0.0.1:8000", help="host:port of the server")
    parser.add_argument("--protocol", choices=["http", "grpc"], default="http")
    parser.add_argument("--model", required=True)
    parser.add_argument("--model-version", default="")
    parser.add_argument("--rows", type=int, default=1, help="rows per request")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--concurrency", default="1,4,16", help="closed loop: comma-separated levels to sweep"
    )
    mode.add_argument(
        "--rate", default=None, help="open loop: comma-separated request rates (req/s)"
    )
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per step")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before each step")
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="load processes (0: one per 64 concurrent requests, at most cores - 1)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="report directory")
    parser.add_argument("--name", default=None, help="report file name (default: model-protocol)")
    parser.add_argument("--no-progress", action="store_true")


def _levels(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def _split(level: float, parts: int, mode: str) -> list[float]:
    if mode == "open":
        return [level / parts] * parts
    base, extra = divmod(int(level), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _run_step(pool: WorkerPool, steps: list[Step], progress: Any) -> Any:
    pool.start(steps)
    if progress is not None:
        duration = steps[0].duration
        started = time.monotonic()
        while time.monotonic() - started < duration:
            time.sleep(min(0.25, duration))
            progress.update(min(0.25, duration))
    return pool.collect()


def run_bench(args: argparse.Namespace) -> int:
    mode = "open" if args.rate else "closed"
    levels = _levels(args.rate if args.rate else args.concurrency)
    target = Target(args.url, args.protocol, args.model, args.model_version, args.rows)
    processes = args.processes
    if processes <= 0:
        biggest = max(levels)
        per_process = 64 if mode == "closed" else 2000
        processes = max(1, min(max(1, (os.cpu_count() or 2) - 1), math.ceil(biggest / per_process)))
    if mode == "closed":
        processes = min(processes, int(min(levels)))
    pool = WorkerPool(target, processes)
    progress = None
    if not args.no_progress:
        from tqdm import tqdm

        progress = tqdm(
            total=len(levels) * (args.duration + args.warmup), unit="s", desc=args.model
        )
    steps = []
    try:
        for index, level in enumerate(levels):
            shares = _split(level, pool.size, mode)
            if args.warmup > 0:
                warm = [Step(mode, share, args.warmup, seed=index) for share in shares]
                _run_step(pool, warm, progress)
            measured = [
                Step(mode, share, args.duration, seed=1000 * index + worker)
                for worker, share in enumerate(shares)
            ]
            steps.append(summarize(mode, level, _run_step(pool, measured, progress)))
    finally:
        if progress is not None:
            progress.close()
        pool.close()
    report = {
        "target": {
            "url": args.url,
            "protocol": args.protocol,
            "model": args.model,
            "version": args.model_version,
            "rows": args.rows,
        },
        "mode": mode,
        "processes": processes,
        "duration_s": args.duration,
        "steps": steps,
    }
    name = args.name or f"{args.model}-{args.protocol}-{mode}"
    write_json(args.out / f"{name}.json", report)
    write_plot(args.out / f"{name}.png", report)
    print(format_table(report))
    print(f"report: {args.out / (name + '.json')}  plot: {args.out / (name + '.png')}")
    return 0
