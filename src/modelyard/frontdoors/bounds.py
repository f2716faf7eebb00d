"""The front doors' bounds by default: what one request or connection may hold.

A module of constants only, so the command line declares its flags (and answers their
errors) without loading the front doors, uvicorn or grpc."""

from __future__ import annotations

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024  # an HTTP request's body, inflated size included
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a gRPC message received or sent
# one HTTP connection's (http_connections.ConnectionLimits)
DEFAULT_MAX_CONNECTIONS = 10_000
DEFAULT_IDLE_TIMEOUT_S = 30.0
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
