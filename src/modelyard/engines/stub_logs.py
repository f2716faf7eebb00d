"""A python stub's log events, written by the server under the server's log settings.

Triton's stub sends each ``pb_utils.Logger`` record to the server, whose settings
(``log_info``, ``log_warning``, ``log_error``, ``log_verbose_level``, ``log_format``,
the log file) decide whether and how it is written. Here the child's structlog ends
in a ``Forwarder``: each event (the model's records, the engine's own) goes as one
JSON record over a pipe of its own to the parent, where a ``Relay`` thread logs it
again through the server's processors, so a change through ``/v2/logging`` applies to
the next record written, and the records go where the server's log goes. A model's
``print`` is no record: it goes to the server's stdout, which the child shares, as in
Triton.

What a model sends is bounded before it costs the server memory or time: each text
is cut at ``MAX_TEXT_CHARS`` and a record holds at most ``MAX_FIELDS`` fields and
``MAX_RECORD_BYTES`` (the relay reads no more than that for one, and stops reading a
child that sends more: only a model that writes on the pipe itself can); the pipe is
the queue (the kernel's buffer), and the relay writes at most ``RELAY_RATE`` records a
second for a child, so a chatty model waits on its own ``log`` call, as Triton's stub
waits for the server to take each record.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, MutableMapping
from multiprocessing.connection import Connection
from typing import Any

import structlog

log = structlog.get_logger("modelyard.python_model")

MAX_TEXT_CHARS = 16 * 1024  # a longer message or field is cut, saying how much more it had
_RELAYED_CHARS = MAX_TEXT_CHARS + 64  # the parent's cut: the child's, with what it says after
MAX_FIELDS = 32
MAX_RECORD_BYTES = 128 * 1024
RELAY_RATE = 5000  # records a second for one child; then the relay waits for the next second
DRAIN_S = 2.0  # how long a stopping child's records may take to be written
_LEVELS = {
    "debug": "debug", "info": "info", "warning": "warning", "warn": "warning",
    "error": "error", "exception": "error", "critical": "critical", "fatal": "critical",
}  # fmt: skip
# keys the server's own processors set or read: a record's are dropped
_RESERVED = frozenset({"event", "level", "timestamp", "exc_info", "stack_info", "model",
                       "instance"})  # fmt: skip
_MARK = b'{"mark":true}'


def bounded(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} characters more)"


def _value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return bounded(value if isinstance(value, str) else str(value))


def encode(level: str, event_dict: MutableMapping[str, Any]) -> bytes:
    """One record: its level, event and first fields, within ``MAX_RECORD_BYTES``."""
    event = bounded(str(event_dict.get("event", "")))
    fields = {
        bounded(str(key), 64): _value(value)
        for key, value in itertools.islice(event_dict.items(), MAX_FIELDS + 1)
        if key != "event"
    }
    while True:
        record = {"level": level, "event": event, "fields": dict(itertools.islice(
            fields.items(), MAX_FIELDS))}  # fmt: skip
        data = json.dumps(record, ensure_ascii=False, default=str).encode()
        if len(data) <= MAX_RECORD_BYTES or not fields:
            return data
        fields.popitem()  # the last field goes until the record fits


# ---- the child ---------------------------------------------------------------


class Forwarder:
    """The child's last structlog processor: each event to the parent, none written here."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
        self._write(encode(method_name, event_dict))
        raise structlog.DropEvent

    def mark(self) -> None:
        """A mark after the records so far: the parent waits for it to have written them."""
        self._write(_MARK)

    def _write(self, data: bytes) -> None:
        with self._lock, contextlib.suppress(OSError):  # the parent stopped reading: dropped
            self._conn.send_bytes(data)


_FORWARDER: Forwarder | None = None


def forward_to(fd: int) -> None:
    """The child's logging: every event of every level to the parent on ``fd``."""
    global _FORWARDER
    _FORWARDER = Forwarder(Connection(fd, readable=False))
    structlog.configure(
        processors=[structlog.processors.format_exc_info, _FORWARDER],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),  # never reached
        cache_logger_on_first_use=True,
    )


def mark() -> None:
    if _FORWARDER is not None:
        _FORWARDER.mark()


# ---- the parent --------------------------------------------------------------


class _Rate:
    """At most ``per_second`` a second: past that, ``take`` waits for the next second."""

    def __init__(
        self,
        per_second: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._per_second = per_second
        self._clock, self._sleep = clock, sleep
        self._start = clock()
        self._count = 0

    def take(self) -> None:
        self._count += 1
        if self._count <= self._per_second:
            return
        now = self._clock()
        if self._start + 1.0 > now:
            self._sleep(self._start + 1.0 - now)
        self._start, self._count = self._clock(), 1


class Relay:
    """The parent's end of one child's pipe: a thread that logs its records again, with
    the model's and instance's names, until the child's end closes."""

    def __init__(self, fd: int, model: str, instance: str, rate: int = RELAY_RATE) -> None:
        self._conn = Connection(fd, writable=False)
        self._model, self._instance = model, instance
        self._rate = _Rate(rate)
        self._marked = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="python-stub-log")
        self._thread.start()

    def wait_marked(self, timeout: float) -> bool:
        """Whether the child's mark came (or its pipe ended) within ``timeout``."""
        return self._marked.wait(timeout)

    def join(self, timeout: float = DRAIN_S) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while True:
                try:
                    data = self._conn.recv_bytes(MAX_RECORD_BYTES)
                except EOFError:
                    return
                except OSError as exc:  # a record over the bound: nothing more is read
                    log.error(
                        "python_stub_log_refused", model=self._model, instance=self._instance,
                        detail=f"a log record over {MAX_RECORD_BYTES} bytes ({exc}); the "
                        "model's later records are dropped",
                    )  # fmt: skip
                    return
                if data == _MARK:
                    self._marked.set()
                    continue
                self._rate.take()
                self._write(data)
        finally:
            self._marked.set()
            self._conn.close()

    def _write(self, data: bytes) -> None:
        try:
            record = json.loads(data)
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict):
            log.warning("python_stub_log_unreadable", model=self._model,
                        instance=self._instance, bytes=len(data))  # fmt: skip
            return
        level = record.get("level")
        method = _LEVELS.get(level, "info") if isinstance(level, str) else "info"
        event = record.get("event")
        fields = record.get("fields")
        kwargs = {
            key: value if not isinstance(value, str) else bounded(value, _RELAYED_CHARS)
            for key, value in itertools.islice(
                fields.items() if isinstance(fields, dict) else (), MAX_FIELDS
            )
            if key not in _RESERVED
            and (value is None or isinstance(value, (str, bool, int, float)))
        }
        getattr(log, method)(
            bounded(event if isinstance(event, str) else str(event), _RELAYED_CHARS),
            **kwargs, model=self._model, instance=self._instance,
        )  # fmt: skip
