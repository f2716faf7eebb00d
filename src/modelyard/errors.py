"""modelyard's error tree: one class per layer, one shape for all.

    ModelyardError                  every error a user can see
    ├── ConfigError                 [config]       a file or setting is invalid
    ├── ProtocolError               [protocol]     the request could not be decoded
    ├── GovernanceError             [governance]   auth, rate limit, breaker said no
    ├── ModelServerError            [model-server] routing, lifecycle, queues
    └── EngineError                 [engine]       an engine failed to load or run

Every error carries the fields of the error line users grep for:

    [layer] what happened (numbers); rule=<id>; change: <where>; retry after <s>

``code`` is one of the codes in ``Code``; ``modelyard.protocol.status`` maps
each code to an HTTP status and a gRPC status in one table. This module imports
no web or gRPC library on purpose.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Self

# how much of a caller-given name an error line shows, and of any detail: a line goes into
# a gRPC trailer, whose size the client bounds (8 KiB by default)
SHOWN_NAME_CHARS = 200
DETAIL_CHARS = 2000


def shown(name: str, limit: int = SHOWN_NAME_CHARS) -> str:
    """A caller-given name as an error line echoes it: cut to ``limit`` characters."""
    return name if len(name) <= limit else f"{name[:limit]}… ({len(name)} characters)"


# an absolute path (a library's source file, a model directory), unless quoted: onnxruntime
# names graph nodes '/encoder/layer.0/Add'
_PATH = re.compile(r"(?<![\w'\"/])/(?:[\w.+-]+/)+[\w.+-]*(?::\d+)?")


def without_paths(text: str) -> str:
    """An engine's message for a caller: the build and model paths in it left out."""
    return _PATH.sub("…", text)


class Code(StrEnum):
    INVALID_ARGUMENT = "invalid_argument"
    NOT_FOUND = "not_found"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    HEADERS_TOO_LARGE = "headers_too_large"
    REQUEST_TIMEOUT = "request_timeout"
    UNAVAILABLE = "unavailable"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    FAILED_PRECONDITION = "failed_precondition"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    UNIMPLEMENTED = "unimplemented"
    INTERNAL = "internal"
    # Triton's other error codes, which a python-backend model may answer with
    UNKNOWN = "unknown"
    ALREADY_EXISTS = "already_exists"
    CANCELLED = "cancelled"


def retry_after_seconds(seconds: float) -> float:
    """The retry-after an error line advertises: ``seconds`` rounded up to the hundredth, at
    least 0.01 (a line never says 0.00 s while its header says 1)."""
    if not math.isfinite(seconds):
        return seconds
    return max(0.01, math.ceil(round(seconds * 100, 6)) / 100)


def retry_after_header(seconds: float) -> str:
    """The Retry-After (and RateLimit-Reset) value for the same advice: whole seconds
    (RFC 9110), the line's value rounded up, so the header is never sooner than the line."""
    return str(math.ceil(retry_after_seconds(seconds)))


