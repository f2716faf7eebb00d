"""Triton-mode trace files: ``--trace-config triton,file=PATH`` (``--trace-file``).

A file is one JSON array of Triton's trace records: per traced request, an object
with its id, model name and version (and request id), then one object per timestamp
(``{"id", "timestamps": [{"name", "ns"}]}``) and, at the TENSORS level, one per
tensor (``{"id", "activity": "TENSOR_QUEUE_INPUT" | "TENSOR_BACKEND_OUTPUT",
"tensor": {"name", "data", "shape", "dtype"}}``), so Triton's ``trace_summary.py``
and whatever reads Triton's files read these.

When it is written follows Triton: with ``log-frequency`` N, every N traces go to
``PATH.0``, ``PATH.1``, ...; with 0, the traces go to ``PATH`` when the server
stops; when ``count`` runs out, what was collected goes to the next indexed file.
A model with a log frequency of its own collects its traces apart and writes them by
it, to the same numbering; cleared, what it collected joins the others'. A trace setting
request replaces the settings it changes, as Triton replaces its settings object: what
the replaced ones collected is saved then (to the next indexed file with a log
frequency, else into ``PATH``), so a trace count set later counts only its own.
Records are made and files written on a thread of their own, never the event loop's;
what waits for a file is bounded (``MAX_BUFFERED_BYTES``: past it, the traces go to
the next indexed file, whatever the log frequency).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import structlog

log = structlog.get_logger("modelyard.tracing")

MAX_BUFFERED_BYTES = 64 * 2**20


def tensor_record(trace_id: int, activity: str, name: str, datatype: str, data: np.ndarray) -> Any:
    """One TENSORS record: the values comma-separated, as Triton prints them."""
    flat = data.ravel().tolist()
    if datatype == "BYTES":
        values = [
            '"' + (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)) + '"'
            for v in flat
        ]
    elif data.dtype.kind == "f":
        values = [f"{v:g}" for v in flat]
    else:
        values = [str(int(v)) for v in flat]
    return {
        "id": trace_id,
        "activity": activity,
        "tensor": {
            "name": name,
            "data": ",".join(values),
            "shape": ",".join(str(d) for d in data.shape),
            "dtype": datatype,
        },
    }


class TraceFile:
    """Collects the records of finished traces and writes them as Triton does."""

    def __init__(self, path: Path, log_frequency: int = 0) -> None:
        self.path = path
        # by owner: None the global setting's, else a model's own (the settings read them)
        self._frequencies: dict[str | None, int] = {None: log_frequency}
        self._default_frequency = log_frequency  # the command line's: a cleared one's
        # each: one trace's records, encoded, without brackets; by owner as the frequencies
        self._traces: dict[str | None, list[bytes]] = {None: []}
        self._buffered = 0
        self._index = 0
        # traces of settings a change replaced, with no log frequency: PATH's, at close
        self._plain: list[bytes] = []
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="trace-file")

    @property
    def log_frequency(self) -> int:
        return self._frequencies[None]

    def frequency(self, owner: str | None) -> int:
        """The log frequency ``owner``'s traces are written by (a model's own, else the
        global one)."""
        return self._frequencies.get(owner, self._frequencies[None])

    def add(
        self, records: Callable[[], list[Any]], last: bool = False, owner: str | None = None
    ) -> None:
        """One trace, as ``records()`` makes them (on the writer's thread); ``last``: the
        count ran out with it, so what there is is written; ``owner``: the model whose
        own log frequency it follows."""
        self._writer.submit(self._add, records, last, owner)

    def _add(self, records: Callable[[], list[Any]], last: bool, owner: str | None) -> None:
        try:
            encoded = orjson.dumps(records())[1:-1]
        except Exception:  # a trace that cannot be written is lost, never a request
            log.exception("trace_not_recorded")
            return
        with self._lock:
            if owner not in self._frequencies:  # its own frequency was cleared meanwhile
                owner = None
            traces = self._traces.setdefault(owner, [])
            traces.append(encoded)
            self._buffered += len(encoded)
            frequency = self._frequencies[owner]
            if (frequency and len(traces) >= frequency) or last:
                self._write_indexed(owner)
            if self._buffered > MAX_BUFFERED_BYTES:  # bounded, whatever the frequencies
                self._traces[None] = self._plain + self._traces[None]
                self._plain = []
                for held in [o for o, t in self._traces.items() if t]:
                    self._write_indexed(held)

    def retire(self, owner: str | None) -> None:
        """The settings ``owner``'s traces were taken under are replaced (a trace setting
        request changed them): what they collected is saved as Triton saves a replaced
        setting's traces, to the next indexed file where they had a log frequency, else
        into PATH, apart from what the new settings collect (a trace count of the new ones
        counts only its own)."""
        frequency = self.frequency(owner)  # the replaced settings', before any change
        self._writer.submit(self._retire, owner, frequency)

    def _retire(self, owner: str | None, frequency: int) -> None:
        with self._lock:
            if not self._traces.get(owner):
                return
            if frequency:
                self._write_indexed(owner)
            else:
                self._plain += self._traces[owner]
                self._traces[owner] = []

    def flush(self) -> None:
        """Wait until the traces added so far are made (and written, where their turn came)."""
        self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Write what is left: to the next indexed file with a log frequency, else to PATH."""
        self._writer.shutdown(wait=True)
        with self._lock:
            for owner in [o for o in self._traces if o is not None]:
                if self._traces[owner] and self._frequencies.get(owner):
                    self._write_indexed(owner)
                else:  # no frequency of its own: with the others, into PATH
                    self._traces[None] += self._traces.pop(owner)
            if self._traces[None] and self._frequencies[None]:
                self._write_indexed(None)
            self._traces[None] = self._plain + self._traces[None]
            self._plain = []
            if self._traces[None]:
                self._write(self.path, None)

    def set_log_frequency(self, log_frequency: int | None, owner: str | None = None) -> None:
        """The global log frequency (``owner`` None; None: back to ``default``), or a
        model's own (None: it follows the global one again)."""
        with self._lock:  # read by the settings at once
            if owner is None:
                self._frequencies[None] = (
                    self._default_frequency if log_frequency is None else log_frequency
                )
            elif log_frequency is None:
                self._frequencies.pop(owner, None)
            else:
                self._frequencies[owner] = log_frequency
        self._writer.submit(self._apply_log_frequency, owner)

    def _apply_log_frequency(self, owner: str | None) -> None:
        with self._lock:
            if owner is not None and owner not in self._frequencies:
                self._traces[None] += self._traces.pop(owner, [])
                owner = None
            traces = self._traces.setdefault(owner, [])
            frequency = self._frequencies[owner]
            if frequency and len(traces) >= frequency:
                self._write_indexed(owner)

    def _write_indexed(self, owner: str | None) -> None:
        target = self.path.with_name(f"{self.path.name}.{self._index}")
        self._index += 1
        self._write(target, owner)

    def _write(self, target: Path, owner: str | None) -> None:
        traces = self._traces[owner]
        data = b"[" + b",".join(traces) + b"]"
        self._buffered -= sum(len(t) for t in traces)
        self._traces[owner] = []
        try:
            target.write_bytes(data)
        except OSError as exc:  # a full disk loses traces, never a request
            log.error("trace_file_not_written", path=str(target), error=exc.strerror)
