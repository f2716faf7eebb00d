"""A 4 MB tensor in and out: system shared memory against binary HTTP, in one run.

    python bench/shared_memory.py [--calls 200] [--rounds 3] [--mb 4]

One `modelyard serve --allow-client-shm=true` (pinned to core 0) serves an ONNX
Identity model over FP32 [1, N]; the client (tritonclient.http, core 1) sends the
same tensor N calls at a time, one call in flight, either as binary data in the
body with the output asked for as binary data, or with the input and output in
registered system shared-memory regions. Rounds alternate the two ways. Printed:
median latency per call and calls/s of each, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import Server  # noqa: E402

from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_ports  # noqa: E402


def identity_model(repository: Path, elements: int) -> None:
    import onnx
    from onnx import TensorProto, helper

    def tensor(name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", elements])

    graph = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        "identity",
        [tensor("INPUT0")],
        [tensor("OUTPUT0")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (repository / "identity" / "1").mkdir(parents=True)
    onnx.save(model, repository / "identity" / "1" / "model.onnx")
    (repository / "identity" / "config.pbtxt").write_text(
        'platform: "onnxruntime_onnx"\nmax_batch_size: 1\n'
        f'input {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ {elements} ] }}\n'
        f'output {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ {elements} ] }}\n'
    )


def timed(calls: int, call: object) -> list[float]:
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=4)
    args = parser.parse_args()
    elements = args.mb * 1024 * 1024 // 4
    size = elements * 4
    data = np.random.default_rng(0).random((1, elements), dtype=np.float32)
    os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "models"
        identity_model(repository, elements)
        port, grpc_port, metrics_port = free_ports(3)
        command = serve_command(
            repository, http_port=port, grpc_port=grpc_port, metrics_port=metrics_port
        )
        server = Server([*command, "--allow-client-shm=true"], port, "/v2/health/ready")
        client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        key_in, key_out = f"/bench_in_{os.getpid()}", f"/bench_out_{os.getpid()}"
        region_in = shm.create_shared_memory_region("in", key_in, size)
        region_out = shm.create_shared_memory_region("out", key_out, size)
        try:
            shm.set_shared_memory_region(region_in, [data])
            client.register_system_shared_memory("in", key_in, size)
            client.register_system_shared_memory("out", key_out, size)

            def binary() -> None:
                item = httpclient.InferInput("INPUT0", [1, elements], "FP32")
                item.set_data_from_numpy(data, binary_data=True)
                out = httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)
                result = client.infer("identity", [item], outputs=[out])
                assert result.as_numpy("OUTPUT0").shape == (1, elements)

            def shared() -> None:
                item = httpclient.InferInput("INPUT0", [1, elements], "FP32")
                item.set_shared_memory("in", size)
                out = httpclient.InferRequestedOutput("OUTPUT0")
                out.set_shared_memory("out", size)
                client.infer("identity", [item], outputs=[out])
                result = shm.get_contents_as_numpy(region_out, np.float32, [1, elements])
                assert result.shape == (1, elements)

            binary()
            shared()
            np.testing.assert_array_equal(
                shm.get_contents_as_numpy(region_out, np.float32, [1, elements]), data
            )
            medians: dict[str, list[float]] = {"binary HTTP": [], "shared memory": []}
            for round_index in range(args.rounds):
                ways = [("binary HTTP", binary), ("shared memory", shared)]
                if round_index % 2:
                    ways.reverse()
                for name, call in ways:
                    medians[name].append(statistics.median(timed(args.calls, call)))
            print(f"{args.mb} MB FP32 in and out, {args.calls} calls x {args.rounds} rounds, c=1")
            print("| way | median latency (ms), per round | calls/s (best round) |")
            print("|---|---|---|")
            for name, values in medians.items():
                per_round = " / ".join(f"{v * 1000:.2f}" for v in values)
                print(f"| {name} | {per_round} | {1 / min(values):.0f} |")
            ratio = statistics.median(medians["binary HTTP"]) / statistics.median(
                medians["shared memory"]
            )
            print(f"binary HTTP / shared memory latency: {ratio:.2f}")
        finally:
            client.unregister_system_shared_memory()
            client.close()
            shm.destroy_shared_memory_region(region_in)
            shm.destroy_shared_memory_region(region_out)
            server.stop()


if __name__ == "__main__":
    main()
