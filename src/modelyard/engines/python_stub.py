"""Triton python-backend models in a process of their own, as Triton's stub runs them.

Each instance of a ``model.py`` written for Triton (it imports
``triton_python_backend_utils``) runs in a child process, ``python -m
modelyard.engines.python_stub``, which loads it with the in-process python engine
and answers over a socket pair. A model that crashes (a segfault in an extension,
``os._exit``, the OOM killer) fails the batch it was executing with an error line,
and the next batch starts a new process, which runs ``initialize`` again; the server
and its other models go on. A process that ends within a second of its start having
served nothing is started again only after that second (503 with retry-after
meanwhile), so a model that dies at once cannot spin.

The first instance's child runs the model's ``auto_complete_config`` and sends the
config it completed before it runs ``initialize``: the server starts the version's other
instances with that config meanwhile (Triton runs auto-complete in a stub of its own,
then creates the instances in parallel). A child started again after a crash only
initializes. Children are started from one long-lived thread (``_SPAWNER``): the kernel
sends ``PR_SET_PDEATHSIG`` when the thread that started a child ends, and the thread
that asks for one (a load's, an instance's restarting it) may end before the child.

The parent (``StubProcess``) sends ``execute`` and ``execute_decoupled`` calls with
the batch's arrays and requests, and takes what comes back: results, a decoupled
model's responses, and the child's own calls into the server (a BLS request, "is
this request cancelled?"), each answered by id. For a model that is not decoupled
the threads that wait read for themselves (the instance thread its result, the
model's thread its BLS reply), so a call crosses no reader thread; a decoupled
model's responses come at any time, so a reader thread on each side takes them. A decoupled
request's cancellation is sent to the child as it happens (``cancelled``), so the model's
``is_cancelled()``, which a streaming model calls before each response, asks nothing. A model's
calls to the repository API (``pb_utils.load_model``, ``unload_model``,
``is_model_ready``) come the same way, from ``initialize`` too (the parent answers them
while it waits for the load). The model's own metrics (``pb_utils.MetricFamily``) have a
socket pair of their own, read by a thread of the parent's: a model's thread may call at
any time (in ``initialize``, between requests), and when the child ends its families and
series go. The child's log events (``pb_utils.Logger``'s records among them) go over a
pipe of their own to the parent, which writes them under the server's log settings
(``stub_logs``). Messages are pickled (protocol 5: arrays travel as their buffers). The
child ends when the parent does
(``PR_SET_PDEATHSIG`` on Linux, and the socket closing), and runs in a session of its
own, so a terminal's Ctrl-C reaches the server, which unloads it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import pickle
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import structlog
from google.protobuf import json_format

from modelyard import error_rules, errors
from modelyard.dataplane import StreamResponse
from modelyard.engines import stub_logs
from modelyard.engines.base import (
    BatchedRequest,
    BatchOutcomes,
    DecoupledRequest,
    LoadContext,
    ResponseTiming,
    batch_requests,
    triton_instance_name,
)
from modelyard.engines.python_metrics import MODEL_METRICS, MetricRefused
from modelyard.errors import Code, EngineError, ModelyardError

log = structlog.get_logger("modelyard.engines")

TRITON_MODULE = b"triton_python_backend_utils"
TRITON_CLASS = b"class TritonPythonModel"
_MAX_SOURCE_BYTES = 16 * 2**20  # a model.py larger than this is read only this far
RESTART_BACKOFF_S = 1.0
# a metric call is a few names, labels and buckets (engines/python_metrics.py bounds
# them); a larger message closes the child's metrics socket
MAX_METRIC_CALL_BYTES = 2**20
UNLOAD_TIMEOUT_S = 30.0
# the thread every child is started from: it lives as long as the server (see above)
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="python-stub-spawn")


def runs_in_a_stub(artifact: Path) -> bool:
    """Whether a ``model.py`` is written for Triton's python backend (it imports
    ``triton_python_backend_utils``, or names its class ``TritonPythonModel``): read as
    text, never imported here."""
    try:
        with artifact.open("rb") as source:
            text = source.read(_MAX_SOURCE_BYTES)
    except OSError:
        return False
    return TRITON_MODULE in text or TRITON_CLASS in text


_Fields = tuple[str, str, str, str | None, str | None, Any, bool]


def _error_fields(error: ModelyardError) -> _Fields:
    return (
        type(error).__name__, error.detail, str(error.code), error.rule, error.where,
        error.retry_after, error.triton,
    )  # fmt: skip


def _rebuilt(fields: _Fields) -> ModelyardError:
    """An error the other process raised, as its own class (a ModelyardError one)."""
    name, detail, code, rule, where, retry_after, triton = fields
    cls = getattr(errors, name, None)
    if (
        not (isinstance(cls, type) and issubclass(cls, ModelyardError))
        or name == "MissingExtraError"
    ):
        cls = ModelyardError
    return cls(
        detail, code=Code(code), rule=rule, where=where, retry_after=retry_after, triton=triton
    )


class StubProcess:
    """The parent's end of one instance's child process."""

    def __init__(self, ctx: LoadContext, where: str) -> None:
        self._ctx = ctx
        self._where = where
        self._infer = ctx.infer
        self._send_lock = threading.Lock()
        # what waits on a child, by call id, with the connection of the child it waits on
        self._calls: dict[int, tuple[Future[Any], Connection | None]] = {}
        self._decoupled: dict[
            int, tuple[Callable[..., None], Callable[[], bool], Connection | None]
        ] = {}
        self._ids = itertools.count(1)
        self._bls = ThreadPoolExecutor(4, thread_name_prefix="python-stub-bls")
        self._process: subprocess.Popen[bytes] | None = None
        self._relay: stub_logs.Relay | None = None
        self._reader: threading.Thread | None = None  # a decoupled model's (_read)
        self._conn: Connection | None = None
        # the child's metrics socket (the parent's end) and the thread that serves it
        self._metrics: tuple[socket.socket, threading.Thread] | None = None
        self._started_at = 0.0
        self._served = False  # the process executed a batch to its end
        self._closed = False
        # a model that answers each batch once: the calling thread reads the child's answer
        # itself (no reader thread to hand it over); a decoupled one's come at any time
        self._sync = not ctx.config.model_transaction_policy.decoupled
        self.takes_requests = False
        self._started_once = False  # a start after the first one only initializes

    # ---- start, restart and stop ---------------------------------------

    def start(self) -> None:
        """Start the child and load the model in it; raises the load's error. The first
        start completes ``ctx.config`` as the model completes it (``auto_complete_config``)
        and calls ``ctx.config_complete`` before the model's ``initialize`` runs."""
        if self._process is not None:  # a child that ended: its socket closed, its exit reaped
            self._stop_process()
        self._started_at, self._served = time.monotonic(), False
        first = not self._started_once
        parent_end, child_end = socket.socketpair()
        metrics_end, child_metrics_end = socket.socketpair()
        log_end, child_log_end = os.pipe()  # the child's log records (stub_logs)
        try:
            fds = (child_end.fileno(), child_metrics_end.fileno(), child_log_end)
            self._process = _SPAWNER.submit(
                subprocess.Popen,
                # -P: the server's working directory is not on the model's sys.path (a
                # model.py or a "1" folder there would be imported in the model's place)
                [sys.executable, "-P", "-m", "modelyard.engines.python_stub", *map(str, fds)],
                pass_fds=fds,
                start_new_session=True,
            ).result()
        except BaseException:
            os.close(log_end)
            metrics_end.close()
            raise
        finally:
            child_end.close()
            child_metrics_end.close()
            os.close(child_log_end)
        metrics_conn = Connection(os.dup(metrics_end.fileno()))
        serving = threading.Thread(target=_serve_metrics, args=(metrics_conn,), daemon=True,
                                   name="python-stub-metrics")  # fmt: skip
        serving.start()
        self._metrics = (metrics_end, serving)
        name = triton_instance_name(self._ctx.config, self._ctx.instance_index)
        self._relay = stub_logs.Relay(log_end, self._ctx.config.name, name)
        conn = Connection(parent_end.detach())
        self._conn = conn
        ctx = self._ctx
        conn.send(
            (
                "load",
                {
                    "artifact": str(ctx.artifact),
                    "version_dir": str(ctx.version_dir),
                    "config": ctx.config.SerializeToString(),
                    "device": ctx.device,
                    "trusted": ctx.trusted,
                    "instance_index": ctx.instance_index,
                    "infer": ctx.infer is not None,
                    "control": ctx.control is not None,
                    "backend_dir": None if ctx.backend_dir is None else str(ctx.backend_dir),
                    "auto_complete": ctx.auto_complete and first,
                },
            )
        )
        try:
            kind, payload = self._loading_answer(conn)
            if kind == "completed":  # the config as the model completed it; initialize next
                if first:
                    self._config_completed(payload)
                kind, payload = self._loading_answer(conn)
        except (EOFError, OSError):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(2)  # its exit code, for the line
            error = self._ended("loading")
            self._stop_process()
            raise error from None
        if kind == "failed":
            self._stop_process()
            raise _rebuilt(payload)
        # what initialize logged is in the server's log before the model serves (a change
        # of the log settings after the load does not reach it), as in Triton
        self._relay.wait_marked(stub_logs.DRAIN_S)
        self.takes_requests, self._started_once = payload, True
        # the restart back-off counts from here: a slow start (a loaded machine, a long
        # initialize) must not use up the second a crash loop waits
        self._started_at = time.monotonic()
        if not self._sync:
            self._reader = threading.Thread(target=self._read, args=(conn,), daemon=True,
                                            name="python-stub")  # fmt: skip
            self._reader.start()

    def _loading_answer(self, conn: Connection) -> tuple[str, Any]:
        """The child's next answer to its load; meanwhile its model's repository calls
        (``load_model`` from ``initialize``, as Triton allows) go to the pool."""
        while True:
            message = conn.recv()
            if message[0] == "model_control":
                self._bls.submit(self._run_control, conn, message[1], message[2])
                continue
            return message[0], message[1]

    def _config_completed(self, config_json: str) -> None:
        ctx = self._ctx
        ctx.config.Clear()
        json_format.Parse(config_json, ctx.config)
        if ctx.config_complete is not None:
            ctx.config_complete()

    def _ensure_running(self) -> None:
        if self._process is not None and self._process.poll() is None and self._conn is not None:
            return
        if self._closed:
            raise EngineError.of(
                error_rules.STUB_NOT_RUNNING,
                "the model is unloading",
                where=self._where,
                retry_after=1.0,
            )
        wait = 0.0 if self._served else self._started_at + RESTART_BACKOFF_S - time.monotonic()
        if wait > 0:  # it ended within a second of being ready, having served nothing: it waits
            raise EngineError.of(
                error_rules.STUB_NOT_RUNNING,
                "the model's process ended and is being started again",
                where=self._where,
                retry_after=wait,
            )
        log.warning("python_stub_restarting", model=self._ctx.config.name)
        self.start()

    def stop(self) -> None:
        """Run the model's ``finalize`` in the child, then end it; raises finalize's error."""
        self._closed = True
        conn, failure = self._conn, None
        if conn is not None and self._process is not None and self._process.poll() is None:
            try:
                failure = self._call("unload", timeout=UNLOAD_TIMEOUT_S)
            except ModelyardError as error:
                failure = error
        self._stop_process()
        self._bls.shutdown(wait=False, cancel_futures=True)
        if isinstance(failure, ModelyardError):
            raise failure

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        conn, self._conn = self._conn, None
        reader, self._reader = self._reader, None
        if conn is not None:  # both ends see it end; its descriptor is closed once nobody
            _shut_down(conn)  # reads it (a number closed under a reader may be reused)
        if process is not None:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if reader is not None and reader is not threading.current_thread():
            reader.join(5)
        if conn is not None:
            conn.close()
        relay, self._relay = self._relay, None
        if relay is not None:  # what the child logged last (finalize's) is written
            relay.join()
        metrics, self._metrics = self._metrics, None
        if metrics is not None:  # its families go once the calls it sent are served
            metrics_end, serving = metrics
            serving.join(2)  # the child ended: its socket's end is near
            with contextlib.suppress(OSError):  # a process it started may hold it open
                metrics_end.shutdown(socket.SHUT_RDWR)
            serving.join(2)
            metrics_end.close()

    # ---- calls ----------------------------------------------------------

    def execute(
        self, inputs: dict[str, np.ndarray], outputs: list[str], batch: list[BatchedRequest] | None
    ) -> dict[str, np.ndarray]:
        self._ensure_running()
        # whether each request's caller has gone: asked back from the child (never pickled)
        checks = [each.is_cancelled for each in batch or ()]
        watched = [index for index, check in enumerate(checks) if check is not None]
        if batch is not None:
            batch = [each._replace(is_cancelled=None) for each in batch]
        try:
            result: dict[str, np.ndarray] = self._call(
                "execute", inputs, outputs, batch, watched, cancel_checks=checks
            )
        except BatchOutcomes:
            self._served = True
            raise
        self._served = True
        return result

    def execute_decoupled(self, requests: list[DecoupledRequest]) -> None:
        """Returns when the model's execute has; its responses may come later, until each
        request's FINAL (its handlers are kept until then, or until the child ends)."""
        self._ensure_running()
        sent = []
        for request in requests:
            call_id = next(self._ids)
            deliver = request.deliver if request.timed else _untimed(request.deliver)
            self._decoupled[call_id] = (deliver, request.is_cancelled, self._conn)
            # told its cancellation (and whether it has come already), or None: it asks
            told = None if request.on_cancel is None else request.is_cancelled()
            sent.append((call_id, request.inputs, request.outputs, request.parameters,
                         request.correlation_id, request.flags, request.trace_context,
                         told))  # fmt: skip
        conn = self._conn

        def watch() -> None:  # once the child has the requests: what it is told follows
            for request, (call_id, *_) in zip(requests, sent, strict=True):
                if request.on_cancel is not None:
                    request.on_cancel(functools.partial(self._tell_cancelled, conn, call_id))

        try:
            self._call("execute_decoupled", sent, then=watch)
        except ModelyardError as error:
            for call_id, *_ in sent:
                handlers = self._decoupled.pop(call_id, None)
                if handlers is not None:
                    handlers[0](None, error, True)

    def _tell_cancelled(self, conn: Connection | None, call_id: int, wait: bool = False) -> None:
        """A decoupled request's caller has gone: the child keeps it for ``is_cancelled``
        (while the request is open, and only the child that has it). Called on the event
        loop, which never waits for another thread's send: that case is sent from the pool."""
        if call_id not in self._decoupled or conn is None or conn is not self._conn:
            return
        if not self._send_lock.acquire(blocking=wait):
            with contextlib.suppress(RuntimeError):  # the pool is shut: the child is gone
                self._bls.submit(self._tell_cancelled, conn, call_id, True)
            return
        try:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("cancelled", call_id))
        finally:
            self._send_lock.release()

    def _call(
        self,
        kind: str,
        *args: Any,
        timeout: float | None = None,
        call_id: int = 0,
        cancel_checks: list[Callable[[], bool] | None] | None = None,
        then: Callable[[], None] | None = None,
    ) -> Any:
        """``then``: called once the call is sent (a decoupled model's, whose child reads
        on while it executes)."""
        if self._sync:
            return self._call_reading(kind, args, timeout, cancel_checks or [])
        call_id = call_id or next(self._ids)
        future: Future[Any] = Future()
        self._calls[call_id] = (future, self._conn)
        try:
            self._send((kind, call_id, *args))
            if then is not None:
                then()
            return future.result(timeout)
        except (OSError, ValueError):  # the child is gone: its reader fails the future too
            raise self._ended("executing") from None
        finally:
            self._calls.pop(call_id, None)

    def _call_reading(
        self,
        kind: str,
        args: tuple[Any, ...],
        timeout: float | None,
        cancel_checks: list[Callable[[], bool] | None],
    ) -> Any:
        """A call whose answer this thread reads: BLS calls meanwhile go to the pool, and
        "is the batch's request N cancelled?" is answered from ``cancel_checks``."""
        conn = self._conn
        if conn is None:
            raise self._ended("executing")
        call_id = next(self._ids)
        try:
            self._send((kind, call_id, *args))
            while True:
                if timeout is not None and not conn.poll(timeout):
                    raise OSError("no answer in time")
                message = conn.recv()
                if message[1] == call_id and message[0] == "done":
                    return message[2]
                if message[1] == call_id and message[0] == "failed":
                    raise _rebuilt(message[2])
                if message[1] == call_id and message[0] == "outcomes":
                    raise BatchOutcomes(
                        [o if isinstance(o, dict) else _rebuilt(o) for o in message[2]]
                    )
                if message[0] == "is_cancelled":
                    index = message[2]
                    check = cancel_checks[index] if 0 <= index < len(cancel_checks) else None
                    self._reply(conn, message[1], check is not None and check())
                if message[0] in ("bls", "bls_stream"):
                    self._bls.submit(self._run_bls, conn, message[1], message[2],
                                     message[0] == "bls_stream")  # fmt: skip
                if message[0] == "model_control":
                    self._bls.submit(self._run_control, conn, message[1], message[2])
        except (EOFError, OSError, ValueError):
            self._lost(conn)
            raise self._ended("executing") from None

    def _send(self, message: tuple[Any, ...]) -> None:
        conn = self._conn
        if conn is None:
            raise OSError("no child")
        with self._send_lock:
            conn.send(message)

    # ---- what the child sends -------------------------------------------

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            kind, call_id = message[0], message[1]
            if kind == "done":
                self._settle(call_id, result=message[2])
            elif kind == "failed":
                self._settle(call_id, error=_rebuilt(message[2]))
            elif kind == "deliver":
                outputs, failure, final, timing = message[2:]
                handlers = (self._decoupled.pop if final else self._decoupled.get)(call_id, None)
                if handlers is not None:
                    failure = None if failure is None else _rebuilt(failure)
                    handlers[0](outputs, failure, final, timing=_timing(timing))
            elif kind == "is_cancelled":
                handlers = self._decoupled.get(message[2])
                self._reply(conn, call_id, handlers is None or handlers[1]())
            elif kind in ("bls", "bls_stream"):
                self._bls.submit(self._run_bls, conn, call_id, message[2], kind == "bls_stream")
            elif kind == "model_control":
                self._bls.submit(self._run_control, conn, call_id, message[2])
        self._lost(conn)

    def _lost(self, conn: Connection) -> None:
        """The child's socket closed: note how it ended, and fail what waited on it (only
        on that child: a newer one may run already)."""
        current = self._conn is conn
        process = self._process
        if current and process is not None:  # its socket closes as it exits: its code next
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(2)
        if current and not self._closed:  # ended on its own, not stopped
            code = process.poll() if process is not None else None
            log.error("python_stub_ended", model=self._ctx.config.name, exit_code=code)
            self._conn = None
        error = self._ended("executing") if current else _ended_before()
        for future, owner in list(self._calls.values()):
            if owner is conn and not future.done():
                future.set_exception(error)
        for call_id, (deliver, _, owner) in list(self._decoupled.items()):
            if owner is conn and self._decoupled.pop(call_id, None) is not None:
                deliver(None, error, True)  # its FINAL will never come

    def _settle(self, call_id: int, result: Any = None, error: Exception | None = None) -> None:
        entry = self._calls.get(call_id)
        if entry is None or entry[0].done():
            return
        future = entry[0]
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def _run_bls(self, conn: Connection, query_id: int, request: Any, stream: bool) -> None:
        """A model's call to another model; ``stream``: its responses as they come (a
        decoupled model's), each a ``part`` of the reply, then its ``end``."""
        try:
            assert self._infer is not None
            if not stream:
                self._reply(conn, query_id, ("ok", self._infer(request)))
                return
            for item in self._infer(request, stream=True):
                failure = None if item.error is None else _error_fields(item.error)
                self._reply(conn, query_id, ("part", (item.response, failure, item.final)))
            self._reply(conn, query_id, ("end", None))
        except ModelyardError as error:
            self._reply(conn, query_id, ("error", _error_fields(error)))
        except Exception as exc:  # the server's own failure: the model sees it as an error
            self._reply(conn, query_id, ("error", _error_fields(errors.internal_error(exc))))

    def _run_control(self, conn: Connection, query_id: int, request: Any) -> None:
        """A model's call to the repository API (load, unload, is ready)."""
        try:
            assert self._ctx.control is not None
            kind, arguments, principals = request
            if not (isinstance(principals, tuple) and all(isinstance(p, str) for p in principals)):
                raise TypeError("principals must be a tuple of str")
            answer = self._ctx.control(kind, arguments, principals, self._ctx.config.name)
            self._reply(conn, query_id, ("ok", answer))
        except ModelyardError as error:
            self._reply(conn, query_id, ("error", _error_fields(error)))
        except Exception as exc:  # a malformed call, or the server's own failure
            self._reply(conn, query_id, ("error", _error_fields(errors.internal_error(exc))))

    def _reply(self, conn: Connection, query_id: int, value: Any) -> None:
        """Answer the child that asked: never a newer one (its query ids start again)."""
        if conn is not self._conn:
            return
        with contextlib.suppress(OSError, ValueError), self._send_lock:
            conn.send(("reply", query_id, value))

    def _ended(self, doing: str) -> EngineError:
        code = self._process.poll() if self._process is not None else None
        how = f"exit code {code}" if code is not None and code >= 0 else (
            f"signal {signal.Signals(-code).name}" if code is not None else "its socket closed"
        )  # fmt: skip
        then = "the load fails" if doing == "loading" else "the next request starts it again"
        name = triton_instance_name(self._ctx.config, self._ctx.instance_index)
        return EngineError.of(
            error_rules.STUB_ENDED,
            f"Stub process '{name}' is not healthy. The model's process ended while {doing} "
            f"({how}); {then}",
            where=f"{self._where} (the server log has what it wrote before it ended)",
            triton=True,
        )


