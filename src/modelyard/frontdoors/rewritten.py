"""What the cloud front doors (Vertex AI's, SageMaker's) share: a request rewritten onto
the V2 HTTP front door, and the JSON header's size a binary body gives in its content
type (``application/vnd.<cloud>-triton.binary+json;json-header-size=N``) in the place of
the V2 ``Inference-Header-Content-Length``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from modelyard.errors import Code, ProtocolError, shown

HEADER_LENGTH = b"inference-header-content-length"
_LEADING_INTEGER = re.compile(rb"\s*([+-]?\d+)")

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


def header_length(
    headers: list[tuple[bytes, bytes]], body_size: int, mime: str, rule: str
) -> int | None:
    """The JSON header's size the content type gives after ``mime`` (None: the body is
    JSON alone), read as Triton reads it (``atoi``: the leading digits, 0 where there are
    none); refused (``rule``) where ``mime`` is not where the type starts or the size is
    out of the body's range."""
    for key, value in headers:
        if key != b"content-type":
            continue
        text = value.decode("latin-1")
        at = text.find(mime)
        if at < 0:
            return None

        where = f"the request's Content-Type ({mime}<size of its JSON header>)"
        if at != 0:
            detail = f"expect MIME type for binary data starts with '{mime}', got: {text}"
            raise refused(rule, detail, where)
        rest = value[len(mime) :]
        number = _LEADING_INTEGER.match(rest)
        size = int(number.group(1)) if number else 0
        if size < 0 or size > body_size:
            detail = (
                f"inference header size should be in range (0, {body_size}), got: "
                f"{rest.decode('latin-1')}"
            )
            raise refused(rule, detail, where)
        return size
    return None


def refused(
    rule: str, detail: str, where: str, code: Code = Code.INVALID_ARGUMENT
) -> ProtocolError:
    """A call a cloud front door does not answer: Triton's status (400 unless ``code``
    says otherwise), with the error line."""
    return ProtocolError(detail, code=code, rule=rule, where=where)


def no_route(rule: str, method: str, path: str, where: str) -> ProtocolError:
    return refused(rule, f"no route for {shown(method, 20)} {shown(path)}", where)


def with_header_length(
    headers: list[tuple[bytes, bytes]], body_size: int, mime: str, rule: str
) -> list[tuple[bytes, bytes]]:
    """The request's headers as the V2 front door reads them: its own
    ``Inference-Header-Content-Length`` left out, the size the content type gives put in."""
    kept = [(key, value) for key, value in headers if key != HEADER_LENGTH]
    size = header_length(kept, body_size, mime, rule)
    return kept if size is None else [*kept, (HEADER_LENGTH, str(size).encode())]


def as_call(scope: Scope, method: str, path: str, **changes: Any) -> Scope:
    """``scope`` as a call of ``method`` on ``path``."""
    return {**scope, "method": method, "path": path, "raw_path": path.encode("latin-1"),
            **changes}  # fmt: skip


def replay(body: bytes) -> Receive:
    """The request's body, read once already, for the front door to read again."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def reply(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
