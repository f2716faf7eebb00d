"""What a Triton python-backend model's own process costs a request.

One server serves the same identity model twice: ``in_thread`` is a modelyard
``class Model`` (the instance thread calls it), ``in_stub`` a Triton
``TritonPythonModel`` (its instance runs in a child process, ``python_stub.py``).
wrk sends the same V2 JSON request to each in short alternating rounds (A B, then B
A), at concurrency 1 and 8, and the script prints each side's median req/s and
latency, and the stub's added latency at concurrency 1.

    python bench/python_stub.py --rounds 6 --seconds 3
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modelyard.processes import free_port, serve_command, wait_for_200  # noqa: E402

IN_THREAD = """
class Model:
    def execute(self, inputs):
        return {"y": inputs["x"]}
"""

IN_STUB = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("y", pb_utils.get_input_tensor_by_name(r, "x").as_numpy())]
            )
            for r in requests
        ]
"""

CONFIG = """
backend: "python"
max_batch_size: 8
input [{ name: "x" data_type: TYPE_FP32 dims: [ 64 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 64 ] }]
dynamic_batching { }
"""


def repository(root: Path) -> Path:
    for name, source in (("in_thread", IN_THREAD), ("in_stub", IN_STUB)):
        version = root / name / "1"
        version.mkdir(parents=True)
        (version / "model.py").write_text(textwrap.dedent(source))
        (root / name / "config.pbtxt").write_text(textwrap.dedent(CONFIG))
    return root


def wrk(port: int, model: str, conc: int, seconds: int, script: Path) -> tuple[float, float]:
    """req/s and mean latency (ms) of one wrk round."""
    done = subprocess.run(
        ["wrk", "-t1", f"-c{conc}", f"-d{seconds}s", "-s", str(script),
         f"http://127.0.0.1:{port}/v2/models/{model}/infer"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", done.stdout).group(1))  # type: ignore[union-attr]
    latency = re.search(r"Latency\s+([\d.]+)(us|ms|s)", done.stdout)
    assert latency is not None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[latency.group(2)]
    return rate, float(latency.group(1)) * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        root = repository(Path(work) / "models")
        body = {"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                            "data": [0.5] * 64}]}  # fmt: skip
        script = Path(work) / "post.lua"
        script.write_text(
            'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f"wrk.body = '{json.dumps(body)}'\n"
        )
        port = free_port()
        server = subprocess.Popen(
            serve_command(root, http_port=port), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            ready = wait_for_200(f"http://127.0.0.1:{port}/v2/health/ready",
                                 lambda: server.poll() is None, 120)  # fmt: skip
            assert ready == "ready", ready
            results: dict[tuple[str, int], list[tuple[float, float]]] = {}
            for conc in (1, 8):
                for index in range(args.rounds):
                    order = ("in_thread", "in_stub") if index % 2 == 0 else ("in_stub", "in_thread")
                    for model in order:
                        point = wrk(port, model, conc, args.seconds, script)
                        results.setdefault((model, conc), []).append(point)
        finally:
            server.terminate()
            server.wait(30)
    print("| model | conc | req/s (median) | mean latency ms (median) |")
    print("|---|---|---|---|")
    for (model, conc), points in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rate = statistics.median(p[0] for p in points)
        latency = statistics.median(p[1] for p in points)
        print(f"| {model} | {conc} | {rate:,.0f} | {latency:.3f} |")
    added = statistics.median(p[1] for p in results[("in_stub", 1)]) - statistics.median(
        p[1] for p in results[("in_thread", 1)]
    )
    print(f"\nthe stub adds {added * 1000:.0f} us per request at concurrency 1")


if __name__ == "__main__":
    main()
