"""What discovery costs: the SDK's added latency, and the gateway's throughput, vs direct.

    python bench/client_gateway.py [--seconds 6] [--calls 2000]

One self-registering instance (embedded registry) serving tiny_onnx, and a
gateway process in front of it. In one run:
- p50 of sequential calls: tritonclient.http straight to the instance vs the
  modelyard Client (service name + model, HTTP transport);
- wrk throughput and p50/p99 at 16 connections: straight to the instance vs
  through the gateway. The instance and the gateway share core 0; wrk is on 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import tritonclient.http as httpclient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import binary_request, binary_script, wrk  # noqa: E402

from modelyard.client import Client  # noqa: E402
from modelyard.examples.build import build_tiny_onnx, example_inputs  # noqa: E402
from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_ports, wait_until  # noqa: E402

SERVICE = "com.example.bench.tiny"


def _ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def sequential_p50(call, calls: int) -> float:  # type: ignore[no-untyped-def]
    for _ in range(50):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("bench/out/client_gateway.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        repository = tmp / "models"
        build_tiny_onnx(repository, seed=0)
        registry = f"embedded://{tmp / 'registry.db'}"
        http, grpc, metrics, gw_http, gw_grpc = free_ports(5)
        common = [sys.executable, "-m", "modelyard.cli.main"]
        instance = subprocess.Popen(
            [
                "taskset",
                "-c",
                "0",
                *serve_command(
                    repository,
                    http_port=http,
                    grpc_port=grpc,
                    metrics_port=metrics,
                    service=SERVICE,
                    group="cpu",
                    registry=registry,
                ),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        gateway = subprocess.Popen(
            [
                "taskset",
                "-c",
                "0",
                *common,
                "gateway",
                "--service",
                SERVICE,
                "--registry",
                registry,
                "--http-port",
                str(gw_http),
                "--grpc-port",
                str(gw_grpc),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(lambda: _ready(f"http://127.0.0.1:{http}/v2/health/ready"), timeout=60)
            wait_until(
                lambda: _ready(f"http://127.0.0.1:{gw_http}/v2/models/tiny_onnx/config"),
                timeout=60,
            )
            x = example_inputs("tiny_onnx", 1)["input"]
            direct = httpclient.InferenceServerClient(f"127.0.0.1:{http}")
            item = httpclient.InferInput("input", list(x.shape), "FP32")
            item.set_data_from_numpy(x, binary_data=True)
            with Client(SERVICE, registry) as client:
                client.infer("tiny_onnx", {"input": x})
                latency = {
                    "direct_tritonclient_p50_ms": sequential_p50(
                        lambda: direct.infer("tiny_onnx", [item]), args.calls
                    ),
                    "modelyard_client_p50_ms": sequential_p50(
                        lambda: client.infer("tiny_onnx", {"input": x}), args.calls
                    ),
                }
            body, header_length = binary_request("input", x.astype(np.float32))
            (tmp / "body.bin").write_bytes(body)
            script = tmp / "req.lua"
            script.write_text(binary_script(tmp / "body.bin", header_length))
            throughput = {}
            for name, port in (("direct", http), ("gateway", gw_http), ("direct_again", http)):
                url = f"http://127.0.0.1:{port}/v2/models/tiny_onnx/infer"
                wrk(url, script, 16, 1)
                throughput[name] = wrk(url, script, 16, args.seconds)
        finally:
            for process in (gateway, instance):
                process.terminate()
                process.wait(20)
    report = {
        "latency": latency,
        "client_added_p50_ms": latency["modelyard_client_p50_ms"]
        - latency["direct_tritonclient_p50_ms"],
        "throughput_c16": throughput,
        "gateway_vs_direct": throughput["gateway"]["requests_per_s"]
        / (
            (throughput["direct"]["requests_per_s"] + throughput["direct_again"]["requests_per_s"])
            / 2
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
