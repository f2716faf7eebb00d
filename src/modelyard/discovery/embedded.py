"""The embedded registry: one SQLite file in WAL mode, shared by the processes of one machine.

Each row is an instance with its lease and its expiry on the clock's wall time;
a row past its expiry is dead to readers and is deleted by the next reader that
sees it, which counts as a change. Every change bumps one revision counter and
stamps the service with it, so ``watch`` polls a single small row per service.
SQLite calls run in worker threads: a busy lock held by another process must
not stall the event loop.

``EmbeddedRulesStore`` keeps central governance rules in the same file: every
revision is a row of ``rules_history`` and ``rules_current`` points at one of
them; a put writes both in one transaction, after checking the pointer.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

import orjson

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.discovery import RegistryError, deregistered_error
from modelyard.discovery.registry import Instance, Lease, Registry, Snapshot
from modelyard.discovery.rules_store import RulesConflict, RulesRevision, RulesStore

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS revision (id INTEGER PRIMARY KEY CHECK (id = 0), value INTEGER NOT NULL);
INSERT OR IGNORE INTO revision VALUES (0, 0);
CREATE TABLE IF NOT EXISTS services (service TEXT PRIMARY KEY, revision INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS instances (
    service TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    lease_id TEXT NOT NULL,
    doc BLOB NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (service, instance_id)
);
CREATE TABLE IF NOT EXISTS rules_history (
    service TEXT NOT NULL,
    revision INTEGER NOT NULL,
    doc BLOB NOT NULL,
    PRIMARY KEY (service, revision)
);
CREATE TABLE IF NOT EXISTS rules_current (service TEXT PRIMARY KEY, revision INTEGER NOT NULL);
"""


class _Database:
    """One SQLite connection to ``path``, used from worker threads one call at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            with self._lock:
                try:
                    return fn(self._connect())
                except sqlite3.Error as exc:
                    raise RegistryError.of(
                        error_rules.EMBEDDED_REGISTRY,
                        f"embedded registry {self.path} failed: {exc}",
                    ) from exc

        return await asyncio.to_thread(call)

    async def close(self) -> None:
        def close() -> None:
            with self._lock:
                if self._db is not None:
                    self._db.close()
                    self._db = None

        await asyncio.to_thread(close)

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout = 5000")
            _to_wal(db)
            db.execute("PRAGMA synchronous = NORMAL")
            with _write(db):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
            self._db = db
        return self._db


_WAL_TRIES = 50


def _to_wal(db: sqlite3.Connection) -> None:
    """Switch the file to WAL, retrying for up to about 5 s.

    While another connection is writing to a file still in rollback mode (a process
    creating the schema of a new registry), SQLite refuses the switch at once instead of
    waiting its busy timeout.
    """
    for attempt in range(_WAL_TRIES):
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == _WAL_TRIES - 1:
                raise
            time.sleep(0.1)


class EmbeddedRegistry(Registry):
    def __init__(
        self, path: Path, *, clock: Clock = SYSTEM_CLOCK, poll_interval: float = 0.1
    ) -> None:
        self.path = path
        self.poll_interval = poll_interval
        self._clock = clock
        self._database = _Database(path)
        # the last entry written under each lease, to re-register it if it expired meanwhile
        self._entries: dict[str, Instance] = {}

    # ---- Registry -------------------------------------------------------

    async def register(self, instance: Instance, ttl: float) -> Lease:
        lease = Lease(instance.service, instance.instance_id, uuid.uuid4().hex, ttl)
        self._entries[lease.lease_id] = instance
        await self._run(lambda db: self._put(db, lease, instance))
        return lease

    async def heartbeat(self, lease: Lease) -> None:
        instance = self._entries.get(lease.lease_id)
        if instance is None:
            return  # deregistered: nothing to keep alive

        def extend(db: sqlite3.Connection) -> None:
            now = self._clock.wall()
            with _write(db):
                renewed = db.execute(
                    "UPDATE instances SET expires = ? WHERE service = ? AND instance_id = ?"
                    " AND lease_id = ? AND expires > ?",
                    (now + lease.ttl, lease.service, lease.instance_id, lease.lease_id, now),
                ).rowcount
            if not renewed:
                self._put(db, lease, instance)

        await self._run(extend)

    async def update(self, lease: Lease, instance: Instance) -> None:
        if lease.lease_id not in self._entries:
            raise deregistered_error(lease)
        self._entries[lease.lease_id] = instance
        await self._run(lambda db: self._put(db, lease, instance))

    async def deregister(self, lease: Lease) -> None:
        self._entries.pop(lease.lease_id, None)

        def delete(db: sqlite3.Connection) -> None:
            with _write(db):
                gone = db.execute(
                    "DELETE FROM instances WHERE service = ? AND instance_id = ? AND lease_id = ?",
                    (lease.service, lease.instance_id, lease.lease_id),
                ).rowcount
                if gone:
                    _bump(db, lease.service)

        await self._run(delete)

    async def resolve(self, service: str) -> Snapshot:
        snapshot, _ = await self._run(lambda db: self._read(db, service))
        return snapshot

    async def watch(self, service: str, since_revision: int) -> AsyncIterator[Snapshot]:
        while True:
            snapshot, changed_at = await self._run(lambda db: self._read(db, service))
            if changed_at > since_revision:
                since_revision = snapshot.revision
                yield snapshot
            await asyncio.sleep(self.poll_interval)

    async def aclose(self) -> None:
        await self._database.close()

    # ---- internals ------------------------------------------------------

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._database.run(fn)

    def _put(self, db: sqlite3.Connection, lease: Lease, instance: Instance) -> None:
        doc = orjson.dumps(instance.to_json())
        with _write(db):
            db.execute(
                "INSERT INTO instances (service, instance_id, lease_id, doc, expires)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (service, instance_id) DO UPDATE SET"
                " lease_id = excluded.lease_id, doc = excluded.doc, expires = excluded.expires",
                (
                    lease.service,
                    lease.instance_id,
                    lease.lease_id,
                    doc,
                    self._clock.wall() + lease.ttl,
                ),
            )
            _bump(db, lease.service)

    def _read(self, db: sqlite3.Connection, service: str) -> tuple[Snapshot, int]:
        """The service's live instances, the revision now, and the revision of its last change."""
        now = self._clock.wall()
        with _transaction(db, "BEGIN"):
            expired = db.execute(
                "SELECT 1 FROM instances WHERE service = ? AND expires <= ? LIMIT 1",
                (service, now),
            ).fetchone()
        if expired:
            with _write(db):
                if db.execute(
                    "DELETE FROM instances WHERE service = ? AND expires <= ?", (service, now)
                ).rowcount:
                    _bump(db, service)
        with _transaction(db, "BEGIN"):
            rows = db.execute(
                "SELECT doc FROM instances WHERE service = ? AND expires > ? ORDER BY instance_id",
                (service, now),
            ).fetchall()
            revision = db.execute("SELECT value FROM revision WHERE id = 0").fetchone()[0]
            changed = db.execute(
                "SELECT revision FROM services WHERE service = ?", (service,)
            ).fetchone()
        instances = [Instance.from_json(orjson.loads(doc)) for (doc,) in rows]
        return Snapshot(instances, int(revision)), int(changed[0]) if changed else 0


