"""http_connections.py extends uvicorn's httptools protocol, which is not a public API: the
project pins the uvicorn whose internals it reads, and these tests fail when the installed
uvicorn is not that one or lacks what the extension reads."""

from __future__ import annotations

import asyncio
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http import httptools_impl
from uvicorn.server import ServerState

from modelyard.frontdoors.http_connections import BoundedHttpProtocol

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def _pinned_uvicorn() -> str:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (spec,) = [d for d in dependencies if d.startswith("uvicorn")]
    match = re.fullmatch(r"uvicorn(\[[a-z,]+\])?==([0-9.]+)", spec)
    assert match is not None, f"uvicorn is not pinned to one version: {spec!r}"
    return match.group(2)


def test_the_installed_uvicorn_is_the_pinned_one() -> None:
    assert metadata.version("uvicorn") == _pinned_uvicorn()


def test_what_the_bounded_protocol_reads_of_uvicorn_is_there() -> None:
    assert httptools_impl.STATUS_LINE[200].startswith(b"HTTP/1.1 200")
    assert issubclass(BoundedHttpProtocol, httptools_impl.HttpToolsProtocol)
    overridden = [
        "connection_made", "data_received", "on_header", "on_headers_complete", "on_body",
        "on_message_complete",
    ]  # fmt: skip
    called = ["on_response_complete", "_unset_keepalive_if_required"]
    for name in overridden + called:
        assert callable(getattr(httptools_impl.HttpToolsProtocol, name, None)), name
    cycle_fields = ["body", "more_body", "message_event", "response_complete", "keep_alive"]
    cycle_init = httptools_impl.RequestResponseCycle.__init__.__code__.co_names
    for name in cycle_fields:
        assert name in cycle_init, name
    assert "url" in httptools_impl.HttpToolsProtocol.on_url.__code__.co_names  # the path read


@pytest.mark.parametrize("name", ["parser", "scope", "headers", "cycle", "server_state",
                                  "connections", "loop", "expect_100_continue"])  # fmt: skip
def test_a_protocol_instance_has_the_state_the_extension_reads(name: str) -> None:
    async def made() -> httptools_impl.HttpToolsProtocol:
        config = Config(app=lambda scope, receive, send: None, http="httptools")
        config.load()
        return httptools_impl.HttpToolsProtocol(config, ServerState(), {})

    protocol = asyncio.run(made())
    assert hasattr(protocol, name) and hasattr(protocol.server_state, "default_headers")
