"""The data plane's contract: what the front doors and governance call.

Two data planes implement it: an instance's own (``server.local_dataplane.LocalDataPlane``,
which runs models) and the gateway's (``gateway.forward.ForwardingDataPlane``,
which forwards to a service's instances). The front doors and governance know
only this contract, so neither reaches into the model server, and neither asks
which data plane it was given.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from modelyard import error_rules
from modelyard.clock import Clock
from modelyard.errors import Code, ModelServerError, ModelyardError
from modelyard.generation import Generation
from modelyard.types import InferRequest, InferResponse

# set by a front door while it queues a request: whether that request's caller has gone
# (a gRPC call the client cancelled); a scheduler keeps it for a model that reads requests,
# which asks ``is_cancelled()``
CALLER_GONE: ContextVar[Callable[[], bool] | None] = ContextVar("caller_gone", default=None)

# the KServe V2 extensions an instance names in its server metadata, in Triton's order
# (cuda_shared_memory: its API answers, "GPUs not supported" on a host without one)
INSTANCE_EXTENSIONS = [
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
]

# an output whose response entry is the same for every request of a lane, but for its data:
# name, datatype, numpy dtype, shape, binary, and whether the engine's array must have that
# very shape (False: the config reshapes it, so only its size must match)
FixedOutput = tuple[str, str, np.dtype[Any], tuple[int, ...], bool, bool]


class StreamResponse(NamedTuple):
    """One answer on a stream: a response or an error, and whether it is the request's last
    (a decoupled model's FINAL flag may come alone, with neither)."""

    response: InferResponse | None
    error: Exception | None
    final: bool


# what a stream's caller may leave unread, wherever its responses wait for it: past either
# its request is cancelled (a caller that stops reading would otherwise hold every response
# the model goes on sending); a burst that reaches the loop before its reader's next turn
# stays far below both
MAX_UNREAD = 16_384
MAX_UNREAD_BYTES = 256 << 20


def unread_responses(model: str) -> ModelServerError:
    return ModelServerError.of(
        error_rules.UNREAD_RESPONSES,
        f"the caller has not read {MAX_UNREAD} responses or {MAX_UNREAD_BYTES} bytes of "
        f"model '{model}': the request is cancelled",
    )


class InferLane(Protocol):
    """Requests of one validated shape on one model version: validated once, then submitted.

    A front door keeps a lane for a request shape it can recognise without decoding
    (the binary header's bytes), and drops it once the data plane's ``generation`` has
    moved (``is_current`` says whether this one lane still holds).
    """

    model_name: str
    model_version: str
    # every output's entry, when each is the same for every request of the lane (no
    # classification, no variable dims, no BYTES or BF16); None otherwise
    fixed_outputs: tuple[FixedOutput, ...] | None

    def is_current(self) -> bool:
        """Whether the lane's model name still resolves to its version."""
        ...

    @property
    def reusable(self) -> bool:
        """Whether a front door keeps the lane for later requests of the same header bytes
        (False for a sequence's requests: each carries its own id and flags, and is one-off)."""
        ...

    def submit(
        self,
        inputs: dict[str, NDArray[Any]],
        priority: int,
        timeout_us: int,
        deadline: float | None,
        timing: list[int] | None = None,
        arrived_ns: int = 0,
    ) -> asyncio.Future[dict[str, NDArray[Any]]]:
        """Queue a request of the lane's shape; the future holds the raw output arrays.

        ``timing``: a traced request's list for its execution's times; ``arrived_ns``: when
        the front door first saw the request (monotonic ns; 0: unknown), where its counted
        time starts.
        """
        ...

    def response(self, request: InferRequest, results: dict[str, NDArray[Any]]) -> InferResponse:
        """The response to ``request`` (of this lane), from its raw output arrays."""
        ...


class Repository(Protocol):
    """The repository calls the front doors make (``POST /v2/repository/...``)."""

    def index(self, ready_only: bool = False) -> list[dict[str, Any]]: ...

    def is_ready(self) -> bool: ...

    async def load(
        self,
        name: str,
        override: Any = None,
        authorize: Callable[[list[str]], None] | None = None,
        files: dict[tuple[str, ...], bytes] | None = None,
    ) -> None: ...

    async def unload(self, name: str, unload_dependents: bool = False) -> None: ...

    def register_repository(self, root: Path, mapping: dict[str, str]) -> None:
        """Serve one more repository (SageMaker's multi-model endpoints)."""
        ...

    def unregister_repository(self, root: Path) -> None: ...


class Infers(Protocol):
    """What governance runs an admitted call through: a data plane, or a stream's relay."""

    async def infer(self, request: InferRequest) -> InferResponse: ...


class Streams(Protocol):
    """What governance runs an admitted streamed call through: a data plane, or a front door
    that reads the call's body once it is admitted (generate's)."""

    def infer_stream(self, request: InferRequest) -> AsyncIterator[StreamResponse]: ...


class DataPlane(Protocol):
    @property
    def clock(self) -> Clock: ...

    # whether requests go on to another server (a gateway's): they carry the caller's
    # trace context along (InferRequest.forward_headers)
    forwards_requests: bool
    # bumped whenever what a model's name routes to changes: what a front door kept for a
    # request's shape (its lane) is stale once it has moved
    generation: Generation

    @property
    def manager(self) -> Repository: ...

    def server_live(self) -> bool: ...

    def server_ready(self) -> bool: ...

    def server_metadata(self) -> dict[str, Any]: ...

    def model_ready(self, name: str, version: str | None) -> bool: ...

    def model_metadata(self, name: str, version: str | None) -> dict[str, Any]: ...

    def model_config(self, name: str, version: str | None) -> dict[str, Any]: ...

    def statistics(self, name: str | None, version: str | None) -> dict[str, Any]: ...

    def live_stats(self, governance: dict[str, Any] | None) -> dict[str, Any]:
        """``GET /v2/modelyard/stats``; ``governance``: ``Governance.live_stats()``, or None."""
        ...

    async def infer(self, request: InferRequest) -> InferResponse: ...

    def infer_stream(self, request: InferRequest) -> AsyncIterator[StreamResponse]:
        """The request's responses as they come (gRPC ModelStreamInfer): a decoupled model's
        many, any other model's one; the last is marked final."""
        ...

    def lane(self, request: InferRequest) -> InferLane | None:
        """Validate ``request`` and give its lane; None: this data plane keeps no lanes."""
        ...


def unknown_model_refusal(
    dataplane: DataPlane, name: str, version: str | None
) -> ModelyardError | None:
    """The refusal of a call to a model ``dataplane`` does not know, or None: where a
    request's body is refused, Triton, which looks the model up before it reads the
    inputs, answers the unknown model."""
    try:
        dataplane.model_metadata(name, version)
    except ModelyardError as error:
        return error if error.code is Code.NOT_FOUND else None
    return None
