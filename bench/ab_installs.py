"""Two modelyard installs on one repository, side by side: which serves more, point by point.

Both servers run at once, pinned to core 0, and wrk (core 1) alternates between them in
short rounds, A then B, then B then A, so that the host's drift falls on both alike. Each
point is a model, a concurrency and a request format: V2 JSON or binary tensors. Prints
the median ratio B / A per point, its range, and each side's median req/s.

    python bench/ab_installs.py --a /path/to/old-venv --b .venv \\
        --repository ../peerbench-home/modelyard-repo --pairs 8 \\
        --points small:32:json,small:32:bin,big:32:json,big:32:bin

The repository's models take one FP32 input named ``input`` of ``--features``
values each (``small:64,big:256``: the peer benchmark's repository). With
``--service-config FILE`` both serve governed, and ``--header "X-API-Key: KEY"`` (as
often as needed) adds a header to every request.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modelyard.processes import free_port, serve_command, wait_for_200  # noqa: E402

DONE = """
function done(summary, latency, requests)
  io.write(string.format('ABJSON {"requests":%d,"duration_us":%d,"errors":%d}\\n',
    summary.requests, summary.duration, summary.errors.status + summary.errors.connect +
    summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def scripts(
    work: Path, features: dict[str, int], extra: dict[str, str] | None = None
) -> dict[tuple[str, str], Path]:
    """A wrk script per model and format, each POSTing one fixed row."""
    rng = np.random.default_rng(0)
    made = {}
    for model, width in features.items():
        row = rng.standard_normal((1, width)).astype(np.float32)
        doc = {"inputs": [{"name": "input", "shape": [1, width], "datatype": "FP32",
                           "data": row.ravel().tolist()}]}  # fmt: skip
        header = json.dumps(
            {"inputs": [{"name": "input", "shape": [1, width], "datatype": "FP32",
                         "parameters": {"binary_data_size": row.nbytes}}],
             "parameters": {"binary_data_output": True}}
        ).encode()  # fmt: skip
        bodies = {
            "json": (json.dumps(doc).encode(), {"Content-Type": "application/json"}),
            "bin": (
                header + row.tobytes(),
                {"Content-Type": "application/octet-stream",
                 "Inference-Header-Content-Length": str(len(header))},
            ),
        }  # fmt: skip
        for fmt, (body, headers) in bodies.items():
            body_path = work / f"{model}.{fmt}.body"
            body_path.write_bytes(body)
            lines = [f'local f = io.open("{body_path}", "rb")', 'wrk.method = "POST"',
                     'wrk.body = f:read("*all")', "f:close()"]  # fmt: skip
            headers = {**headers, **(extra or {})}
            lines += [f'wrk.headers["{name}"] = "{value}"' for name, value in headers.items()]
            script = work / f"{model}.{fmt}.lua"
            script.write_text("\n".join(lines) + "\n" + DONE)
            made[(model, fmt)] = script
    return made


def rate(port: int, model: str, conc: int, script: Path, seconds: int) -> float:
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", f"-c{conc}", f"-d{seconds}s", "-s", str(script),
         f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    line = next(line for line in out.splitlines() if line.startswith("ABJSON "))
    result = json.loads(line[len("ABJSON ") :])
    if result["errors"]:
        raise RuntimeError(f"{model} c={conc}: {result['errors']} errors")
    return float(result["requests"]) / result["duration_us"] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", type=Path, required=True, help="venv of install A")
    parser.add_argument("--b", type=Path, required=True, help="venv of install B")
    parser.add_argument("--repository", type=Path, required=True)
    parser.add_argument("--features", default="small:64,big:256")
    parser.add_argument("--points", default="small:32:json,small:32:bin,big:32:json,big:32:bin")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--service-config", type=Path, help="both serve governed by it")
    parser.add_argument("--header", action="append", default=[], help='"Name: value"')
    args = parser.parse_args()
    extra = dict(item.split(": ", 1) for item in args.header)
    governed = ["--service-config", str(args.service_config)] if args.service_config else []
    features = {m: int(n) for m, n in (item.split(":") for item in args.features.split(","))}
    ports = {"A": free_port(), "B": free_port()}
    servers = {}
    for side, venv in (("A", args.a), ("B", args.b)):
        serve = serve_command(
            args.repository, http_port=ports[side], python=venv / "bin" / "python"
        )
        command = ["taskset", "-c", "0", *serve, *governed]
        servers[side] = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    try:
        for side, port in ports.items():
            url = f"http://127.0.0.1:{port}/v2/health/ready"
            if wait_for_200(url, lambda s=side: servers[s].poll() is None, 120) != "ready":
                raise RuntimeError(f"server {side} did not get ready")
        with tempfile.TemporaryDirectory() as tmp:
            made = scripts(Path(tmp), features, extra)
            for port in ports.values():  # warm-up
                for (model, _), script in made.items():
                    rate(port, model, 8, script, 1)
            for point in args.points.split(","):
                model, conc, fmt = point.split(":")
                a, b = [], []
                for i in range(args.pairs):
                    order = ("A", "B") if i % 2 == 0 else ("B", "A")
                    got = {s: rate(ports[s], model, int(conc), made[(model, fmt)], args.seconds)
                           for s in order}  # fmt: skip
                    a.append(got["A"])
                    b.append(got["B"])
                ratios = [y / x for x, y in zip(a, b, strict=True)]
                print(
                    f"{model} c={conc} {fmt}: B/A median {statistics.median(ratios):.3f} "
                    f"[{min(ratios):.2f}-{max(ratios):.2f}]  A {statistics.median(a):,.0f}  "
                    f"B {statistics.median(b):,.0f} req/s",
                    flush=True,
                )
    finally:
        for process in servers.values():
            process.terminate()
        for process in servers.values():
            process.wait(10)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
