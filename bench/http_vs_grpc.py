"""Single-connection throughput of one model over HTTP (binary tensors) and gRPC (raw contents).

    python bench/http_vs_grpc.py [--seconds 5] [--model tiny_onnx] [--rows 1]

One ``modelyard serve`` process, one tritonclient of each kind, one request at
a time. Client and server share the machine, so the ratio is the result.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modelyard.examples.build import build_example_repository, example_inputs
from tests.support.servers import running_server


def measure(call: Callable[[], object], seconds: float) -> dict[str, float]:
    for _ in range(200):
        call()
    latencies: list[float] = []
    end = time.perf_counter() + seconds
    while (start := time.perf_counter()) < end:
        call()
        latencies.append(time.perf_counter() - start)
    latencies.sort()
    return {
        "req_per_s": len(latencies) / sum(latencies),
        "p50_us": statistics.median(latencies) * 1e6,
        "p99_us": latencies[int(len(latencies) * 0.99)] * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--model", default="tiny_onnx")
    parser.add_argument("--rows", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "models"
        build_example_repository(repository, text_models=False)
        extra = ("--model-control-mode", "explicit", "--load-model", args.model)
        with running_server(repository, Path(tmp), *extra) as server:
            inputs = example_inputs(args.model, args.rows)
            http = httpclient.InferenceServerClient(server.http_url)
            grpc = grpcclient.InferenceServerClient(server.grpc_url)
            metadata = http.get_model_metadata(args.model)
            datatypes = {i["name"]: i["datatype"] for i in metadata["inputs"]}
            outputs = [o["name"] for o in metadata["outputs"]]

            http_inputs = []
            grpc_inputs = []
            for name, array in inputs.items():
                h = httpclient.InferInput(name, list(array.shape), datatypes[name])
                h.set_data_from_numpy(array, binary_data=True)
                http_inputs.append(h)
                g = grpcclient.InferInput(name, list(array.shape), datatypes[name])
                g.set_data_from_numpy(array)
                grpc_inputs.append(g)
            http_outputs = [httpclient.InferRequestedOutput(o, binary_data=True) for o in outputs]
            grpc_outputs = [grpcclient.InferRequestedOutput(o) for o in outputs]

            results = {
                "http": measure(
                    lambda: http.infer(args.model, http_inputs, outputs=http_outputs),
                    args.seconds,
                ),
                "grpc": measure(
                    lambda: grpc.infer(args.model, grpc_inputs, outputs=grpc_outputs),
                    args.seconds,
                ),
            }
            http.close()
            grpc.close()
    print(f"{args.model}, {args.rows} row(s), one connection, {args.seconds:.0f} s each")
    for protocol, r in results.items():
        print(
            f"  {protocol:5s} {r['req_per_s']:8.0f} req/s   p50 {r['p50_us']:7.0f} us"
            f"   p99 {r['p99_us']:7.0f} us"
        )


if __name__ == "__main__":
    main()
