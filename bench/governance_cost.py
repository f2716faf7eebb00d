"""What the guard chain costs: tiny_onnx with auth + cluster-qps in Redis vs no chain.

    python bench/governance_cost.py [--seconds 2] [--rounds 8] [--servers 2]

Needs `wrk` and `redis-server`. One run starts ``--servers`` servers without a
service file and as many with auth and a cluster-qps limit far above the
offered load (counted in a real Redis, leased in chunks), all pinned to core 0,
and measures each once per round with wrk on core 1, in an order that reverses
every round (A B B A ...). The cost is read from the median of the per-round
ratios of the two sides' mean throughput.

Several processes per side, because one process is not a fair sample of its
side on a 2-core VM: two servers started alike kept throughputs 5-8 % apart
over a whole run (A/A, 2026-11-30), more than the cost being measured. The
report gives that spread as ``same_side_spread``; the cost means something only
when it is well above it.

Two more readings come with it:

* CPU per served request: each server's own CPU time (/proc, all threads)
  over each wrk run, divided by the requests it answered. A saturated server's
  throughput is 1 / that, but CPU time does not count what a noisy VM steals,
  so the ratio of the two sides' medians is the throughput cost with most of
  the noise taken out;
* the chain's own CPU per call: the same ASGI app in this process, with a
  dataplane that answers at once, driven call after call with and without the
  service file (the same Redis), best of many rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import LUA, Server, binary_request, wrk  # noqa: E402

from modelyard.examples.build import build_example_repository, example_inputs  # noqa: E402
from modelyard.gateway.http import HttpFrontend  # noqa: E402
from modelyard.governance.auth import hash_secret  # noqa: E402
from modelyard.governance.runtime import RulesSource, open_governance  # noqa: E402
from modelyard.server.dataplane import DataPlane  # noqa: E402
from modelyard.types import InferRequest, InferResponse  # noqa: E402
from tests.support.redis_server import running_redis  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

KEY = "bench-key"


class _AnsweringDataPlane(DataPlane):
    """Answers every request at once: what is left to time is the front door."""

    def __init__(self) -> None:
        self.in_flight = 0

    async def infer(self, request: InferRequest) -> InferResponse:
        return InferResponse(model_name=request.model_name, model_version="1", outputs=[])


async def _in_process_us(service: Path, body: bytes, header_length: int) -> dict[str, float]:
    """Best-of-rounds microseconds per call of the HTTP app, chain off and on."""
    governance = await open_governance(
        service, None, rules_source=RulesSource.LOCAL, store=None, registry_url=None
    )
    dataplane = _AnsweringDataPlane()
    apps = {
        "chain_off": HttpFrontend(dataplane),
        "chain_on": HttpFrontend(dataplane, governance=governance),
    }
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v2/models/tiny_onnx/infer",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/octet-stream"),
            (b"inference-header-content-length", str(header_length).encode()),
            (b"x-api-key", KEY.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    message = {"type": "http.request", "body": body, "more_body": False}
    statuses: set[int] = set()

    async def receive() -> dict[str, Any]:
        return message

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            statuses.add(event["status"])

    gc.collect()
    gc.freeze()
    calls = 5000
    best = {name: float("inf") for name in apps}
    for _ in range(30):
        for name, app in apps.items():
            start = time.perf_counter()
            for _ in range(calls):
                await app(scope, receive, send)
            await asyncio.sleep(0)  # lets the lease's background fetch run
            best[name] = min(best[name], 1e6 * (time.perf_counter() - start) / calls)
    assert statuses == {200}, statuses
    await governance.aclose()
    return best


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--servers", type=int, default=2, help="server processes per side")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("bench/out/governance_cost.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name, running_redis(Path(tmp_name)) as redis:
        tmp = Path(tmp_name)
        repository = tmp / "models"
        build_example_repository(repository, text_models=False)
        service = tmp / "service.yaml"
        service.write_text(
            "service: com.example.bench.tiny\n"
            "auth:\n  enabled: true\n  principals:\n    bench:\n"
            f'      api_keys: ["{hash_secret(KEY)}"]\n      allow: {{infer: ["*"]}}\n'
            "limits:\n  infer:\n    cluster_qps: 1000000\n"
            f'cluster:\n  redis_url: "{redis.url}"\n  lease_chunk: 50\n'
        )
        body, header_length = binary_request("input", example_inputs("tiny_onnx", 1)["input"])
        (tmp / "body.bin").write_bytes(body)
        script = tmp / "req.lua"
        script.write_text(
            LUA.format(body=tmp / "body.bin", header_length=header_length)
            + f'wrk.headers["x-api-key"] = "{KEY}"\n'
        )
        sides = {"chain_off": [], "chain_on": ["--service-config", str(service)]}
        servers: dict[str, tuple[str, Server]] = {}  # "chain_on/1" -> (side, server)
        for index in range(args.servers):
            for side, extra in sides.items():
                port = free_port()
                servers[f"{side}/{index}"] = side, Server(
                    [sys.executable, "-m", "modelyard.cli.main", "serve", "--model-repository",
                     str(repository), "--http-port", str(port), "--grpc-port", "-1",
                     "--metrics-port", "-1", "--model-control-mode", "explicit",
                     "--load-model", "tiny_onnx", *extra],
                    port,
                    "/v2/health/ready",
                )  # fmt: skip
        try:
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
            for _, server in servers.values():
                url = f"http://127.0.0.1:{server.port}/v2/models/tiny_onnx/infer"
                wrk(url, script, args.connections, 2)
            order = list(servers.items())
            for _ in range(args.rounds):
                order.reverse()  # A B B A ...: a drift over the run favours neither
                for name, (_, server) in order:
                    url = f"http://127.0.0.1:{server.port}/v2/models/tiny_onnx/infer"
                    cpu_before = _cpu_seconds(server.process.pid)
                    point = wrk(url, script, args.connections, args.seconds)
                    assert point["non_2xx"] == 0, (name, point)
                    cpu = _cpu_seconds(server.process.pid) - cpu_before
                    point["cpu_us_per_request"] = (
                        1e6 * cpu / (point["requests_per_s"] * args.seconds)
                    )
                    runs[name].append(point)
        finally:
            for _, server in servers.values():
                server.stop()
        in_process = asyncio.run(_in_process_us(service, body, header_length))
    names_of = {side: [n for n, (s, _) in servers.items() if s == side] for side in sides}

    def side_mean(side: str, round_index: int, key: str) -> float:
        return statistics.mean(runs[name][round_index][key] for name in names_of[side])

    ratios = [
        side_mean("chain_on", r, "requests_per_s") / side_mean("chain_off", r, "requests_per_s")
        for r in range(args.rounds)
    ]
    per_server = {name: statistics.median(p["requests_per_s"] for p in runs[name]) for name in runs}
    spread = {
        side: max(per_server[n] for n in names) / min(per_server[n] for n in names) - 1
        for side, names in names_of.items()
    }
    cpu_per_request = {
        side: statistics.median(p["cpu_us_per_request"] for n in names for p in runs[n])
        for side, names in names_of.items()
    }
    throughput = {
        side: statistics.median(p["requests_per_s"] for n in names for p in runs[n])
        for side, names in names_of.items()
    }
    chain_us = in_process["chain_on"] - in_process["chain_off"]
    request_us = 1e6 / throughput["chain_off"]
    report = {
        "connections": args.connections,
        "servers_per_side": args.servers,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "runs": runs,
        "median_requests_per_s": throughput,
        "median_requests_per_s_per_server": per_server,
        "same_side_spread": spread,
        "ratio_per_round": ratios,
        "cost": 1 - statistics.median(ratios),
        "median_cpu_us_per_request": cpu_per_request,
        "cost_from_served_cpu": 1 - cpu_per_request["chain_off"] / cpu_per_request["chain_on"],
        "in_process_us_per_call": in_process,
        "chain_us_per_call": chain_us,
        "served_us_per_request_chain_off": request_us,
        "cost_from_cpu": chain_us / request_us,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
