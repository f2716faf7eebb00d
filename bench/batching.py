"""Dynamic batching and per-request overhead, measured in one run.

    python bench/batching.py [--seconds 3] [--rounds 5] [--out bench/out/batching.json]

Needs `wrk` (Debian package). The server is pinned to core 0 and wrk to core 1
(`taskset`), so the load generator never competes with the server for a core.
Measures, on the same machine in one run:

1. compute-bound: mlp_onnx (256→1024→1024→10), 16 rows per request at
   concurrency 64 — served rows/s vs in-process onnxruntime rows/s at the batch
   size the batcher formed. Both compute on one thread (intra_op 1, one
   instance); for this part the server may use both cores, so its event loop
   does not share the compute core (wrk, on core 1, is light at this rate);
2. overhead-bound: tiny_onnx, one-row requests — served req/s vs a bare ASGI
   endpoint on the same stack that reads the body and answers a constant.
   tiny_onnx gets a config with max_batch_size 64: auto-completed from its
   graph it has 4 (Triton's default), which caps batches at concurrency 64;
3. p50/p99 at concurrency 1, 16, 64 with batching off and on, for both models.

Every point is taken once per round and the rounds interleave the things a
ratio compares (bare endpoint and served model; batching on and off; served
and in-process), so each ratio compares points taken seconds apart: this VM's
speed drifts by tens of percent over minutes. Reported: the median point, and
the median of the per-round ratios. The overhead-bound ratio and the batching
tax at concurrency 1 compare two cheap points, so after the rounds they are
also measured in 3 x rounds pairs of points taken back to back, 1 s each, in
alternating order; their headline figures are the medians of those pairs (the
per-round ratios stay in the JSON report).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modelyard.examples.build import build_example_repository, example_inputs  # noqa: E402
from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_port, wait_until  # noqa: E402

_TINY = (
    'platform: "onnxruntime_onnx"\nmax_batch_size: 64\n'
    'input [{ name: "input" data_type: TYPE_FP32 dims: [4] }]\n'
    'output [{ name: "output" data_type: TYPE_FP32 dims: [3] }]\n'
)
# tiny_onnx's own config: its auto-completed one caps batches at 4 rows (Triton's
# default-max-batch-size), which a server tuned for many small requests raises
CONFIGS = {"tiny_onnx": ("tiny_onnx", _TINY + "dynamic_batching { }\n")}
NO_BATCHING = {
    "mlp_onnx_nobatch": (
        "mlp_onnx",
        'platform: "onnxruntime_onnx"\nmax_batch_size: 128\n'
        'input [{ name: "input" data_type: TYPE_FP32 dims: [256] }]\n'
        'output [{ name: "output" data_type: TYPE_FP32 dims: [10] }]\n',
    ),
    "tiny_onnx_nobatch": ("tiny_onnx", _TINY),
}

SERVED = ("tiny_onnx", "tiny_onnx_nobatch", "mlp_onnx", "mlp_onnx_nobatch")


def post_script(body: Path, headers: dict[str, str]) -> str:
    """A wrk script that POSTs the bytes of ``body`` with ``headers``."""
    lines = [f'local f = io.open("{body}", "rb")', 'wrk.method = "POST"']
    lines += ['wrk.body = f:read("*all")', "f:close()"]
    lines += [f'wrk.headers["{name}"] = "{value}"' for name, value in headers.items()]
    return "\n".join(lines) + "\n"


def binary_script(body: Path, header_length: int) -> str:
    """The wrk script of a V2 binary request (``binary_request``) stored in ``body``."""
    return post_script(
        body,
        {
            "Content-Type": "application/octet-stream",
            "Inference-Header-Content-Length": str(header_length),
        },
    )


def binary_request(name: str, array: np.ndarray) -> tuple[bytes, int]:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": name,
                    "shape": list(array.shape),
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": array.nbytes},
                }
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    return header + array.astype(np.float32).tobytes(), len(header)


def wrk(url: str, script: Path, connections: int, seconds: float) -> dict[str, float]:
    duration = f"-d{max(1, round(seconds))}s"
    command = [
        "taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", duration, "--latency",
        "-s", str(script), url,
    ]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    result = {"requests_per_s": rps}
    for pct in ("50", "99"):
        match = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        assert match, out
        value, unit = float(match.group(1)), match.group(2)
        result[f"p{pct}_ms"] = value * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    result["non_2xx"] = float(errors.group(1)) if errors else 0.0
    return result


def in_process_rows_per_s(model_path: Path, batch: int, seconds: float) -> float:
    """onnxruntime alone, one thread, pinned to the server's core, in a child process."""
    code = f"""
import os, time, numpy as np, onnxruntime as ort
os.sched_setaffinity(0, {{0}})
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
s = ort.InferenceSession({str(model_path)!r}, o, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).standard_normal(({batch}, 256)).astype(np.float32)
for _ in range(20): s.run(None, {{"input": x}})
n = 0; end = time.perf_counter() + {seconds}
while time.perf_counter() < end:
    s.run(None, {{"input": x}}); n += 1
print(n * {batch} / {seconds})
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


class Server:
    def __init__(
        self,
        command: list[str],
        port: int,
        ready_path: str,
        cores: str = "0",
        timeout: float = 120,
    ) -> None:
        self.port = port
        self.process = subprocess.Popen(
            ["taskset", "-c", cores, *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def up() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}{ready_path}").status_code < 500
            except httpx.HTTPError:
                return False

        wait_until(up, timeout=timeout)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


def stats(port: int, model: str) -> tuple[int, int, int]:
    """Rows computed, executions, and the engine's time summed per request (ns)."""
    doc = httpx.get(f"http://127.0.0.1:{port}/v2/models/{model}/stats").json()
    row = doc["model_stats"][0]
    infer_ns = row["inference_stats"]["compute_infer"]["ns"]
    return int(row["inference_count"]), int(row["execution_count"]), int(infer_ns)


