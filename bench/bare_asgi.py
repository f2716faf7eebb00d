"""The HTTP stack's floor: read the request body, answer a constant.

    python bench/bare_asgi.py PORT

``rsgi_app`` is the same endpoint for granian's RSGI interface (bench/http_stack.py).

Served exactly as modelyard serves (uvicorn, httptools, uvloop, one process, the
same ``http_config``: header settings, keep-alive, connection limit), so served
throughput divided by this one is the share modelyard keeps.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

BODY = b'{"model_name":"bare","model_version":"1","outputs":[]}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


async def rsgi_app(scope: Any, protocol: Any) -> None:
    await protocol()  # the whole body
    protocol.response_bytes(200, [(k.decode(), v.decode()) for k, v in HEADERS[:1]], BODY)


if __name__ == "__main__":
    # modelyard serve's own HTTP settings, connection bounds and loop; "plain": uvicorn's
    # own httptools protocol instead of modelyard's bounded one, to measure what it costs
    from modelyard.cli.runtime import http_config, run_event_loop

    config = http_config(app, "127.0.0.1", int(sys.argv[1]))
    if sys.argv[2:] == ["plain"]:
        config.http = "httptools"
    run_event_loop(uvicorn.Server(config).serve())
