"""Which HTTP server stack: the floor of each candidate, measured in one run.

    python bench/http_stack.py [--seconds 4] [--rounds 3] [--out bench/out/http_stack.json]

Needs `wrk` and granian (`pip install granian`; in the `bench` extra). Each
candidate serves `bare_asgi.py`'s endpoint (read the body, answer a constant)
from one process pinned to core 0; wrk runs on core 1 and sends the binary
tiny_onnx request of `batching.py`. Rounds interleave the candidates. The first
candidate is modelyard's stack as served (its bounded connection protocol,
`frontdoors/http_connections.py`); the second is the same with uvicorn's own
httptools protocol, so the pair says what the connection bounds cost. The
stack's floor bounds what any application on it can reach: modelyard serves
on the candidate with the best floor at the concurrencies it is judged at.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import Server, binary_request, binary_script, wrk  # noqa: E402

from modelyard.examples.build import example_inputs  # noqa: E402
from tests.support.servers import free_port  # noqa: E402


def candidates(port: int) -> dict[str, list[str]]:
    granian = [
        sys.executable, "-m", "granian", "--port", str(port), "--workers", "1",
        "--loop", "uvloop", "--no-ws", "--log-level", "warning",
        "--working-dir", str(ROOT / "bench"),
    ]  # fmt: skip
    return {
        "uvicorn+httptools+uvloop (ASGI)": [
            sys.executable, str(ROOT / "bench" / "bare_asgi.py"), str(port)
        ],
        "the same, uvicorn's own unbounded protocol": [
            sys.executable, str(ROOT / "bench" / "bare_asgi.py"), str(port), "plain"
        ],
        "granian (ASGI)": [*granian, "--interface", "asgi", "bare_asgi:app"],
        "granian (RSGI)": [*granian, "--interface", "rsgi", "bare_asgi:rsgi_app"],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/out/http_stack.json"))
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("needs wrk (apt-get install wrk)")
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        body, header_length = binary_request("input", example_inputs("tiny_onnx", 1)["input"])
        (tmp / "body.bin").write_bytes(body)
        script = tmp / "request.lua"
        script.write_text(binary_script(tmp / "body.bin", header_length))
        ports = {name: free_port() for name in candidates(0)}
        servers = {name: Server(candidates(port)[name], port, "/") for name, port in ports.items()}
        try:
            for port in ports.values():
                wrk(f"http://127.0.0.1:{port}/", script, 16, 1)
            for _ in range(args.rounds):
                for c in (1, 16, 64):
                    for name, port in ports.items():
                        point = wrk(f"http://127.0.0.1:{port}/", script, c, args.seconds)
                        results.setdefault(name, {}).setdefault(f"c{c}", []).append(
                            point["requests_per_s"]
                        )
        finally:
            for server in servers.values():
                server.stop()
    report = {
        name: {c: statistics.median(values) for c, values in points.items()}
        for name, points in results.items()
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"requests_per_s_median": report, "rounds": results}, indent=2))
    for name, points in report.items():
        print(f"{name:34s} " + "  ".join(f"{c}: {v:8,.0f}" for c, v in points.items()))


if __name__ == "__main__":
    main()
