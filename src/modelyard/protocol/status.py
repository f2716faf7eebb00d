"""The one table from error codes to HTTP and gRPC statuses."""

from __future__ import annotations

from modelyard.errors import Code

# code -> (HTTP status, gRPC status name as in grpc.StatusCode)
STATUS: dict[Code, tuple[int, str]] = {
    Code.INVALID_ARGUMENT: (400, "INVALID_ARGUMENT"),
    Code.NOT_FOUND: (404, "NOT_FOUND"),
    Code.PAYLOAD_TOO_LARGE: (413, "RESOURCE_EXHAUSTED"),
    Code.HEADERS_TOO_LARGE: (431, "RESOURCE_EXHAUSTED"),
    Code.REQUEST_TIMEOUT: (408, "DEADLINE_EXCEEDED"),  # the caller was slow, not the server
    Code.UNAVAILABLE: (503, "UNAVAILABLE"),
    Code.RESOURCE_EXHAUSTED: (429, "RESOURCE_EXHAUSTED"),
    Code.DEADLINE_EXCEEDED: (504, "DEADLINE_EXCEEDED"),
    Code.UNAUTHENTICATED: (401, "UNAUTHENTICATED"),
    Code.PERMISSION_DENIED: (403, "PERMISSION_DENIED"),
    Code.FAILED_PRECONDITION: (400, "FAILED_PRECONDITION"),
    Code.METHOD_NOT_ALLOWED: (405, "UNIMPLEMENTED"),  # gRPC has no methods to choose from
    Code.UNIMPLEMENTED: (501, "UNIMPLEMENTED"),
    Code.INTERNAL: (500, "INTERNAL"),
    # as Triton answers them over HTTP (http_server.cc: "no direct matching code")
    Code.UNKNOWN: (400, "UNKNOWN"),
    Code.ALREADY_EXISTS: (400, "ALREADY_EXISTS"),
    Code.CANCELLED: (400, "CANCELLED"),
}


def http_status(code: Code) -> int:
    return STATUS[code][0]


def grpc_status_name(code: Code) -> str:
    return STATUS[code][1]
