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
        self.log_frequency = log_frequency
        self._traces: list[bytes] = []  # each: one trace's records, encoded, without brackets
        self._buffered = 0
        self._index = 0
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="trace-file")

    def add(self, records: Callable[[], list[Any]], last: bool = False) -> None:
        """One trace, as ``records()`` makes them (on the writer's thread); ``last``: the
        count ran out with it, so what there is is written."""
        self._writer.submit(self._add, records, last)

    def _add(self, records: Callable[[], list[Any]], last: bool) -> None:
        try:
            encoded = orjson.dumps(records())[1:-1]
        except Exception:  # a trace that cannot be written is lost, never a request
            log.exception("trace_not_recorded")
            return
        with self._lock:
            self._traces.append(encoded)
            self._buffered += len(encoded)
            full = self.log_frequency and len(self._traces) >= self.log_frequency
            if full or last or self._buffered > MAX_BUFFERED_BYTES:
                self._write_indexed()

    def flush(self) -> None:
        """Wait until the traces added so far are made (and written, where their turn came)."""
        self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Write what is left: to the next indexed file with a log frequency, else to PATH."""
        self._writer.shutdown(wait=True)
        with self._lock:
            if not self._traces:
                return
            if self.log_frequency:
                self._write_indexed()
            else:
                self._write(self.path)

    def set_log_frequency(self, log_frequency: int) -> None:
        self.log_frequency = log_frequency  # read by the settings at once
        self._writer.submit(self._apply_log_frequency, log_frequency)

    def _apply_log_frequency(self, log_frequency: int) -> None:
        with self._lock:
            self.log_frequency = log_frequency
            if log_frequency and len(self._traces) >= log_frequency:
                self._write_indexed()

    def _write_indexed(self) -> None:
        target = self.path.with_name(f"{self.path.name}.{self._index}")
        self._index += 1
        self._write(target)

    def _write(self, target: Path) -> None:
        data = b"[" + b",".join(self._traces) + b"]"
        self._traces, self._buffered = [], 0
        try:
            target.write_bytes(data)
        except OSError as exc:  # a full disk loses traces, never a request
            log.error("trace_file_not_written", path=str(target), error=exc.strerror)
