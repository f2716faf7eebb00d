"""The contract between the data plane and a model version's scheduler.

Every kind of model has one scheduler per loaded version, and all of them take a
request the same way: ``submit(Submission)``, which queues it and returns the future of
its raw output arrays. Which scheduler a version has is decided once, when it loads
(``model_version.py``); the data plane never asks:

* ``Scheduler`` (``scheduler.py``): dynamic batching, or none; ``TokenScheduler``
  (``token_scheduler.py``) batches an encoder's texts by tokens;
* ``SequenceScheduler`` (``sequence_batcher.py``): a request's ``sequence`` binds it to
  its sequence's slot (one without a sequence is refused, as Triton refuses it); a
  decoupled sequence model's answers through ``submit_stream``;
* ``DecoupledScheduler`` (``decoupled.py``): answers through ``submit_stream``, zero, one
  or many responses (``decoupled`` is True); its ``submit`` refuses, in Triton's words;
* ``EnsembleScheduler`` (``ensemble.py``): runs its steps, each through its own model's
  scheduler, passing a request's parameters and sequence on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from modelyard import error_rules
from modelyard.engines.base import StepTimes
from modelyard.errors import EngineError, ModelServerError
from modelyard.server.sequence_policy import SequenceFlags
from modelyard.server.stats import VersionStats

if TYPE_CHECKING:
    from modelyard.server.decoupled import ResponseStream
    from modelyard.server.response_cache import ResponseCache


@dataclass(slots=True, eq=False)
class Submission:
    """One request as a scheduler takes it: validated arrays and what to do with them."""

    inputs: dict[str, np.ndarray]
    outputs: list[str]  # the outputs it asks for
    rows: int  # its batch rows (1 for a model that does not batch)
    deadline: float | None = None  # the caller stops waiting then (monotonic s): dropped
    priority: int = 0  # the config's priority level (0: its default)
    timeout_us: int = 0  # its queue timeout (0: the config's)
    # shape_key_of(inputs), when the caller knows it already: requests batch by it
    shape_key: tuple[Any, ...] | None = None
    timing: list[int] | None = None  # a traced request's: its execution adds its times
    # when the front door first saw it (monotonic ns; 0: unknown): its request and queue
    # time count from there (the waits before it was queued are the server's too)
    arrived_ns: int = 0
    parameters: dict[str, Any] | None = None  # what a model that reads requests sees
    sequence: SequenceFlags | None = None  # its place in a sequence (sequence models)
    # a traced ensemble request's: each step's model, version, when it was sent and
    # answered (monotonic ns), its execution's times and (a nested ensemble's) its own
    # steps, as its steps are answered (tracing.StepTimes)
    steps: list[StepTimes] | None = None
    # a traced request's W3C trace context, as a model that reads requests sees it
    # (pb_utils' request.trace().get_context(); tracing.RequestTrace.model_context)
    trace_context: str | None = None


def answers_once(model: str) -> ModelServerError:
    """What ``submit_stream`` of a model that is not decoupled raises (the data plane sends
    such a model's stream requests through ``submit``: one response, final)."""
    return ModelServerError.of(
        error_rules.NOT_DECOUPLED,
        f"model '{model}' answers each request once: it has no stream of responses",
    )


def check_outputs(
    model: str,
    version: int,
    results: dict[str, np.ndarray],
    outputs: list[str],
    rows: int,
    batched: bool,
) -> None:
    """An engine's answer to a batch of ``rows`` rows, as the contract wants it: (``batched``)
    a row per row in, in each output it returned.

    An output asked for and not returned is no error: the response leaves it out, as
    Triton's does (its core and front doors answer with the outputs its backend gave,
    asked for by name or not), and each scheduler's split skips it.
    """
    if not batched:
        return
    for name in outputs:
        array = results.get(name)
        if array is None or len(array) == rows:
            continue
        raise EngineError.of(
            error_rules.ENGINE_CONTRACT,
            f"engine returned {len(array)} rows of '{name}' for {rows} rows in",
            where=f"the model files of {model}/{version}",
        )


class ModelScheduler(Protocol):
    """A loaded version's scheduler, whatever its kind."""

    model: str
    version: int
    stats: VersionStats
    cache: ResponseCache | None  # its response cache (Triton's response_cache), if enabled
    decoupled: bool  # answers through submit_stream (a decoupled model)

    @property
    def pending(self) -> int:
        """Requests queued or executing (what an unload or a stop waits for)."""
        ...

    @property
    def queued(self) -> int:
        """Requests waiting to execute (Triton's nv_inference_pending_request_count)."""
        ...

    def submit(self, request: Submission) -> asyncio.Future[dict[str, np.ndarray]]:
        """Queue a request; must be called from the event loop's thread."""
        ...

    def submit_stream(self, request: Submission) -> ResponseStream:
        """Queue a request of a decoupled model: its responses as they come."""
        ...

    def close(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...
