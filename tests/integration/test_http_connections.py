"""The HTTP port's bounds on connections, against a real `modelyard serve` with short limits."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from modelyard.processes import serve_command
from tests.support.servers import ServerProcess, running_server

pytestmark = pytest.mark.slow

INFER = b"POST /v2/models/iris_sklearn/infer HTTP/1.1\r\nhost: test\r\n"
BODY = json.dumps(
    {
        "inputs": [
            {"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}
        ]
    }
).encode()
MAX_CONNECTIONS = 20


@pytest.fixture(scope="module")
def server(
    example_repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    with running_server(
        example_repository,
        tmp_path_factory.mktemp("logs"),
        "--model-control-mode", "explicit", "--load-model", "iris_sklearn",
        "--http-idle-timeout", "1", "--http-header-timeout", "1", "--http-body-timeout", "1",
        "--http-max-header-bytes", "4096", "--http-max-connections", str(MAX_CONNECTIONS),
    ) as process:  # fmt: skip
        yield process


def _connect(server: ServerProcess) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The server's whole answer on a connection it closes after answering."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def _response(sock: socket.socket) -> bytes:
    """One whole response off a connection the server keeps open; its head."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _more(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += _more(sock)
    return head


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    assert chunk, "the server closed the connection mid-answer"
    return chunk


def _error_line(body: bytes) -> str:
    line = json.loads(body)["error"]
    assert line.startswith("[protocol] ") and "; rule=protocol/" in line and "; change: " in line
    return line


def _infer(server: ServerProcess) -> None:
    response = httpx.post(f"http://{server.http_url}/v2/models/iris_sklearn/infer", content=BODY)
    assert response.status_code == 200
    assert response.json()["outputs"][0]["data"] == [0]


def _seconds_until_closed(sock: socket.socket, limit: float) -> float:
    start = time.monotonic()
    sock.settimeout(limit)
    assert sock.recv(65536) == b""  # closed without an answer: a timeout raises instead
    return time.monotonic() - start


def test_a_socket_that_never_sends_is_closed_after_the_idle_timeout(server: ServerProcess) -> None:
    with _connect(server) as sock:
        assert 0.7 < _seconds_until_closed(sock, 5) < 3
    _infer(server)


def test_a_keep_alive_connection_is_closed_after_the_idle_timeout(server: ServerProcess) -> None:
    with _connect(server) as sock:
        sock.sendall(INFER + f"content-length: {len(BODY)}\r\n\r\n".encode() + BODY)
        assert _response(sock).startswith(b"HTTP/1.1 200 ")
        assert 0.7 < _seconds_until_closed(sock, 5) < 3


def test_a_connection_answered_before_its_body_is_in_is_still_closed_when_idle(
    server: ServerProcess,
) -> None:
    with _connect(server) as sock:
        sock.sendall(INFER + b"content-length: 100000000\r\n\r\n" + b"x" * 10)  # over the limit
        assert _response(sock).startswith(b"HTTP/1.1 413 ")
        sock.sendall(b"x" * 1000)  # some of the body the server no longer reads
        assert _seconds_until_closed(sock, 5) < 3


def test_headers_sent_a_byte_at_a_time_get_408_with_the_error_line(server: ServerProcess) -> None:
    with _connect(server) as sock:
        sock.sendall(INFER)
        start = time.monotonic()
        while not select.select([sock], [], [], 0.1)[0]:
            assert time.monotonic() - start < 10, "still reading the headers after 10 s"
            sock.sendall(b"x")
        assert time.monotonic() - start < 4
        status, headers, body = _answer(sock)
    assert status == 408 and headers["connection"] == "close"
    assert "rule=protocol/header-timeout" in _error_line(body)
    _infer(server)


def test_a_body_that_stalls_gets_408_with_the_error_line(server: ServerProcess) -> None:
    with _connect(server) as sock:
        sock.sendall(INFER + b"content-length: 1000\r\n\r\n" + BODY[:10])
        status, _, body = _answer(sock)
    assert status == 408
    line = _error_line(body)
    assert "rule=protocol/body-timeout" in line and "--http-body-timeout" in line


