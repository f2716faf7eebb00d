"""What the connection bounds cost a served model: the same server with and without them.

    python bench/connection_bounds.py [--pairs 20] [--seconds 2] [--conc 64]
                                      [--out bench/out/connection_bounds.json]

Needs `wrk` (Debian package). Two `modelyard serve` processes of this checkout
serve the example tiny_onnx (one-row binary requests, batching on, as in
`batching.py`), both pinned to core 0: one as shipped (`BoundedHttpProtocol`,
`frontdoors/http_connections.py`), one with uvicorn's own httptools protocol in its
place (this script's launcher swaps it in; nothing else differs). wrk (one
thread, core 1) drives one server at a time, in pairs of points taken back to
back in alternating order; the report is the median of the pairs' ratios
(bounded / unbounded), the overhead-bound throughput the bounds keep. On a
noisy host, `--callgrind` runs both under valgrind and counts the instructions
each spends per served request under the same load instead: exact, and only
the process's own work (valgrind slows it about 50 times, so its timers fire
that much more often per request, in both alike).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import (  # noqa: E402
    CONFIGS,
    Server,
    binary_request,
    binary_script,
    cpu_model,
    cpu_times,
    steal_share,
    wrk,
)

from modelyard.examples.build import build_tiny_onnx, example_inputs  # noqa: E402
from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

# `modelyard serve` with uvicorn's own protocol where modelyard's bounded one would be
UNBOUNDED_SERVE = """
import sys
import modelyard.cli.serve as serve
from modelyard.cli.main import main

shipped = serve.http_config

def unbounded(*args, **kwargs):
    config = shipped(*args, **kwargs)
    config.http = "httptools"
    return config

serve.http_config = unbounded
sys.argv = ["modelyard", *sys.argv[1:]]
main()
"""


def served_requests(port: int) -> int:
    doc = httpx.get(f"http://127.0.0.1:{port}/v2/models/tiny_onnx/stats").json()
    return int(doc["model_stats"][0]["inference_count"])


def timed_pairs(url: dict[str, str], script: Path, args: argparse.Namespace) -> dict[str, Any]:
    """req/s of each server, in pairs of points taken back to back in alternating order."""
    ratios: list[float] = []
    points: dict[str, list[float]] = {"bounded": [], "unbounded": []}
    for i in range(args.pairs):
        order = ("bounded", "unbounded") if i % 2 else ("unbounded", "bounded")
        rate = {}
        for name in order:
            rate[name] = wrk(url[name], script, args.conc, args.seconds)["requests_per_s"]
            points[name].append(rate[name])
        ratios.append(rate["bounded"] / rate["unbounded"])
    print(
        f"bounded / unbounded at c={args.conc}: median {statistics.median(ratios):.3f} over "
        f"{len(ratios)} pairs (range {min(ratios):.3f}-{max(ratios):.3f}); medians "
        f"{statistics.median(points['bounded']):,.0f} and "
        f"{statistics.median(points['unbounded']):,.0f} req/s"
    )
    return {"median_ratio": statistics.median(ratios), "ratios": ratios, "requests_per_s": points}


def counted_instructions(
    servers: dict[str, Server],
    url: dict[str, str],
    script: Path,
    work: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Instructions per served request of each server (callgrind, counting only under load)."""
    per_request = {}
    for name, server in servers.items():
        pid = str(server.process.pid)
        before = served_requests(server.port)
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        wrk(url[name], script, args.conc, args.seconds)
        subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
        requests = served_requests(server.port) - before
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
        dumps = sorted(work.glob(f"callgrind.{name}.*"))
        total = 0
        for line in dumps[-1].read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
        per_request[name] = {"requests": requests, "instructions": total / max(1, requests)}
        print(f"{name}: {requests} requests, {total / max(1, requests):,.0f} instructions each")
    extra = per_request["bounded"]["instructions"] - per_request["unbounded"]["instructions"]
    share = extra / per_request["unbounded"]["instructions"]
    print(f"the bounds add {extra:,.0f} instructions a request: {100 * share:.2f} %")
    return {"per_request": per_request, "extra_per_request": extra, "extra_share": share}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--conc", type=int, default=64)
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="count instructions per request under valgrind instead of timing (slow, exact)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out/connection_bounds.json"))
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("needs wrk (apt-get install wrk)")
    work = Path(tempfile.mkdtemp(prefix="connection-bounds-"))
    repo = work / "repo"
    build_tiny_onnx(repo, seed=0)
    source, config = CONFIGS["tiny_onnx"]
    (repo / source / "config.pbtxt").write_text(config)
    body, header_length = binary_request("input", example_inputs("tiny_onnx", 1)["input"])
    (work / "body.bin").write_bytes(body)
    script = work / "request.lua"
    script.write_text(binary_script(work / "body.bin", header_length))
    ports = {"bounded": free_port(), "unbounded": free_port()}
    commands = {name: serve_command(repo, http_port=port) for name, port in ports.items()}
    # the same arguments, to a launcher that swaps in uvicorn's own protocol
    unbounded = commands["unbounded"]
    commands["unbounded"] = [sys.executable, "-c", UNBOUNDED_SERVE, *unbounded[3:]]
    if args.callgrind:
        commands = {
            name: ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                   f"--callgrind-out-file={work}/callgrind.{name}.%p", *command]
            for name, command in commands.items()
        }  # fmt: skip
    servers = {
        name: Server(
            commands[name],
            port,
            "/v2/health/ready",
            timeout=900 if args.callgrind else 120,
        )
        for name, port in ports.items()
    }
    url = {
        name: f"http://127.0.0.1:{port}/v2/models/tiny_onnx/infer" for name, port in ports.items()
    }
    before = cpu_times()
    try:
        for name in servers:
            wrk(url[name], script, 16, 3 if args.callgrind else 1)  # warm-up
        if args.callgrind:
            result = counted_instructions(servers, url, script, work, args)
        else:
            result = timed_pairs(url, script, args)
    finally:
        for server in servers.values():
            server.stop()
    report = {
        "cpu": cpu_model(),
        "steal_share": steal_share(before, cpu_times()),
        "concurrency": args.conc,
        **result,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