def paired_ratios(
    top: tuple[str, Path], bottom: tuple[str, Path], connections: int, pairs: int
) -> list[float]:
    """req/s of ``top`` over ``bottom``, each pair taken back to back, 1 s per point."""
    ratios = []
    for i in range(pairs):
        order = (bottom, top) if i % 2 == 0 else (top, bottom)
        rate = {target: wrk(*target, connections, 1)["requests_per_s"] for target in order}
        ratios.append(rate[top] / rate[bottom])
    return ratios


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_times() -> list[int]:
    """The machine's CPU time so far, by kind (/proc/stat); [] where there is none."""
    try:
        with open("/proc/stat") as stat:
            return [int(field) for field in stat.readline().split()[1:]]
    except OSError:
        return []


def steal_share(before: list[int], after: list[int]) -> float | None:
    """The share of CPU time the hypervisor gave to other guests between two readings.

    A contended host slows the served process, with its several threads and larger
    working set, more than the bare endpoint: the ratios read lower when this is not ~0.
    """
    if len(before) < 8 or len(after) < 8:
        return None
    spent = [a - b for a, b in zip(after, before, strict=True)]
    return spent[7] / max(1, sum(spent[:8]))  # user .. steal; guest time is inside user


def _median_point(points: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(p[key] for p in points) for key in points[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/out/batching.json"))
    args = parser.parse_args()
    seconds, rounds = args.seconds, args.rounds
    report: dict[str, Any] = {
        "machine": f"{platform.machine()} ({cpu_model()}), {os.cpu_count()} cpus, Python "
        f"{platform.python_version()}; server on core 0, wrk on core 1",
        "seconds_per_point": seconds,
        "rounds": rounds,
    }
    times_before = cpu_times()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        repository = tmp / "models"
        build_example_repository(repository, text_models=False)
        for name, (source, config) in {**CONFIGS, **NO_BATCHING}.items():
            if name != source:
                shutil.copytree(repository / source / "1", repository / name / "1")
            (repository / name / "config.pbtxt").write_text(config)
        scripts = {}
        for model, rows in (("mlp_onnx", 16), ("tiny_onnx", 1)):
            inputs = example_inputs(model, rows)
            body, header_length = binary_request("input", inputs["input"])
            (tmp / f"{model}.bin").write_bytes(body)
            script = tmp / f"{model}.lua"
            script.write_text(binary_script(tmp / f"{model}.bin", header_length))
            scripts[model] = script

        # 1 and 3: the stack's floor and modelyard, both up on core 0 (the one not
        # measured idles); every point is taken once per round, rounds interleaved,
        # so the ratios compare points taken seconds apart (this VM's speed drifts)
        bare_port, port = free_port(), free_port()
        bare = Server(
            [sys.executable, str(ROOT / "bench" / "bare_asgi.py"), str(bare_port)], bare_port, "/"
        )
        server = Server(
            serve_command(repository, http_port=port, model_control_mode="explicit",
                          load_model=list(SERVED)),
            port,
            "/v2/health/ready",
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}/v2/models"
            targets = {"bare": (f"http://127.0.0.1:{bare_port}/", scripts["tiny_onnx"])}
            for model in SERVED:
                targets[model] = (f"{base}/{model}/infer", scripts[model.removesuffix("_nobatch")])
            for url, script in targets.values():
                wrk(url, script, 16, 2)  # warm up
            points: dict[str, dict[str, list[dict[str, float]]]] = {t: {} for t in targets}
            for _ in range(rounds):
                for c in (1, 16, 64):
                    for target, (url, script) in targets.items():
                        before = stats(port, target) if target != "bare" else (0, 0, 0)
                        point = wrk(url, script, c, seconds)
                        if target != "bare":
                            after = stats(port, target)
                            executions = max(1, after[1] - before[1])
                            point["mean_batch_rows"] = (after[0] - before[0]) / executions
                        points[target].setdefault(f"c{c}", []).append(point)
            pairs = 3 * rounds
            overhead = paired_ratios(targets["tiny_onnx"], targets["bare"], 64, pairs)
            tax = {
                model: paired_ratios(targets[model], targets[f"{model}_nobatch"], 1, pairs)
                for model in ("tiny_onnx", "mlp_onnx")
            }
        finally:
            server.stop()
            bare.stop()
        report["bare_endpoint"] = {c: _median_point(v) for c, v in points["bare"].items()}
        report["served"] = {
            model: {c: _median_point(v) for c, v in points[model].items()} for model in SERVED
        }

        def ratios(top: str, bottom: str, c: str) -> list[float]:
            return [
                a["requests_per_s"] / b["requests_per_s"]
                for a, b in zip(points[top][c], points[bottom][c], strict=True)
            ]

        report["overhead_bound_ratio"] = statistics.median(overhead)
        report["overhead_bound_ratio_pairs"] = overhead
        report["overhead_bound_ratio_per_round"] = ratios("tiny_onnx", "bare", "c64")
        report["batching_tax_c1"] = {model: statistics.median(v) for model, v in tax.items()}
        report["batching_tax_c1_pairs"] = tax
        report["batching_tax_c1_per_round"] = {
            model: ratios(model, f"{model}_nobatch", "c1") for model in ("tiny_onnx", "mlp_onnx")
        }

        # 2. compute-bound: the server's event loop off the compute core; each round
        # serves, then runs onnxruntime alone at the batch size that round formed
        port = free_port()
        server = Server(
            serve_command(repository, http_port=port, model_control_mode="explicit",
                          load_model=["mlp_onnx"]),
            port,
            "/v2/health/ready",
            cores="0,1",
        )  # fmt: skip
        served_points: list[dict[str, float]] = []
        alone: list[dict[str, float]] = []
        try:
            url = f"http://127.0.0.1:{port}/v2/models/mlp_onnx/infer"
            wrk(url, scripts["mlp_onnx"], 64, 2)
            for _ in range(rounds):
                before = stats(port, "mlp_onnx")
                started = time.perf_counter()
                point = wrk(url, scripts["mlp_onnx"], 64, seconds)
                after = stats(port, "mlp_onnx")
                elapsed = time.perf_counter() - started
                rows, executions, infer_ns = (a - b for a, b in zip(after, before, strict=True))
                point["mean_batch_rows"] = rows / max(1, executions)
                # how much of the time the engine computed (the rest of the server's work,
                # GIL waits included, is what keeps it from 1.0); compute_infer counts an
                # execution's time once per request in it
                per_execution_ns = infer_ns / max(1, rows // 16)
                point["engine_busy"] = per_execution_ns * executions / (elapsed * 1e9)
                served_points.append(point)
                batch = max(16, round(point["mean_batch_rows"] / 16) * 16)
                model_path = repository / "mlp_onnx" / "1" / "model.onnx"
                alone.append(
                    {
                        "batch_rows": batch,
                        "rows_per_s": in_process_rows_per_s(model_path, batch, seconds),
                    }
                )
        finally:
            server.stop()
    compute = [
        point["requests_per_s"] * 16 / engine["rows_per_s"]
        for point, engine in zip(served_points, alone, strict=True)
    ]
    report["compute_bound_served"] = _median_point(served_points)
    report["in_process_mlp"] = _median_point(alone)
    report["compute_bound_ratio"] = statistics.median(compute)
    report["compute_bound_ratio_per_round"] = compute
    report["compute_bound_rounds"] = [
        {"served_rows_per_s": p["requests_per_s"] * 16, **e, "engine_busy": p["engine_busy"]}
        for p, e in zip(served_points, alone, strict=True)
    ]
    report["steal_share"] = steal_share(times_before, cpu_times())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
