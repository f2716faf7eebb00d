"""What the server's counters account for of the latency a client measures, in one run.

    python bench/queue_accounting.py [--seconds 5] [--concurrency 1,8,32]

One `modelyard serve` (core 0) serves Triton's add/sub model ``simple`` (ONNX); wrk
(core 1, a C client, so the client adds little) sends its V2 JSON request closed
loop at each concurrency. For each: wrk's mean latency, and the server's mean
request and queue time per request from `/v2/models/simple/stats` (the difference
of the counters before and after). The request time counts from when the server
read the request's first bytes to when its answer was ready on the event loop;
what is left between it and the client's is the kernel, the wire, the encoding of
the reply and wrk.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import Server  # noqa: E402

from modelyard.processes import serve_command  # noqa: E402
from tests.support.models import simple_add_sub  # noqa: E402
from tests.support.servers import free_ports  # noqa: E402

ONES = ",".join(["1"] * 16)
SCRIPT = f"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{{"inputs":[{{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":[{ONES}]}},' ..
  '{{"name":"INPUT1","datatype":"INT32","shape":[1,16],"data":[{ONES}]}}]}}'
"""


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def counters(url: str) -> tuple[int, int, int]:
    stats = httpx.get(f"{url}/v2/models/simple/stats").json()["model_stats"][0]
    inference = stats["inference_stats"]
    return (
        int(inference["success"]["count"]),
        int(inference["success"]["ns"]),
        int(inference["queue"]["ns"]),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--concurrency", default="1,8,32")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "models"
        simple_add_sub(repository)
        script = Path(tmp) / "infer.lua"
        script.write_text(SCRIPT)
        port, grpc_port, metrics_port = free_ports(3)
        command = serve_command(
            repository, http_port=port, grpc_port=grpc_port, metrics_port=metrics_port
        )
        server = Server(command, port, "/v2/health/ready")
        url = f"http://127.0.0.1:{port}"
        try:
            print(
                "| concurrency | wrk mean latency (ms) | server request (ms) "
                "| of which queue (ms) | server / client |"
            )
            print("|---|---|---|---|---|")
            for connections in map(int, args.concurrency.split(",")):
                before = counters(url)
                out = subprocess.run(
                    ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}",
                     f"-d{args.seconds}s", "-s", str(script), f"{url}/v2/models/simple/infer"],
                    capture_output=True, text=True, check=True,
                ).stdout  # fmt: skip
                after = counters(url)
                match = re.search(r"Latency\s+([\d.]+)(us|ms|s)", out)
                assert match, out
                client = _ms(match.group(1), match.group(2))
                count = after[0] - before[0]
                request = (after[1] - before[1]) / count / 1e6
                queue = (after[2] - before[2]) / count / 1e6
                print(
                    f"| {connections} | {client:.3f} | {request:.3f} | {queue:.3f} | "
                    f"{request / client:.2f} |"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
