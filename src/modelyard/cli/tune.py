"""``modelyard tune MODEL --repository DIR --latency-slo-ms N``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from google.protobuf import text_format

from modelyard import error_rules
from modelyard.errors import ConfigError
from modelyard.modelfiles.config import read_model_config
from modelyard.optimize.tune import candidate_config, recommend, sweep, write_plot


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def add_tune_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model")
    parser.add_argument("--repository", type=Path, required=True)
    parser.add_argument("--latency-slo-ms", type=float, required=True)
    parser.add_argument("--instances", default="1,2", help="instance counts to try")
    parser.add_argument("--max-batch-sizes", default="8,32", help="max_batch_size values")
    parser.add_argument("--queue-delays-us", default="0,500", help="queue delays to try")
    parser.add_argument("--versions", default="", help="versions to try (e.g. quantised ones)")
    parser.add_argument("--concurrency", default="1,8,32", help="closed-loop levels")
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measured point")
    parser.add_argument("--out", type=Path, default=Path("tune-out"))


def run_tune(args: argparse.Namespace) -> int:
    model_dir = args.repository / args.model
    if not (model_dir / "config.pbtxt").exists() and not model_dir.is_dir():
        raise ConfigError.of(
            error_rules.TUNE_MODEL, f"model {args.model} is not in {args.repository}"
        )
    measurements = sweep(
        model_dir,
        instances=_ints(args.instances),
        batch_sizes=_ints(args.max_batch_sizes),
        delays_us=_ints(args.queue_delays_us),
        versions=_ints(args.versions) or None,
        concurrencies=_ints(args.concurrency),
        seconds=args.seconds,
        rows=args.rows,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    write_plot(args.out / "sweep.png", measurements, args.latency_slo_ms)
    report = [{"candidate": m.candidate.label(), "steps": m.steps} for m in measurements]
    (args.out / "sweep.json").write_text(json.dumps(report, indent=2))
    for m in measurements:
        for s in m.steps:
            print(
                f"{m.candidate.label():<36} c{s['concurrency']:<4g} {s['throughput_rps']:>9.0f} "
                f"req/s  p99 {s['p99_ms']:.2f} ms"
            )
    best = recommend(measurements, args.latency_slo_ms)
    if best is None:
        print(f"no candidate keeps p99 under {args.latency_slo_ms:g} ms; see {args.out}/sweep.png")
        return 1
    measurement, step = best
    config = candidate_config(read_model_config(model_dir), measurement.candidate)
    (args.out / "config.pbtxt").write_text(text_format.MessageToString(config))
    print(
        f"recommended: {measurement.candidate.label()} — {step['throughput_rps']:.0f} req/s at "
        f"concurrency {step['concurrency']:g}, p99 {step['p99_ms']:.2f} ms "
        f"(SLO {args.latency_slo_ms:g} ms)\nwrote {args.out / 'config.pbtxt'} and "
        f"{args.out / 'sweep.png'}"
    )
    return 0