@pytest.mark.parametrize("chunks", [1, 64], ids=["at-once", "streamed"])
def test_a_header_block_over_the_limit_gets_431(server: ServerProcess, chunks: int) -> None:
    with _connect(server) as sock:
        sock.sendall(INFER + b"x-big: ")
        for _ in range(chunks):
            sock.sendall(b"a" * 8192)
        sock.sendall(b"\r\ncontent-length: 0\r\n\r\n")
        status, _, body = _answer(sock)
    assert status == 431
    line = _error_line(body)
    assert "over the limit of 4096 bytes" in line and "--http-max-header-bytes" in line
    _infer(server)


def test_a_header_block_just_under_the_limit_is_served(server: ServerProcess) -> None:
    response = httpx.post(
        f"http://{server.http_url}/v2/models/iris_sklearn/infer",
        content=BODY,
        headers={"x-filler": "a" * 3000},
    )
    assert response.status_code == 200


def test_pipelined_requests_get_whole_answers_in_order(server: ServerProcess) -> None:
    sock = _connect(server)
    request = INFER + b"content-length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
    health = b"GET /v2/health/live HTTP/1.1\r\nhost: test\r\n\r\n"
    sock.sendall(request + health + request)  # three requests in one segment
    data = b""
    answers: list[tuple[bytes, bytes]] = []
    while len(answers) < 3:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(rest) >= length:
                answers.append((head, rest[:length]))
                data = rest[length:]
                continue
        chunk = sock.recv(65536)
        assert chunk, f"closed after {len(answers)} answers"
        data += chunk
    sock.close()
    assert [head.split(b"\r\n")[0] for head, _ in answers] == [b"HTTP/1.1 200 OK"] * 3
    assert json.loads(answers[0][1])["outputs"][0]["data"] == [0]
    assert answers[1][1] == b""
    assert answers[2][1] == answers[0][1]
    assert data == b""


def test_a_malformed_request_gets_400_with_the_error_line(server: ServerProcess) -> None:
    with _connect(server) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status, _, body = _answer(sock)
    assert status == 400
    assert "rule=protocol/http" in _error_line(body)


def test_a_chunked_body_that_also_declares_a_length_is_read_by_its_chunks_then_closed(
    server: ServerProcess,
) -> None:
    """Triton reads such a body (its QA suite sends one); RFC 9112 6.1: Transfer-Encoding
    wins, and the connection closes after the answer, so nothing can be smuggled after it."""
    chunked = f"{len(BODY):X}\r\n".encode() + BODY + b"\r\n0\r\n\r\n"
    with _connect(server) as sock:
        sock.sendall(
            b"POST /v2/models/iris_sklearn/infer HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + chunked
        )
        status, headers, body = _answer(sock)  # reads until the server closes
    assert status == 200 and headers["connection"] == "close"
    assert json.loads(body)["outputs"][0]["data"] == [0]


def test_connections_past_the_limit_get_503_and_the_rest_are_served(server: ServerProcess) -> None:
    held = [_connect(server) for _ in range(MAX_CONNECTIONS + 5)]
    try:
        time.sleep(0.3)  # well inside the idle timeout: only refused ones have an answer
        refused = select.select(held, [], [], 0)[0]
        assert 5 <= len(refused) <= 6  # the test client's own earlier sockets may linger
        for sock in refused:
            status, headers, body = _answer(sock)
            assert status == 503 and headers["retry-after"] == "1"
            assert "rule=protocol/max-connections" in _error_line(body)
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    _infer(server)


def test_a_limit_that_is_not_positive_is_refused_at_start(example_repository: Path) -> None:
    result = subprocess.run(
        serve_command(example_repository, http_port=0, http_header_timeout=0),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--http-header-timeout must be positive, got 0" in result.stderr
    assert "rule=serve/http-limits" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_an_http_port_in_use_ends_the_command_with_an_error_line(
    command: str, example_repository: Path, tmp_path: Path
) -> None:
    own = {
        "serve": ["--model-repository", str(example_repository), "--metrics-port", "-1"],
        "gateway": ["--service", "com.example.none", "--registry",
                    f"embedded://{tmp_path / 'registry.db'}"],
    }[command]  # fmt: skip
    (tmp_path / "registry.db").touch()  # a gateway reads a registry that exists
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "modelyard.cli.main", command, *own,
             "--http-port", str(port), "--grpc-port", "-1"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode != 0
    assert (  # Triton's words, then the rule and where to change it
        f"[config] failed to start HTTP service: Unavailable - Socket '127.0.0.1:{port}' "
        "already in use" in result.stderr
    )
    assert "rule=config/http-port; change: --http-port" in result.stderr
    assert "Traceback" not in result.stderr
