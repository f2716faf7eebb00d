"""The package's own HTTP calls, off the request path, over aiohttp.

aiohttp is modelyard's one HTTP client library: the SDK's transport uses it on
the request path, and this module for everything else — the etcd registry and
rules store, the console's collector, the CLI's tools, waiting for a child
process. ``WebSession`` serves code on an event loop; ``fetch`` makes one call
from synchronous code (a CLI command, a thread waiting for a child), on a loop
of its own. Whatever keeps a call from being answered — refused, reset, timed
out, a line too long — is one ``WebError``; an answer of any status is a
``Reply``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp
import orjson
from aiohttp.http_exceptions import LineTooLong

from modelyard.errors import shown


class WebError(Exception):
    """A call that got no answer: refused, reset, timed out, or cut off mid-answer."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    reason: str
    content_type: str
    body: bytes

    def json(self) -> Any:
        """The body as JSON; raises ValueError when it is not."""
        return orjson.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class WebSession:
    """A keep-alive session; the aiohttp one behind it is made on its first call, on the
    loop that makes it (so a session can be built before any loop runs)."""

    def __init__(
        self,
        timeout: float,
        headers: Mapping[str, str] | None = None,
        max_line_bytes: int = 1 << 16,
    ) -> None:
        self.timeout = timeout
        self._headers = dict(headers or {})
        self._max_line_bytes = max_line_bytes
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> WebSession:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, url: str) -> Reply:
        return await self.request("GET", url)

    async def post(self, url: str, *, json: Any = None, content: bytes | None = None) -> Reply:
        return await self.request("POST", url, json=json, content=content)

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """One call, its answer read in whole within ``timeout`` (the session's by default)."""
        data, headers = _body(json, content)
        limit = aiohttp.ClientTimeout(total=self.timeout if timeout is None else timeout)
        try:
            async with self._opened().request(
                method, url, data=data, headers=headers, timeout=limit
            ) as response:
                body = await response.read()
                return Reply(response.status, response.reason or "", response.content_type, body)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:  # ValueError: a header
            raise WebError(_described(exc, url)) from exc  # value or URL refused before sending

    @asynccontextmanager
    async def lines(
        self, method: str, url: str, *, content: bytes
    ) -> AsyncIterator[tuple[int, AsyncIterator[bytes]]]:
        """A streamed answer: its status and its lines as they come, with no read timeout
        (a watch waits for changes); connecting is bounded by the session's timeout."""
        limit = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_connect=self.timeout)
        try:
            async with self._opened().request(method, url, data=content, timeout=limit) as response:
                yield response.status, _lines(response, url)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise WebError(_described(exc, url)) from exc

    def _opened(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                cookie_jar=aiohttp.DummyCookieJar(),
                read_bufsize=self._max_line_bytes,
            )
        return self._session


def fetch(
    method: str,
    url: str,
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
) -> Reply:
    """One call from synchronous code (not from a running loop's thread): the answer, or
    WebError."""

    async def once() -> Reply:
        async with WebSession(timeout, headers) as session:
            return await session.request(method, url, json=json)

    return asyncio.run(once())


async def _lines(response: aiohttp.ClientResponse, url: str) -> AsyncIterator[bytes]:
    try:
        async for line in response.content:
            yield line
    except (ValueError, LineTooLong) as exc:  # a line past the session's limit
        raise WebError(f"{url}: a line of the answer is too long ({shown(str(exc), 80)})") from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise WebError(_described(exc, url)) from exc


def _body(json: Any, content: bytes | None) -> tuple[bytes | None, dict[str, str] | None]:
    if json is None:
        return content, None
    return orjson.dumps(json), {"content-type": "application/json"}


def _described(exc: BaseException, url: str) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"{url}: timed out"
    return f"{url}: {type(exc).__name__}: {exc}" if str(exc) else f"{url}: {type(exc).__name__}"
