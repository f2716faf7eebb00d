"""The platform spec's shape, as the schema layer declares it (``modelyard.schema``).

Types and unknown keys only: what the platform's rules say of the values
(quotas, queues, bindings, replica bounds) is ``ledger.validate``'s, with codes.
A key left empty (``queues:``, ``replicas:``) reads as left out: its default.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from modelyard.schema import AttemptTimeout, NonNegativeNumber, PositiveInt, Schema


class SpecSection(Schema):
    @model_validator(mode="before")
    @classmethod
    def _empty_is_absent(cls, data: Any) -> Any:
        if data is None:
            return {}
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class QuotaSection(SpecSection):
    noun = "quota"
    owner: dict[str, str | int] = {}
    cpu_cores: NonNegativeNumber | None = None  # left out: not limited; 0 allows none
    memory_gb: NonNegativeNumber | None = None
    cards: dict[str, dict[str, int]] = {}  # data centre -> GPU model -> hard count


class QueueSection(SpecSection):
    noun = "queue"
    data_center: str = ""
    pool: str = ""
    gpu_models: list[str] = []


class TemplateSection(SpecSection):
    noun = "template"
    spec: str = ""
    queues: dict[str, str] = {}  # data centre -> queue
    replicas: int = 1
    loads: list[str] = []
    # with a budget, an instance serves every model of ``loads`` within it, each loaded when
    # asked for, the least recently used out (serve --model-residency lru --memory-budget),
    # or with ``residency: cost`` the one whose absence costs least
    memory_budget: str = ""
    residency: Literal["lru", "cost"] = "lru"


class AutoscalingSection(SpecSection):
    noun = "autoscaling"
    min: int | None = None
    max: int | None = None
    target_in_flight: float | None = None
    stable_window_s: float | None = None
    panic_window_s: float | None = None
    panic_threshold: float | None = None


class ReleaseSection(SpecSection):
    noun = "release"
    canary_steps: list[float] | None = None


class GroupSection(SpecSection):
    noun = "group"
    models: list[str] = []
    cards: int = 0
    templates: dict[str, TemplateSection] = {}
    release: ReleaseSection | None = None
    autoscaling: AutoscalingSection | None = None


class GatewaySection(SpecSection):
    noun = "gateway"
    processes: PositiveInt = 2  # sharing the service's port: one killed, the others serve
    standby: bool = True  # one more, ready without the port: it takes a dead one's place


class AttemptSection(SpecSection):
    noun = "attempts"
    timeout_s: AttemptTimeout = "auto"  # off: an attempt may take the call's whole time
    hedge: bool = False


class ServiceSection(SpecSection):
    noun = "service"
    interfaces: list[str] = []
    gateway: GatewaySection | None = None
    attempts: dict[str, AttemptSection] = {}  # interface -> how the gateway's attempts go
    quota: str = ""
    data_centers: list[str] = []
    total_cards: int = 0
    models: list[str] = []
    groups: dict[str, GroupSection] = {}


class ModelRepositorySection(SpecSection):
    noun = "model_repository"
    claim: str | None = None  # a PersistentVolumeClaim in each quota's namespace
    image: str | None = None  # or an OCI image holding the repository (an image volume)


class SpecDocument(SpecSection):
    noun = "top-level"
    model_repository: ModelRepositorySection | None = None  # on a cluster: the pods' models
    quotas: dict[str, QuotaSection] = {}
    queues: dict[str, QueueSection] = {}
    services: dict[str, ServiceSection] = {}
