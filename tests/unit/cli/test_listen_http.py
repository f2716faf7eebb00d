"""A front door's port in use: the error line names the front door and where its port is set."""

from __future__ import annotations

import socket

import pytest

from modelyard.cli.runtime import listen_http
from modelyard.errors import ConfigError


def test_a_port_in_use_names_its_front_door() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with pytest.raises(ConfigError) as v2:
            listen_http("127.0.0.1", port)
        assert "failed to start HTTP service" in v2.value.line()
        assert "change: --http-port" in v2.value.line()
        with pytest.raises(ConfigError) as vertex:
            listen_http("127.0.0.1", port, service="Vertex AI",
                        where="tritonserver --vertex-ai-port")  # fmt: skip
        line = vertex.value.line()
        assert "failed to start Vertex AI service" in line, line
        assert f"'127.0.0.1:{port}' already in use" in line
        assert "change: tritonserver --vertex-ai-port" in line
    finally:
        taken.close()