class EmbeddedRulesStore(RulesStore):
    """Central rules in the embedded registry's SQLite file; ``watch`` polls one row."""

    def __init__(self, path: Path, *, poll_interval: float = 0.1) -> None:
        self.path = path
        self.poll_interval = poll_interval
        self._database = _Database(path)

    async def get(self, service: str, revision: int | None = None) -> RulesRevision | None:
        def read(db: sqlite3.Connection) -> bytes | None:
            if revision is None:
                row = db.execute(
                    "SELECT h.doc FROM rules_current c JOIN rules_history h"
                    " ON h.service = c.service AND h.revision = c.revision WHERE c.service = ?",
                    (service,),
                ).fetchone()
            else:
                row = db.execute(
                    "SELECT doc FROM rules_history WHERE service = ? AND revision = ?",
                    (service, revision),
                ).fetchone()
            return None if row is None else bytes(row[0])

        doc = await self._database.run(read)
        return None if doc is None else RulesRevision.from_json(orjson.loads(doc))

    async def put(self, revision: RulesRevision) -> None:
        expected = revision.revision - 1

        def write(db: sqlite3.Connection) -> None:
            with _write(db):
                row = db.execute(
                    "SELECT revision FROM rules_current WHERE service = ?", (revision.service,)
                ).fetchone()
                found = int(row[0]) if row else 0
                if found != expected:
                    raise RulesConflict(revision.service, expected, found)
                db.execute(
                    "INSERT INTO rules_history (service, revision, doc) VALUES (?, ?, ?)",
                    (revision.service, revision.revision, orjson.dumps(revision.to_json())),
                )
                db.execute(
                    "INSERT INTO rules_current (service, revision) VALUES (?, ?)"
                    " ON CONFLICT (service) DO UPDATE SET revision = excluded.revision",
                    (revision.service, revision.revision),
                )

        await self._database.run(write)

    async def history(self, service: str, limit: int | None = None) -> list[RulesRevision]:
        def read(db: sqlite3.Connection) -> list[bytes]:
            rows = db.execute(
                "SELECT doc FROM rules_history WHERE service = ? ORDER BY revision DESC LIMIT ?",
                (service, -1 if limit is None else limit),
            ).fetchall()
            return [bytes(doc) for (doc,) in rows]

        docs = await self._database.run(read)
        return [RulesRevision.from_json(orjson.loads(doc)) for doc in docs]

    async def watch(self, service: str, since_revision: int) -> AsyncIterator[RulesRevision]:
        def current(db: sqlite3.Connection) -> int:
            row = db.execute(
                "SELECT revision FROM rules_current WHERE service = ?", (service,)
            ).fetchone()
            return int(row[0]) if row else 0

        while True:
            if await self._database.run(current) > since_revision:
                revision = await self.get(service)
                if revision is not None and revision.revision > since_revision:
                    since_revision = revision.revision
                    yield revision
            await asyncio.sleep(self.poll_interval)

    async def aclose(self) -> None:
        await self._database.close()


@contextmanager
def _transaction(db: sqlite3.Connection, begin: str) -> Iterator[None]:
    db.execute(begin)
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _write(db: sqlite3.Connection) -> AbstractContextManager[None]:
    # take the write lock up front, so two writers never deadlock upgrading a read lock
    return _transaction(db, "BEGIN IMMEDIATE")


def _bump(db: sqlite3.Connection, service: str) -> None:
    db.execute("UPDATE revision SET value = value + 1 WHERE id = 0")
    db.execute(
        "INSERT INTO services (service, revision) SELECT ?, value FROM revision WHERE id = 0"
        " ON CONFLICT (service) DO UPDATE SET revision = excluded.revision",
        (service,),
    )
