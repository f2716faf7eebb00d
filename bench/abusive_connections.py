"""What abusive connections cost the HTTP port, and what well-behaved callers see meanwhile.

    python bench/abusive_connections.py [--wait 40] [--idle 4000] [--slow 50] [--out FILE]

Needs `wrk`. Starts `modelyard serve` on the example repository (server on core
0; wrk and this script on core 1) with its default connection limits, then:

1. idle sockets that never send a byte, and a keep-alive socket after one
   request: seconds until the server closes them (``--wait`` at most);
2. slowloris: request headers, or a body, one byte every 100 ms: seconds until
   the server answers or cuts, and with what status;
3. a 100 MiB header value: the status, the seconds, the server's RSS growth;
4. tiny_onnx infer p50/p99 (wrk, 8 connections) and /v2/health/live p50, first
   unloaded, then while ``--idle`` idle sockets and ``--slow`` slowloris sockets
   are held open.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batching import Server, binary_request, binary_script, wrk  # noqa: E402

from modelyard.examples.build import build_example_repository, example_inputs  # noqa: E402
from modelyard.processes import serve_command  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

HEAD = b"POST /v2/models/tiny_onnx/infer HTTP/1.1\r\nhost: bench\r\n"


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _closed(sock: socket.socket) -> tuple[bool, bytes]:
    """Whether the server has closed ``sock`` (or answered), without blocking."""
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return False, b""
    except OSError:
        return True, b""
    finally:
        sock.setblocking(True)
    return True, data


def _status(data: bytes) -> int | None:
    if data.startswith(b"HTTP/1.1 "):
        return int(data[9:12])
    return None


def _read_response(sock: socket.socket) -> bytes:
    """One whole response with a content-length, read off a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def seconds_until_closed(port: int, wait: float, prelude: bytes = b"") -> dict[str, Any]:
    sock = _connect(port)
    if prelude:
        sock.sendall(prelude)
        _read_response(sock)
    start = time.monotonic()
    try:
        while time.monotonic() - start < wait:
            closed, _ = _closed(sock)
            if closed:
                return {"closed_after_s": round(time.monotonic() - start, 1)}
            time.sleep(0.1)
        return {"closed_after_s": None, "open_at_s": wait}
    finally:
        sock.close()


def slowloris(port: int, wait: float, body: bool) -> dict[str, Any]:
    """One byte every 100 ms, of the headers or of a declared 1 MB body."""
    sock = _connect(port)
    if body:
        sock.sendall(HEAD + b"content-length: 1000000\r\n\r\n")
    else:
        sock.sendall(HEAD)
    start = time.monotonic()
    try:
        while time.monotonic() - start < wait:
            closed, data = _closed(sock)
            if closed:
                elapsed = round(time.monotonic() - start, 1)
                return {"cut_after_s": elapsed, "status": _status(data)}
            try:
                sock.sendall(b"a")
            except OSError:
                return {"cut_after_s": round(time.monotonic() - start, 1), "status": None}
            time.sleep(0.1)
        return {"cut_after_s": None, "connected_at_s": wait}
    finally:
        sock.close()


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def huge_header(port: int, pid: int, size: int) -> dict[str, Any]:
    before = _rss_kib(pid)
    sock = _connect(port)
    start = time.monotonic()
    status: int | None = None
    sent = 0
    try:
        sock.sendall(HEAD + b"x-big: ")
        chunk = b"a" * (1 << 20)
        while sent < size:
            sock.sendall(chunk)
            sent += len(chunk)
        sock.sendall(b"\r\ncontent-length: 0\r\n\r\n")
        sock.settimeout(60)
        status = _status(sock.recv(65536))
    except OSError:
        sock.settimeout(2)
        try:
            status = _status(sock.recv(65536))
        except OSError:
            status = None
    finally:
        sock.close()
    return {
        "status": status,
        "seconds": round(time.monotonic() - start, 2),
        "header_bytes_sent": sent,
        "rss_growth_mb": round((_rss_kib(pid) - before) / 1024, 1),
    }


def health_p50_ms(port: int, calls: int = 200) -> float:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            client.get("/v2/health/live")
            times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 3)


class HeldSockets:
    """``idle`` sockets that never send, ``slow`` that send a header byte every 100 ms."""

    def __init__(self, port: int, idle: int, slow: int) -> None:
        self.idle = [_connect(port) for _ in range(idle)]
        self.slow = [_connect(port) for _ in range(slow)]
        for sock in self.slow:
            sock.sendall(HEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, daemon=True)
        self._thread.start()

    def _drip(self) -> None:
        while not self._stop.wait(0.1):
            for sock in self.slow:
                with contextlib.suppress(OSError):
                    sock.sendall(b"a")

    def open_count(self) -> int:
        return sum(not _closed(sock)[0] for sock in self.idle + self.slow)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.idle + self.slow:
            sock.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wait", type=float, default=40.0)
    parser.add_argument("--idle", type=int, default=4000)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=Path("bench/out/abusive_connections.json"))
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        repository = tmp / "models"
        build_example_repository(repository, text_models=False)
        body, header_length = binary_request("input", example_inputs("tiny_onnx", 1)["input"])
        (tmp / "body.bin").write_bytes(body)
        script = tmp / "request.lua"
        script.write_text(binary_script(tmp / "body.bin", header_length))
        port = free_port()
        server = Server(
            serve_command(repository, http_port=port, model_control_mode="explicit",
                          load_model=["tiny_onnx"]),
            port,
            "/v2/health/ready",
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}/v2/models/tiny_onnx/infer"
        one_request = (
            HEAD
            + f"content-length: {len(body)}\r\n"
            f"inference-header-content-length: {header_length}\r\n\r\n".encode()
            + body
        )
        try:
            wrk(url, script, 8, 2)  # warm up
            report["idle_socket"] = seconds_until_closed(port, args.wait)
            report["keep_alive_after_request"] = seconds_until_closed(port, args.wait, one_request)
            report["slowloris_headers"] = slowloris(port, args.wait, body=False)
            report["slowloris_body"] = slowloris(port, args.wait, body=True)
            report["header_100_mib"] = huge_header(port, server.process.pid, 100 << 20)
            unloaded = wrk(url, script, 8, args.seconds)
            report["unloaded"] = {
                "infer_p50_ms": unloaded["p50_ms"],
                "infer_p99_ms": unloaded["p99_ms"],
                "infer_requests_per_s": unloaded["requests_per_s"],
                "health_p50_ms": health_p50_ms(port),
            }
            held = HeldSockets(port, args.idle, args.slow)
            try:
                time.sleep(1)
                loaded = wrk(url, script, 8, args.seconds)
                report["while_held"] = {
                    "held_open": held.open_count(),
                    "infer_p50_ms": loaded["p50_ms"],
                    "infer_p99_ms": loaded["p99_ms"],
                    "infer_requests_per_s": loaded["requests_per_s"],
                    "infer_non_2xx": loaded["non_2xx"],
                    "health_p50_ms": health_p50_ms(port),
                }
            finally:
                held.close()
            report["p99_while_held_over_unloaded"] = round(
                report["while_held"]["infer_p99_ms"] / report["unloaded"]["infer_p99_ms"], 2
            )
        finally:
            server.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
