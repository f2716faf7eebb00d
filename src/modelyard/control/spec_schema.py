"""The platform spec's shape, as the schema layer declares it (``modelyard.schema``).

Types and unknown keys only: what the platform's rules say of the values
(quotas, queues, bindings, replica bounds) is ``ledger.validate``'s, with codes.
"""

from __future__ import annotations

from modelyard.schema import NonNegativeNumber, Schema


class QuotaSection(Schema):
    noun = "quota"
    owner: dict[str, str | int] = {}
    cpu_cores: NonNegativeNumber | None = None  # left out: not limited; 0 allows none
    memory_gb: NonNegativeNumber | None = None
    cards: dict[str, dict[str, int]] = {}  # data centre -> GPU model -> hard count


class QueueSection(Schema):
    noun = "queue"
    data_center: str = ""
    pool: str = ""
    gpu_models: list[str] = []


class TemplateSection(Schema):
    noun = "template"
    spec: str = ""
    queues: dict[str, str] = {}  # data centre -> queue
    replicas: int = 1
    loads: list[str] = []


class AutoscalingSection(Schema):
    noun = "autoscaling"
    min: int | None = None
    max: int | None = None
    target_in_flight: float | None = None
    stable_window_s: float | None = None
    panic_window_s: float | None = None
    panic_threshold: float | None = None


class ReleaseSection(Schema):
    noun = "release"
    canary_steps: list[float] | None = None


class GroupSection(Schema):
    noun = "group"
    models: list[str] = []
    cards: int = 0
    templates: dict[str, TemplateSection] = {}
    release: ReleaseSection | None = None
    autoscaling: AutoscalingSection | None = None


class ServiceSection(Schema):
    noun = "service"
    interfaces: list[str] = []
    quota: str = ""
    data_centers: list[str] = []
    total_cards: int = 0
    models: list[str] = []
    groups: dict[str, GroupSection] = {}


class SpecDocument(Schema):
    noun = "top-level"
    quotas: dict[str, QuotaSection] = {}
    queues: dict[str, QueueSection] = {}
    services: dict[str, ServiceSection] = {}