def _serve_metrics(conn: Connection) -> None:
    """The parent's thread for a child's metric calls: each on the server's store, an
    ``ask`` answered; when the child's end closes, its families and series go."""
    try:
        while True:
            try:
                kind, operation, args = pickle.loads(conn.recv_bytes(MAX_METRIC_CALL_BYTES))
            except Exception:
                return  # ended, or a message of a size or shape pb_utils never sends
            try:
                answer = ("ok", MODEL_METRICS.call(conn, operation, tuple(args)))
            except MetricRefused as refused:
                answer = ("error", str(refused))
            except Exception as exc:  # the store's own failure: the model sees it
                answer = ("error", errors.internal_error(exc).line())
            if kind == "ask":
                conn.send(answer)
    except OSError:
        return
    finally:
        MODEL_METRICS.drop_owner(conn)
        conn.close()


# ---- the child --------------------------------------------------------------


class _MetricsChannel:
    """The child's end of its metrics socket: a model's metric calls from any thread, one
    at a time. A finalizer's ``tell`` (a handle dropped) that runs on a thread already
    inside a call is held and sent after it."""

    def __init__(self, fd: int) -> None:
        self._conn = Connection(fd)
        self._lock = threading.Lock()
        self._inside = threading.local()
        self._held: queue.SimpleQueue[tuple[str, tuple[Any, ...]]] = queue.SimpleQueue()

    def ask(self, operation: str, args: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            with self._using():
                self._conn.send(("ask", operation, args))
                status, value = self._conn.recv()
        except (EOFError, OSError):
            return ("error", _unloading_error().line())
        return status, value

    def tell(self, operation: str, args: tuple[Any, ...]) -> None:
        if getattr(self._inside, "active", False):
            self._held.put((operation, args))
            return
        with contextlib.suppress(EOFError, OSError), self._using():
            self._conn.send(("tell", operation, args))

    @contextlib.contextmanager
    def _using(self) -> Iterator[None]:
        self._inside.active = True
        try:
            with self._lock:
                yield
                while not self._held.empty():
                    self._conn.send(("tell", *self._held.get_nowait()))
        finally:
            self._inside.active = False


class _Child:
    """The child's end: the model in the in-process python engine, answering the parent."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        self._queries: dict[int, Future[Any] | _Parts] = {}
        self._ids = itertools.count(1)
        self._work = ThreadPoolExecutor(1, thread_name_prefix="python-model")
        self._engine: Any = None
        # not decoupled: the main thread executes, and a thread waiting for a reply reads it
        self._sync = True
        self._read_lock = threading.Lock()
        # the main thread loads the model or executes one that is not decoupled: a thread
        # that waits for a reply reads it itself
        self._busy = False
        self._unloading = False  # unload asked: nobody reads replies any more
        # open decoupled requests whose cancellation the parent sends (``cancelled``), and
        # those of them cancelled
        self._told: set[int] = set()
        self._cancelled: set[int] = set()

    def serve(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                return
            kind = message[0]
            if kind == "load":
                self._load(message[1])
            elif kind == "reply":
                self._replied(message[1], message[2])
            elif kind == "unload":  # the server is done with it: its requests are too
                self._unloading = True
                for waiting in list(self._queries.values()):
                    waiting.set_result(("error", _error_fields(_unloading_error())))
                self._work.shutdown(wait=True)
                self._answer(message[1], self._unload)
                return
            elif kind == "execute" and self._sync:
                self._answer_executing(message[1], self._execute, *message[2:])
            elif kind == "execute":
                self._work.submit(self._answer, message[1], self._execute, *message[2:])
            elif kind == "execute_decoupled":
                for call_id, *_, told in message[2]:
                    if told is not None:
                        self._told.add(call_id)
                    if told:
                        self._cancelled.add(call_id)
                self._work.submit(self._run_decoupled, *message[1:])
            elif kind == "cancelled":
                self._note_cancelled(message[1])

    def _load(self, payload: dict[str, Any]) -> None:
        from tritonclient.grpc import model_config_pb2 as mc

        from modelyard.engines import pb_utils
        from modelyard.engines.python import PythonEngine

        config = mc.ModelConfig()
        config.ParseFromString(payload["config"])
        self._sync = not config.model_transaction_policy.decoupled
        ctx = LoadContext(
            artifact=Path(payload["artifact"]),
            version_dir=Path(payload["version_dir"]),
            config=config,
            device=payload["device"],
            trusted=payload["trusted"],
            instance_index=payload["instance_index"],
            infer=self._bls if payload["infer"] else None,
            auto_complete=payload["auto_complete"],
            backend_dir=Path(payload["backend_dir"]) if payload["backend_dir"] else None,
            config_complete=lambda: self._send(("completed", json_format.MessageToJson(config))),
        )
        engine = PythonEngine(in_process=True, alone=True)
        if payload["control"]:  # Triton allows these in initialize too
            instance = triton_instance_name(config, payload["instance_index"])
            pb_utils.controlling_through(self._model_control, instance)
        try:
            with self._main_busy():
                engine.load(ctx)
        except ModelyardError as error:
            self._send(("failed", _error_fields(error)))
            return
        if payload["infer"]:  # its own threads may call other models too (Triton's BLS)
            pb_utils.serving_through(self._bls)
        self._engine = engine
        stub_logs.mark()  # the parent writes initialize's records before it serves
        self._send(("loaded", engine.takes_requests))

    def _execute(
        self,
        inputs: dict[str, np.ndarray],
        outputs: list[str],
        batch: list[BatchedRequest] | None,
        watched: list[int],
    ) -> dict[str, np.ndarray]:
        if batch is not None:  # a request whose caller may go: the parent knows whether it has
            batch = [
                each._replace(is_cancelled=functools.partial(self._row_cancelled, index))
                if index in watched else each
                for index, each in enumerate(batch)
            ]  # fmt: skip
        with batch_requests(batch) if batch is not None else contextlib.nullcontext():
            result: dict[str, np.ndarray] = self._engine.execute(inputs, outputs)
        return result

    def _row_cancelled(self, index: int) -> bool:
        return bool(self._ask("is_cancelled", index))

    def _answer(self, call_id: int, run: Callable[..., Any], *args: Any) -> None:
        self._send(self._outcome(call_id, run, *args))

    def _answer_executing(self, call_id: int, run: Callable[..., Any], *args: Any) -> None:
        """A model that is not decoupled, on the main thread: while it executes, a thread of
        its that waits for a reply reads it itself (the main thread does not read); the
        answer goes once no thread reads any more (the parent's next call may follow it)."""
        with self._main_busy():
            outcome = self._outcome(call_id, run, *args)
        self._send(outcome)

    @contextlib.contextmanager
    def _main_busy(self) -> Iterator[None]:
        """While the main thread does not read (it loads, or executes a model that is not
        decoupled); it reads again once no waiting thread does."""
        self._busy = True
        try:
            yield
        finally:
            with self._read_lock:
                self._busy = False

    @staticmethod
    def _outcome(call_id: int, run: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
        try:
            result = run(*args)
        except BatchOutcomes as each:  # each request's outputs or error
            return ("outcomes", call_id, [
                o if isinstance(o, dict) else _error_fields(o) for o in each.outcomes
            ])  # fmt: skip
        except ModelyardError as error:
            return ("failed", call_id, _error_fields(error))
        except Exception as exc:
            return ("failed", call_id, _error_fields(errors.internal_error(exc)))
        return ("done", call_id, result)

    def _run_decoupled(self, batch_id: int, sent: list[tuple[Any, ...]]) -> None:
        def deliver(
            call_id: int,
            arrays: Any,
            failure: ModelyardError | None,
            final: bool,
            timing: tuple[int, int, int] | None = None,
        ) -> None:
            fields = None if failure is None else _error_fields(failure)
            self._send(("deliver", call_id, arrays, fields, final, timing))
            if final:
                self._told.discard(call_id)
                self._cancelled.discard(call_id)

        def is_cancelled(call_id: int) -> bool:
            if call_id in self._told:
                return self._unloading or call_id in self._cancelled
            return bool(self._ask("is_cancelled", call_id))

        requests = [
            DecoupledRequest(
                inputs,
                outputs,
                functools.partial(deliver, call_id),
                functools.partial(is_cancelled, call_id),
                parameters,
                correlation_id,
                flags,
                timed=True,
                trace_context=trace_context,
            )
            for (call_id, inputs, outputs, parameters, correlation_id, flags, trace_context,
                 _told) in sent
        ]  # fmt: skip
        self._answer(batch_id, self._engine.execute_decoupled, requests)  # it returns None

    def _unload(self) -> None:
        from modelyard.engines import pb_utils

        pb_utils.serving_through(None)  # finalize calls no other model (Triton refuses it)
        if self._engine is not None:
            self._engine.unload()

    def _note_cancelled(self, call_id: int) -> None:
        if call_id in self._told:  # not one that has ended meanwhile
            self._cancelled.add(call_id)

    def _replied(self, query_id: int, value: Any) -> None:
        """A reply from the parent, to the query waiting for it (a stream's stays open
        until its end)."""
        waiting = self._queries.get(query_id)
        if waiting is None:
            return
        if not isinstance(waiting, _Parts) or value[0] != "part":
            del self._queries[query_id]
        waiting.set_result(value)

    def _bls(self, request: Any, stream: bool = False) -> Any:
        if stream:
            return self._bls_stream(request)
        status, value = self._ask("bls", request)
        if status == "error":
            raise _rebuilt(value)
        return value

    def _model_control(
        self, kind: str, arguments: dict[str, Any], principals: tuple[str, ...]
    ) -> Any:
        status, value = self._ask("model_control", (kind, arguments, principals))
        if status == "error":
            raise _rebuilt(value)
        return value

    def _bls_stream(self, request: Any) -> Iterator[StreamResponse]:
        """A call to a decoupled model: its responses as the parent forwards them."""
        parts = _Parts()
        value = self._ask("bls_stream", request, parts)
        while True:
            status, payload = value
            if status == "error":
                raise _rebuilt(payload)
            if status == "end":
                return
            response, failure, final = payload
            yield StreamResponse(response, None if failure is None else _rebuilt(failure), final)
            value = self._wait(parts)

    def _ask(self, kind: str, payload: Any, parts: _Parts | None = None) -> Any:
        """Ask the parent and wait for its reply (``parts``: the first of a stream's)."""
        if self._unloading:  # a cancel check says yes; a model's call fails
            return True if kind == "is_cancelled" else ("error", _error_fields(_unloading_error()))
        query_id = next(self._ids)
        waiting: Future[Any] | _Parts = parts if parts is not None else Future()
        self._queries[query_id] = waiting
        self._send((kind, query_id, payload))
        return self._wait(waiting)

    def _wait(self, waiting: Future[Any] | _Parts) -> Any:
        """The next reply for ``waiting``: handed over by the thread that reads (the main
        thread, unless it loads the model or executes one that is not decoupled: then one
        waiting thread at a time reads the replies)."""
        while not waiting.done():
            if not self._read_lock.acquire(timeout=0.005):
                continue
            try:
                if not self._busy:  # the main thread reads: it hands it over
                    break
                while not waiting.done():
                    reply = self._conn.recv()
                    if reply[0] == "cancelled":
                        self._note_cancelled(reply[1])
                    else:
                        self._replied(reply[1], reply[2])
            finally:
                self._read_lock.release()
        return waiting.result()

    def _send(self, message: tuple[Any, ...]) -> None:
        with self._send_lock:
            self._conn.send(message)


class _Parts:
    """An open stream's replies (a call to a decoupled model), in order, for the thread
    that reads them."""

    def __init__(self) -> None:
        self._items: queue.Queue[Any] = queue.Queue()

    def set_result(self, value: Any) -> None:
        self._items.put(value)

    def done(self) -> bool:
        return not self._items.empty()

    def result(self) -> Any:
        return self._items.get()


def _untimed(deliver: Callable[..., None]) -> Callable[..., None]:
    """A ``deliver`` that does not take ``timing=``, as one that does (ignoring it)."""

    def timed(outputs: Any, failure: Any, final: bool, timing: Any = None) -> None:
        deliver(outputs, failure, final)

    return timed


def _timing(sent: Any) -> ResponseTiming | None:
    """The child's timing of a response, checked (three ints), or None."""
    if isinstance(sent, tuple) and len(sent) == 3 and all(type(v) is int for v in sent):
        return ResponseTiming(*sent)
    return None


def _shut_down(conn: Connection) -> None:
    """End a socket pair's connection both ways, keeping its descriptor open."""
    with contextlib.suppress(OSError):
        end = socket.socket(fileno=conn.fileno())
        try:
            end.shutdown(socket.SHUT_RDWR)
        finally:
            end.detach()


def _ended_before() -> EngineError:
    return EngineError.of(
        error_rules.STUB_REPLACED, "the model's process ended; a new one serves the next request"
    )


def _unloading_error() -> EngineError:
    return EngineError.of(error_rules.STUB_UNLOADING, "the model is unloading")


def _end_with_parent() -> None:
    """Linux: the kernel kills this process when the server's ends (PR_SET_PDEATHSIG)."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def main() -> None:
    _end_with_parent()
    fd, metrics_fd, log_fd = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    os.set_inheritable(log_fd, False)  # the model's own children do not hold it open
    stub_logs.forward_to(log_fd)
    del sys.argv[1:]  # the model's process has no arguments (unittest.main() reads them)
    from modelyard.engines import pb_utils

    metrics = _MetricsChannel(metrics_fd)
    pb_utils.metrics_through(metrics.ask, metrics.tell)
    _Child(Connection(fd)).serve()


if __name__ == "__main__":
    main()
