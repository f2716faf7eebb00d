"""INT8-dynamic vs FP32 for the compute-heavy MLP, served, in one run.

    python bench/quantized_served.py [--seconds 6]

Builds mlp_onnx, writes its int8-dynamic variant as version 2 with
`modelyard optimize`'s code, serves both versions from one server pinned to
core 0 and loads each alternately with wrk (core 1) at concurrency 16, 16 rows
per request. Accuracy agreement comes from the optimize report on the
example rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import Server, binary_request, binary_script, wrk  # noqa: E402

from modelyard.examples.build import build_mlp_onnx, example_inputs  # noqa: E402
from modelyard.optimize.quantize import write_variant  # noqa: E402
from modelyard.optimize.report import accuracy_report  # noqa: E402
from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_port  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=Path("bench/out/quantized_served.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        repository = tmp / "models"
        build_mlp_onnx(repository, seed=0)
        model_dir = repository / "mlp_onnx"
        original, converted = write_variant(model_dir, "int8-dynamic")
        accuracy = accuracy_report(original, converted, example_inputs("mlp_onnx", 512))
        config = (model_dir / "config.pbtxt").read_text()
        (model_dir / "config.pbtxt").write_text(config + "\nversion_policy { all {} }\n")
        body, header_length = binary_request("input", example_inputs("mlp_onnx", 16)["input"])
        (tmp / "body.bin").write_bytes(body)
        script = tmp / "req.lua"
        script.write_text(binary_script(tmp / "body.bin", header_length))
        port = free_port()
        server = Server(
            serve_command(repository, http_port=port),
            port,
            "/v2/health/ready",
        )
        runs: dict[str, list[float]] = {"fp32_v1": [], "int8_v2": []}
        try:
            for _ in range(2):
                for name, version in (("fp32_v1", 1), ("int8_v2", 2)):
                    url = f"http://127.0.0.1:{port}/v2/models/mlp_onnx/versions/{version}/infer"
                    wrk(url, script, 16, 1)
                    runs[name].append(wrk(url, script, 16, args.seconds)["requests_per_s"] * 16)
        finally:
            server.stop()
    rows = {name: sum(values) / len(values) for name, values in runs.items()}
    report = {
        "rows_per_s": rows,
        "runs": runs,
        "speedup": rows["int8_v2"] / rows["fp32_v1"],
        "accuracy": accuracy["outputs"]["output"],
        "size_ratio": accuracy["size_ratio"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
