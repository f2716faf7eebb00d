"""The RulesStore contract: a service's governance rules, kept centrally and versioned.

Each revision is one whole rules document (YAML text: limits, breakers,
concurrency, cluster; never auth secrets) with who wrote it, when, and the
unified diff against the revision before. ``put`` stores a revision as the
service's current rules and in its history in one atomic step, and only if
the current revision is still the one it was computed from; readers and
watchers therefore only ever see whole revisions. Backends live next to the
registry backends: embedded (SQLite, one transaction) and etcd (one txn that
compares the current key's mod_revision).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from modelyard.discovery import RegistryError, registry_location
from modelyard.errors import Code


@dataclass(frozen=True, slots=True)
class RulesRevision:
    """One stored revision of a service's rules document."""

    service: str
    revision: int  # 1, 2, 3 ... per service; a rollback is a new revision
    document: str  # the rules document, YAML
    author: str  # user@host
    time: float  # wall-clock seconds when it was written
    action: str  # what made it, e.g. "set limits.infer.cluster_qps 200"
    diff: str  # unified diff against the previous revision

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.document.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RulesRevision:
        return cls(
            service=str(doc["service"]),
            revision=int(doc["revision"]),
            document=str(doc["document"]),
            author=str(doc.get("author", "")),
            time=float(doc.get("time", 0.0)),
            action=str(doc.get("action", "")),
            diff=str(doc.get("diff", "")),
        )


class RulesConflict(RegistryError):
    """Another writer stored a revision first: read again and recompute the change."""

    def __init__(self, service: str, expected: int, found: int) -> None:
        super().__init__(
            f"rules of {service} are at revision {found}, not {expected}: another change won",
            code=Code.FAILED_PRECONDITION,
            rule="discovery/rules-revision",
            where="run the command again: it applies the change to the current revision",
        )
        self.found = found


class RulesStore(ABC):
    @abstractmethod
    async def get(self, service: str, revision: int | None = None) -> RulesRevision | None:
        """The current revision (or revision ``revision`` from history); None if there is none."""

    @abstractmethod
    async def put(self, revision: RulesRevision) -> None:
        """Make ``revision`` current and add it to history, atomically.

        Only if the current revision is ``revision.revision - 1`` (0: none yet);
        otherwise nothing changes and ``RulesConflict`` is raised.
        """

    @abstractmethod
    async def history(self, service: str, limit: int | None = None) -> list[RulesRevision]:
        """Stored revisions, newest first."""

    @abstractmethod
    def watch(self, service: str, since_revision: int) -> AsyncIterator[RulesRevision]:
        """Each new current revision past ``since_revision``, forever; may skip, never repeats."""

    async def aclose(self) -> None:  # noqa: B027 - backends without connections need nothing
        """Release connections."""


def open_rules_store(url: str) -> RulesStore:
    """The rules store in the registry that ``url`` names (the forms of ``open_registry``)."""
    location = registry_location(url)
    if isinstance(location, Path):
        from modelyard.discovery.embedded import EmbeddedRulesStore

        return EmbeddedRulesStore(location)
    from modelyard.discovery.etcd import EtcdRulesStore

    return EtcdRulesStore(location)
