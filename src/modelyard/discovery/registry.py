"""The Registry contract: where a service's live instances are written and found.

An instance registers under a lease with a TTL and keeps it alive with
heartbeats; when the heartbeats stop, the registry drops the entry once the
TTL passes. Readers ``resolve`` a service to its live instances and a revision,
and ``watch`` from a revision for new snapshots. Backends: embedded (one
machine, no server) and etcd (many machines).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any

# a model an instance's residency loads when a request names it (as version "*")
LOADABLE = "LOADABLE"


@dataclass(slots=True)
class Instance:
    """One serving process, as callers and the control plane see it."""

    service: str  # reverse-DNS name, e.g. com.example.search.ranker
    group: str  # where it runs and who owns it; callers never name it
    instance_id: str
    http: str | None = None  # host:port
    grpc: str | None = None  # host:port
    models: dict[str, dict[str, str]] = field(default_factory=dict)  # model -> version -> state
    labels: dict[str, str] = field(default_factory=dict)  # data_center, queue, ...
    spec: str = ""  # resource spec, e.g. 8C/32G or 16C/64G/A30-24G*1
    weight: float = 1.0
    state: str = "SERVING"  # SERVING | DRAINING
    cluster_limit_local: bool = False  # Redis unreachable: it enforces its share of cluster-qps

    def serves(self, model: str, version: str | None = None) -> bool:
        versions = self.models.get(model, {})
        if version:
            return versions.get(version) == "READY"
        return any(state == "READY" for state in versions.values())

    def loads(self, model: str) -> bool:
        """Whether it loads the model when asked for (``serve --model-residency``): listed as
        LOADABLE, not READY."""
        return LOADABLE in self.models.get(model, {}).values()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Instance:
        return cls(**{k: v for k, v in doc.items() if k in cls.__slots__})


@dataclass(frozen=True, slots=True)
class Lease:
    """A registration's handle: heartbeats and updates go through it."""

    service: str
    instance_id: str
    lease_id: str
    ttl: float


@dataclass(frozen=True, slots=True)
class Snapshot:
    instances: list[Instance]
    revision: int


class Registry(ABC):
    @abstractmethod
    async def register(self, instance: Instance, ttl: float) -> Lease:
        """Write the instance under a new lease that expires after ``ttl`` without heartbeats."""

    @abstractmethod
    async def heartbeat(self, lease: Lease) -> None:
        """Keep the lease alive; re-registers the entry if the backend lost it."""

    @abstractmethod
    async def update(self, lease: Lease, instance: Instance) -> None:
        """Replace the entry (models loaded, state, weight) under the same lease."""

    @abstractmethod
    async def deregister(self, lease: Lease) -> None:
        """Remove the entry now."""

    @abstractmethod
    async def resolve(self, service: str) -> Snapshot:
        """The live instances of a service and the revision they were read at."""

    @abstractmethod
    def watch(self, service: str, since_revision: int) -> AsyncIterator[Snapshot]:
        """Snapshots of the service after each change past ``since_revision``, forever."""

    async def aclose(self) -> None:  # noqa: B027 - backends without connections need nothing
        """Release connections."""