# the beginnings of Triton's own messages that clients and scripts match on (tritonclient's
# examples test ``message.startswith("Request for unknown model")``): a line whose detail
# begins so starts with it, and its rule names the layer; an error made with
# ``triton=True`` does the same for any of Triton's words (its QA suite matches
# ``[StatusCode.UNAVAILABLE] explicit model load / unload is not allowed ...``)
TRITON_WORDING = ("Request for unknown model: ", "failed to load '")


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule an error line names, as the module that enforces it declares it: its id, the
    code it answers with and, where one setting governs it, where to change it (a raise site
    that knows the place better, a model's config file, names its own)."""

    id: str
    code: Code
    where: str | None = None


class ModelyardError(Exception):
    layer = "modelyard"
    # the headers of an instance's reply that carried this error, for a gateway to pass on
    reply_headers: tuple[tuple[str, str], ...] = ()

    def __init__(
        self,
        detail: str,
        *,
        code: Code = Code.INTERNAL,
        rule: str | None = None,
        where: str | None = None,
        retry_after: float | None = None,
        triton: bool = False,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.rule = rule
        self.where = where
        self.retry_after = retry_after
        self.triton = triton  # the detail begins with Triton's own words: the line leads with them

    @classmethod
    def of(
        cls,
        rule: Rule,
        detail: str,
        *,
        where: str | None = None,
        retry_after: float | None = None,
        triton: bool = False,
    ) -> Self:
        """The error ``rule`` refuses with: its id and code, and its setting unless ``where``
        names the place."""
        return cls(
            detail,
            code=rule.code,
            rule=rule.id,
            where=rule.where if where is None else where,
            retry_after=retry_after,
            triton=triton,
        )

    def line(self) -> str:
        detail = shown(self.detail, DETAIL_CHARS)
        lead = self.triton or detail.startswith(TRITON_WORDING)
        parts = [detail if lead else f"[{self.layer}] {detail}"]
        if self.rule:
            parts.append(f"rule={self.rule}")
        if self.where:
            parts.append(f"change: {self.where}")
        if self.retry_after is not None:
            parts.append(f"retry after {retry_after_seconds(self.retry_after):.2f}s")
        return "; ".join(parts)

    def fields(self) -> dict[str, object]:
        """The same facts as the line, for one structured log event."""
        return {
            "layer": self.layer,
            "code": str(self.code),
            "rule": self.rule,
            "detail": self.detail,
            "where": self.where,
            "retry_after": self.retry_after,
        }

    def __str__(self) -> str:
        return self.line()


class ConfigError(ModelyardError):
    layer = "config"


class ProtocolError(ModelyardError):
    layer = "protocol"


class GovernanceError(ModelyardError):
    layer = "governance"


class ModelServerError(ModelyardError):
    layer = "model-server"


# residency's refusals: a load longer than the request's deadline, a budget that cannot hold
# the model (``modelyard explain`` finds them beside the guards' rejections)
LOAD_TIME_RULE = "model-server/load-time"
MEMORY_BUDGET_RULE = "model-server/memory-budget"


class NotResident(ModelServerError):
    """A request named a model of the repository that is not loaded now and loads when asked
    (``serve --model-residency``): ``resident(deadline)`` loads it, or waits for its load
    already under way, within the request's deadline (monotonic seconds; None: none);
    then the request is routed again. Answered as it stands (503, retry after a second)
    where nothing awaits the load."""

    def __init__(self, model: str, resident: Callable[[float | None], Awaitable[None]]) -> None:
        super().__init__(
            f"model '{model}' is not resident; it loads when asked",
            code=Code.UNAVAILABLE,
            rule="model-server/not-resident",
            where="send the request again: the model is loading",
            retry_after=1.0,
        )
        self.model = model
        self.resident = resident


class DecoupledRefusal(ModelServerError):
    """A call that takes one answer, made to a decoupled model (many responses a request).
    A front door names itself with ``at``, so the line leads with Triton's words for it
    (``ModelInfer RPC doesn't support models with decoupled transaction policy``)."""

    def __init__(self, model: str, detail: str | None = None, *, code: Code, rule: str,
                 where: str | None) -> None:  # fmt: skip
        super().__init__(
            detail or f"model '{model}' is decoupled (many responses per request): a call "
            "that takes one answer cannot reach it",
            code=code, rule=rule, where=where, triton=detail is not None,
        )  # fmt: skip
        self.model = model

    def at(self, endpoint: str) -> DecoupledRefusal:
        """The same refusal, led by Triton's words for ``endpoint`` (``HTTP end point``)."""
        detail = (
            f"{endpoint} doesn't support models with decoupled transaction policy (model "
            f"'{self.model}' sends many responses per request)"
        )
        return DecoupledRefusal(
            self.model, detail, code=self.code, rule=self.rule or "", where=self.where
        )


# an exception no layer described: a bug, reported as one
INTERNAL = Rule("model-server/internal", Code.INTERNAL, "report this as a bug with the server log")


def internal_error(exc: Exception) -> ModelServerError:
    """A front door's answer to an exception no layer described."""
    return ModelServerError.of(INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


def listen_failure(service: str, address: str, in_use: bool, why: str) -> str:
    """Why a port could not be listened on; in tritonserver's words when another process
    holds it ("failed to start GRPC service: Unavailable - Socket '...' already in use"),
    which scripts look for in its log."""
    if in_use:
        return f"failed to start {service} service: Unavailable - Socket '{address}' already in use"
    return f"cannot listen for {service} on {address}: {why}"


def load_error(
    model: str, version: int, detail: str, where: str, rule: str = "model-server/load"
) -> ModelServerError:
    """A model version that does not load, in tritonserver's words for it."""
    return ModelServerError(
        f"failed to load '{model}' version {version}: {detail}",
        code=Code.INVALID_ARGUMENT,
        rule=rule,
        where=where,
    )


class EngineError(ModelyardError):
    layer = "engine"


class RequestRescheduled(EngineError):
    """A python model gave its request back to the scheduler to run again
    (``set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)``): a sequence model with
    ``iterative_sequence`` queues it again; any other scheduler answers it with this error,
    Triton's words."""


class MissingExtraError(EngineError):
    """An engine's optional dependency is not installed."""

    def __init__(self, engine: str, module: str, extra: str) -> None:
        super().__init__(
            f"engine '{engine}' needs the Python package '{module}', which is not installed",
            code=Code.UNAVAILABLE,
            rule=f"engine/{engine}",
            where=f"pip install 'modelyard[{extra}]'",
        )


# the instance's error classes by the layer their lines name (a client makes each again)
LAYERS: dict[str, type[ModelyardError]] = {
    cls.layer: cls
    for cls in (
        ModelyardError,
        ConfigError,
        ProtocolError,
        GovernanceError,
        ModelServerError,
        EngineError,
    )
}
