"""Opening the embedded registry while another process writes to the new file."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from modelyard.discovery.embedded import _Database


def test_a_registry_opens_while_another_connection_writes_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE first_writer (x)")
    other.execute("BEGIN IMMEDIATE")  # a write in progress, the file in rollback mode
    other.execute("INSERT INTO first_writer VALUES (1)")
    released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    released.start()
    database = _Database(path)
    try:
        started = time.monotonic()
        db = database._connect()  # SQLite refuses the switch to WAL at once here
        assert time.monotonic() - started >= 0.2  # it waited for the writer
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        released.join()
        other.close()
        if database._db is not None:
            database._db.close()
