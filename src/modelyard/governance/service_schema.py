"""The service file's shape (and a central rules document's), as the schema layer declares it
(``modelyard.schema``).

Types, bounds and unknown keys only: what a value means for the service (a
service name's form, key digests, interfaces the rules may name, reserved
shares within their limit) is ``service_config``'s, with the same error line.
Breaker and concurrency rules are mappings here: their fields are their rule
classes' (``runtime.py`` checks them against those).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from modelyard.schema import AttemptTimeout, PositiveInt, PositiveNumber, Schema

MAX_PATTERNS = 64
MAX_PATTERN_CHARS = 256

Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_CHARS)]


class ShareSection(Schema):
    noun = "share"
    reserved_qps: PositiveNumber


class LimitSection(Schema):
    noun = "limit"
    instance_qps: PositiveNumber | None = None
    cluster_qps: PositiveNumber | None = None
    burst_seconds: PositiveNumber | None = None
    models: dict[str, ShareSection] | None = None


class PrincipalSection(Schema):
    noun = "principal"
    api_keys: list[Any] | None = None  # digests, checked for their form where they are read
    bearer_tokens: list[Any] | None = None
    allow: dict[str, list[str] | str] | None = None


class AuthSection(Schema):
    noun = "auth"
    enabled: bool = True
    principals: dict[str, PrincipalSection] | None = None


class InterfaceSection(Schema):
    noun = "interface"
    models: Annotated[list[Pattern], Field(min_length=1, max_length=MAX_PATTERNS)]
    description: str | None = None


class ClusterSection(Schema):
    noun = "cluster"
    redis_url: str | None = None
    lease_chunk: PositiveInt | None = None


class AttemptSection(Schema):
    """One interface's attempts, as callers of the service make them (the gateway's
    ``--service-config``, the SDK's ``attempts``): instances do not read it."""

    noun = "attempts"
    timeout_s: AttemptTimeout = "auto"  # off: an attempt may take the call's whole time
    hedge: bool = False


class ServiceFile(Schema):
    noun = "top-level"
    service: Any = None  # checked for its reverse-DNS form, with its own message
    interfaces: list[str] | dict[str, InterfaceSection | list[Pattern]] | None = None
    auth: AuthSection | None = None
    limits: dict[str, LimitSection] | None = None
    breakers: dict[str, dict[str, Any]] | None = None
    concurrency: dict[str, dict[str, Any]] | None = None
    cluster: ClusterSection | None = None
    attempts: dict[str, AttemptSection] | None = None
