"""A server in this process: its parts started in order on an ``AsyncExitStack`` and
stopped in reverse, its HTTP port served by uvicorn beside them.

``modelyard serve`` (``InstanceServer``) and ``modelyard gateway`` (``GatewayServer``)
are each one; the command runs it until a signal, and tests and tools start one
beside their own code::

    async with InstanceServer(serve_settings([...])) as server:
        ... f"http://127.0.0.1:{server.http_port}" ...

or, from synchronous code, on a thread of its own (``ServerThread``).

A part that fails to start stops the ones before it. Stopping runs ``before_exit``
(an instance deregisters and waits for callers' views to drop it) while HTTP still
answers, then drains HTTP, then stops the other parts, newest first.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Generic, TypeVar

import uvicorn

from modelyard import error_rules
from modelyard.cli.runtime import listen_http, run_event_loop
from modelyard.errors import ConfigError


async def _nothing() -> None:
    return None


class HttpServer(uvicorn.Server):
    """uvicorn's server; the first SIGTERM or SIGINT runs ``before_exit`` (deregistration).

    uvicorn keeps accepting until ``before_exit`` is done, then drains; the signal is not
    re-raised afterwards, so the parts' cleanup (gRPC grace, unloading) runs. A second
    signal is handled as uvicorn does.
    """

    def __init__(
        self, config: uvicorn.Config, before_exit: Callable[[], Awaitable[None]] = _nothing
    ) -> None:
        super().__init__(config)
        self._before_exit = before_exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exiting: asyncio.Task[None] | None = None
        self.up = asyncio.Event()  # set once the server listens
        self.exit_signal: int | None = None  # the signal that asked it to exit, if one did

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.up.set()

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    async def serve_socket(self, sock: socket.socket) -> None:
        """Serve one more socket, after startup (a standby gateway taking the service's
        port): its connections are this server's, drained and closed with the others."""
        config = self.config

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]  # as uvicorn makes it
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                _loop=_loop,
            )

        loop = asyncio.get_running_loop()
        server = await loop.create_server(create_protocol, sock=sock, backlog=config.backlog)
        self.servers.append(server)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.exit_signal = sig
        if self._loop is None or self._exiting is not None or self.should_exit:
            super().handle_exit(sig, frame)
            return
        self._loop.call_soon_threadsafe(self.begin_exit)

    def begin_exit(self) -> None:
        """Run ``before_exit``, then drain and stop: what the first signal starts."""
        if self._exiting is None:
            self._exiting = asyncio.ensure_future(self._exit())

    async def _exit(self) -> None:
        try:
            await self._before_exit()
        finally:
            self.should_exit = True


class InProcessServer:
    """Parts on an ``AsyncExitStack``; a subclass's ``_start`` starts them, the last being
    its HTTP server (``_serve_http``)."""

    def __init__(self) -> None:
        self.http_port: int | None = None  # once started: the port HTTP listens on
        self._parts = contextlib.AsyncExitStack()
        self._http: HttpServer | None = None
        self._serving: asyncio.Task[None] | None = None

    async def __aenter__(self) -> InProcessServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Every part up and HTTP listening; a part that fails stops the ones before it."""
        try:
            await self._start(self._parts)
        except BaseException:
            await self._parts.aclose()
            raise

    async def wait(self) -> None:
        """Until HTTP has stopped: after a signal (``before_exit`` run, drained), or ``stop``."""
        assert self._serving is not None, "start() first"
        await self._serving

    async def stop(self) -> None:
        """``before_exit``, drain HTTP, and stop each part in reverse order."""
        await self._parts.aclose()

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        raise NotImplementedError

    async def _serve_http(
        self, parts: contextlib.AsyncExitStack, server: HttpServer, sockets: list[socket.socket]
    ) -> None:
        """Serve HTTP on ``sockets`` (``listen``'s; none: uvicorn only runs beside the other
        parts) until stopped; returns once it listens."""
        self._http, self._serving = server, asyncio.create_task(server.serve(sockets))
        parts.push_async_callback(self._stop_serving)
        up = asyncio.ensure_future(server.up.wait())
        await asyncio.wait({up, self._serving}, return_when=asyncio.FIRST_COMPLETED)
        if not up.done():  # uvicorn ended before it listened: its error, or its exit
            up.cancel()
            await self._serving
            raise ConfigError.of(
                error_rules.HTTP_STOPPED, "the HTTP server stopped before it listened"
            )
        ports = [s.getsockname()[1] for srv in server.servers for s in srv.sockets]
        self.http_port = ports[0] if ports else None

    @staticmethod
    def listen(
        parts: contextlib.AsyncExitStack,
        host: str,
        port: int,
        reuse_port: bool = False,
        service: str = "HTTP",
        where: str | None = None,
    ) -> socket.socket:
        """The HTTP port bound now (a port in use is an error line at once, naming
        ``service``), closed with the parts: by uvicorn once it served, here if it never
        did."""
        sock = listen_http(host, port, reuse_port, service, where)
        parts.callback(sock.close)
        return sock

    async def _stop_serving(self) -> None:
        http, serving = self._http, self._serving
        if http is None or serving is None:
            return
        if not serving.done():
            http.begin_exit()
        await serving


Server = TypeVar("Server", bound=InProcessServer)


class ServerThread(Generic[Server]):
    """An in-process server on a thread and event loop of its own, for synchronous callers
    (tests, tools)::

        with ServerThread(InstanceServer(serve_settings([...]))) as server:
            ... f"http://127.0.0.1:{server.http_port}" ...

    Entering returns once the server has started (its error, if it did not); leaving stops
    it as a signal would, and waits for its thread.
    """

    def __init__(self, server: Server, *, start_timeout_s: float = 120.0) -> None:
        self.server = server
        self._start_timeout_s = start_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=lambda: run_event_loop(self._main()),  # made there: never left unawaited
            name=f"{type(server).__name__}-loop",
            daemon=True,
        )

    def __enter__(self) -> Server:
        self.start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()
        if not self._started.wait(self._start_timeout_s):
            self.stop()
            raise TimeoutError(f"the server did not start in {self._start_timeout_s} s")
        if self._error is not None:
            self._thread.join()
            raise self._error

    def stop(self, timeout_s: float = 60.0) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # its loop has closed: nothing to stop
                loop.call_soon_threadsafe(stopping.set)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise TimeoutError(f"the server did not stop in {timeout_s} s")

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as error:  # handed to the caller of start
            self._error = error
            self._started.set()
            return
        self._started.set()
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:  # until asked to stop, or HTTP stopped by itself
            await asyncio.wait(
                {stopping, asyncio.ensure_future(self.server.wait())},
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            stopping.cancel()
            await self.server.stop()
