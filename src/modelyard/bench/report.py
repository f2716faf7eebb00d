"""Summaries, the JSON report and the latency-vs-throughput plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from modelyard.bench.loadgen import StepResult

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9}


def summarize(mode: str, level: float, result: StepResult) -> dict[str, Any]:
    latencies = np.asarray(result.latencies, dtype=np.float64) * 1000
    ok = len(latencies)
    errors = sum(result.errors.values())
    elapsed = result.elapsed or 1.0
    row: dict[str, Any] = {
        "mode": mode,
        "concurrency" if mode == "closed" else "offered_rps": level,
        "throughput_rps": ok / elapsed,
        "sent": result.sent,
        "ok": ok,
        "errors": errors,
        "errors_by_rule": dict(sorted(result.errors.items())),
        "error_lines": dict(sorted(result.examples.items())),  # the first of each rule
        "seconds": round(elapsed, 3),
    }
    for name, q in PERCENTILES.items():
        row[f"{name}_ms"] = float(np.percentile(latencies, q)) if ok else None
    if mode == "open":
        row["generator_max_lag_ms"] = result.max_lag * 1000
    return row


def write_json(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2))


def write_plot(path: Path, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [s for s in report["steps"] if s["ok"]]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    throughput = [s["throughput_rps"] for s in steps]
    for key, style in (("p50_ms", "o-"), ("p99_ms", "s--"), ("p99_9_ms", "^:")):
        ax.plot(throughput, [s[key] for s in steps], style, label=key.removesuffix("_ms"))
    for s in steps:
        level = s.get("concurrency", s.get("offered_rps"))
        ax.annotate(
            f"{level:g}",
            (s["throughput_rps"], s["p99_ms"]),
            fontsize=7,
            textcoords="offset points",
            xytext=(3, 3),
        )
    target = report["target"]
    ax.set_title(f"{target['model']} over {target['protocol']} ({report['mode']} loop)")
    ax.set_xlabel("throughput (requests/s)")
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def format_table(report: dict[str, Any]) -> str:
    level = "concurrency" if report["mode"] == "closed" else "offered_rps"
    lines = [
        f"{level:>12} {'req/s':>10} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} "
        f"{'p99.9 ms':>9} {'errors':>7}"
    ]
    for s in report["steps"]:

        def ms(key: str, s: dict[str, Any] = s) -> str:
            return f"{s[key]:9.2f}" if s[key] is not None else f"{'-':>9}"

        lines.append(
            f"{s[level]:>12g} {s['throughput_rps']:>10.0f} {ms('p50_ms')} {ms('p90_ms')} "
            f"{ms('p99_ms')} {ms('p99_9_ms')} {s['errors']:>7}"
        )
        for rule, count in s["errors_by_rule"].items():
            lines.append(f"{'':>12} {count:>10} x {rule}")
            example = s.get("error_lines", {}).get(rule)
            if example:
                lines.append(f"{'':>12} {'the first:':>10} {example}")
    return "\n".join(lines)
