"""Encoders batched by tokens: requests of any length share an execution, padded only to the
batch's own longest row.

An encoder's inputs carry a token axis after the batch axis (``input_ids``,
``attention_mask``, ``token_type_ids``: [rows, tokens]). Batched by rows, requests of
different lengths cannot share an execution, and a batch made equal by padding every
text to a bucket computes mostly padding: an encoder's cost grows with the tokens it
runs, padded or not. Here each request (or, for a text model, each text of a request)
is queued as a part that says its tokens per row; the queue (server/batcher.py) forms
a batch from the parts nearest the head's length under a budget of padded tokens
(``max_batch_tokens``) and a bound on padding (``max_padding_ratio``); the batch is
padded with zeros to its longest part, the attention mask keeping padding out of every
result, and outputs with a token axis are cut back to each part's length. A request's
parts are answered together, in their order.

A model is batched so when its config sets ``max_batch_tokens`` (0 turns it off), when
it is a text model (server/text_encoding.py), or when its graph says so: every input has
a variable axis after the batch axis, one of them is ``attention_mask``, and the model
batches dynamically.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.engines.base import Engine, Signature
from modelyard.errors import ModelServerError, load_error
from modelyard.modelfiles.config import model_parameter, positive_int_parameter
from modelyard.server.embedding_cache import EmbeddingCache
from modelyard.server.text_encoding import TextEncoding

# measured (bench/RESULTS.md, "Embeddings": bench/token_budget.py): all-MiniLM-L6-v2 on one
# onnxruntime thread computes a token no faster in batches past this many padded tokens
DEFAULT_MAX_BATCH_TOKENS = 2048
# a batch's padded tokens at most this many times its rows' own: the queue pads only where
# sharing an execution saves more (server/batcher.py), this bounds it whatever the costs
DEFAULT_MAX_PADDING_RATIO = 1.5
DEFAULT_MAX_SEQUENCE_LENGTH = 512


TOKEN_BATCHING_RULE = "model-server/token-batching"


def _setting_error(model: str, version: int, key: str, text: str, want: str) -> ModelServerError:
    return load_error(
        model,
        version,
        f"{key} '{text}' is not {want}",
        f"{key} in {model}/config.pbtxt",
        rule=TOKEN_BATCHING_RULE,
    )


@dataclass(frozen=True, slots=True)
class Part:
    """Rows of one request that share a length, as queued: its arrays and tokens per row."""

    inputs: dict[str, np.ndarray]
    rows: int
    tokens: int


@dataclass(frozen=True, slots=True)
class TokenBatching:
    """Which inputs and outputs of an encoder carry the token axis, and its limits."""

    token_inputs: tuple[str, ...]
    token_outputs: frozenset[str]  # engine outputs cut back to each part's tokens
    max_batch_tokens: int
    max_padding_ratio: float
    max_sequence_length: int
    text: TextEncoding | None = None
    cache: EmbeddingCache | None = None

    @property
    def engine_outputs(self) -> list[str] | None:
        """What the engine computes, when not what the request asks (a text model)."""
        return self.text.engine_outputs if self.text is not None else None

    def split(self, model: str, inputs: Mapping[str, np.ndarray], rows: int) -> list[Part]:
        """A request as queued parts: a text model's texts one by one (so each joins the
        batch of its own length), any other request whole."""
        if self.text is not None:
            return [
                Part(row, 1, len(row["input_ids"])) for row in self.text.encode(inputs)
            ]
        lengths = {name: inputs[name].shape[1] for name in self.token_inputs if name in inputs}
        tokens = max(lengths.values(), default=0)
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"'{n}' {t}" for n, t in lengths.items())
            raise ModelServerError.of(
                error_rules.TOKEN_LENGTHS_DIFFER,
                f"the token inputs of model '{model}' differ in length ({shown} tokens)",
            )
        if tokens > self.max_sequence_length:
            raise ModelServerError.of(
                error_rules.TOKENS_OVER_MAX,
                f"a request to model '{model}' has {tokens} tokens per row, over its "
                f"max_sequence_length {self.max_sequence_length}",
                where=f"the request (truncate its texts), or max_sequence_length in "
                f"{model}/config.pbtxt",
            )
        return [Part(dict(inputs), rows, tokens)]

    def shape_key(self, part: Part) -> tuple[Any, ...]:
        """Parts batch together when this matches: names, item shapes less tokens, dtypes."""
        token_inputs = self.token_inputs
        return tuple(
            (name, array.shape[2:] if name in token_inputs else array.shape[1:], array.dtype.str)
            for name, array in part.inputs.items()
        )

    def stack(self, parts: list[Part]) -> tuple[dict[str, np.ndarray], int]:
        """The parts' arrays as one batch padded with zeros to its longest part."""
        longest = max(part.tokens for part in parts)
        total = sum(part.rows for part in parts)
        stacked: dict[str, np.ndarray] = {}
        for name, first in parts[0].inputs.items():
            if name in self.token_inputs:
                one_row = first.ndim == 1  # a text's own tokens
                rest = first.shape[1:] if one_row else first.shape[2:]
                out = np.zeros((total, longest, *rest), dtype=first.dtype)
                row = 0
                for part in parts:
                    array = part.inputs[name]
                    if one_row:
                        out[row, : len(array)] = array
                    else:
                        out[row : row + part.rows, : array.shape[1]] = array
                    row += part.rows
            else:
                out = np.concatenate([part.inputs[name] for part in parts], axis=0)
            stacked[name] = out
        return stacked, longest

    def answers(
        self, parts: list[Part], results: Mapping[str, np.ndarray]
    ) -> list[dict[str, np.ndarray]]:
        """Each part's outputs from a batch's: pooled (a text model), cut back to its rows and
        tokens."""
        if self.text is not None:
            lengths = np.fromiter(
                (part.tokens for part in parts for _ in range(part.rows)),
                dtype=np.int64,
                count=sum(part.rows for part in parts),
            )
            results = self.text.answer(results, lengths)
        answers = []
        row = 0
        cut = self.token_outputs
        for part in parts:
            end = row + part.rows
            answers.append(
                {
                    name: array[row:end, : part.tokens] if name in cut else array[row:end]
                    for name, array in results.items()
                }
            )
            row = end
        return answers

    def execute_unqueued(
        self, engine: Engine, inputs: Mapping[str, np.ndarray], outputs: list[str], rows: int
    ) -> dict[str, np.ndarray]:
        """One request run as the scheduler would, without a queue (warm-up, in-process use)."""
        parts = self.split("", inputs, rows)
        stacked, _ = self.stack(parts)
        results = engine.execute(stacked, self.engine_outputs or outputs)
        return join_parts(self.answers(parts, results), outputs)


def join_parts(answers: list[dict[str, np.ndarray]], outputs: list[str]) -> dict[str, np.ndarray]:
    """A request's outputs from its parts', in order; token axes of other lengths padded
    with zeros to the request's longest (an output the engine left out, left out)."""
    if len(answers) == 1:
        return {name: answers[0][name] for name in outputs if name in answers[0]}
    joined = {}
    for name in outputs:
        if name not in answers[0]:
            continue
        arrays = [answer[name] for answer in answers]
        if arrays[0].ndim >= 2 and len({a.shape[1:] for a in arrays}) > 1:
            longest = max(a.shape[1] for a in arrays)
            arrays = [
                np.pad(a, [(0, 0), (0, longest - a.shape[1])] + [(0, 0)] * (a.ndim - 2))
                for a in arrays
            ]
        joined[name] = np.concatenate(arrays, axis=0)
    return joined


def _token_axis(dims: tuple[int, ...]) -> bool:
    return len(dims) >= 2 and dims[1] < 0


def token_batching_for(
    model: str,
    version: int,
    config: mc.ModelConfig,
    graph: Signature | None,
    text: TextEncoding | None,
    cache: EmbeddingCache | None = None,
) -> TokenBatching | None:
    """How a model is batched by tokens, or None when it is batched by rows."""
    asked = model_parameter(config, "max_batch_tokens")
    if asked == "0" or config.max_batch_size <= 0:
        return None
    axes = _token_axes(config, graph, text)
    if text is None and asked is None and not _found_an_encoder(config, axes[0]):
        return None
    if not axes[0]:
        raise _setting_error(
            model, version, "max_batch_tokens", asked or "", "for a model with token inputs"
        )
    if config.dynamic_batching.preserve_ordering:
        raise load_error(
            model,
            version,
            "preserve_ordering is not served for a model batched by tokens (a request's texts "
            "may run in several batches)",
            f'remove preserve_ordering, or set max_batch_tokens: "0" in {model}/config.pbtxt',
            rule=TOKEN_BATCHING_RULE,
        )
    return TokenBatching(
        token_inputs=axes[0],
        token_outputs=axes[1],
        max_batch_tokens=positive_int_parameter(
            model, version, config, "max_batch_tokens", DEFAULT_MAX_BATCH_TOKENS
        ),
        max_padding_ratio=_ratio(model, version, config),
        max_sequence_length=text.max_length
        if text is not None
        else positive_int_parameter(
            model, version, config, "max_sequence_length", DEFAULT_MAX_SEQUENCE_LENGTH
        ),
        text=text,
        cache=cache,
    )


def _token_axes(
    config: mc.ModelConfig, graph: Signature | None, text: TextEncoding | None
) -> tuple[tuple[str, ...], frozenset[str]]:
    """The inputs and the engine outputs that carry the token axis: a text model's token
    inputs, else the config's inputs with a variable first axis; the outputs the graph says
    share it, where the engine read them, else the config's with a variable first axis."""
    if text is not None:
        inputs = tuple(name for name, _ in text.graph_inputs)
    else:  # the config's dims leave the batch axis out
        inputs = tuple(i.name for i in config.input if len(i.dims) >= 1 and i.dims[0] < 0)
    if graph is not None:
        outputs = frozenset(o.name for o in graph.outputs if _token_axis(o.dims))
    else:
        outputs = frozenset(o.name for o in config.output if len(o.dims) >= 1 and o.dims[0] < 0)
    return inputs, outputs


def _found_an_encoder(config: mc.ModelConfig, token_inputs: tuple[str, ...]) -> bool:
    """Whether a model batching dynamically looks like an encoder: every input integer
    tokens, one of them the attention mask (padding is safe only behind a mask)."""
    return (
        config.HasField("dynamic_batching")
        and bool(config.input)
        and len(token_inputs) == len(config.input)
        and "attention_mask" in token_inputs
        and all(i.data_type in (mc.TYPE_INT64, mc.TYPE_INT32) for i in config.input)
    )


def _ratio(model: str, version: int, config: mc.ModelConfig) -> float:
    text = model_parameter(config, "max_padding_ratio")
    if text is None or text == "":
        return DEFAULT_MAX_PADDING_RATIO
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 1.0 <= value <= 100.0:
        raise _setting_error(model, version, "max_padding_ratio", text, "a number from 1 to 100")
    return value


class ExecutionCost:
    """An encoder's execution time as a fixed part and a part per padded token, fitted by
    least squares over its recent executions (older ones weigh less).

    The fixed part in tokens (``overhead_tokens``) is what one more execution costs: the
    queue trades it against the padding that sharing an execution adds. For
    all-MiniLM-L6-v2 on one onnxruntime thread here it is about 15 tokens (2.5 ms against
    0.17 ms a token): a short text alone costs twice its tokens.
    """

    def __init__(self, prior_tokens: float, decay: float = 0.98, settle: int = 16) -> None:
        self.prior_tokens = prior_tokens
        self._decay = decay
        self._settle = settle
        self._seen = 0
        self._n = self._x = self._y = self._xx = self._xy = 0.0

    def observe(self, tokens: int, seconds: float) -> None:
        d = self._decay
        self._n = self._n * d + 1.0
        self._x = self._x * d + tokens
        self._y = self._y * d + seconds
        self._xx = self._xx * d + tokens * tokens
        self._xy = self._xy * d + tokens * seconds
        self._seen += 1

    def overhead_tokens(self) -> float:
        n = self._n
        spread = n * self._xx - self._x * self._x
        if self._seen < self._settle or spread <= 1e-9 * n * self._xx:
            return self.prior_tokens  # too few executions, or all of one size
        slope = (n * self._xy - self._x * self._y) / spread
        intercept = (self._y - slope * self._x) / n
        if slope <= 0:
            return self.prior_tokens
        return min(max(intercept / slope, 0.0), 256.0)


@dataclass(eq=False, slots=True)
class TokenRequest:
    """A request queued as parts: its future, and the parts' answers as they come."""

    future: asyncio.Future[dict[str, np.ndarray]]
    loop: asyncio.AbstractEventLoop
    outputs: list[str]
    answers: list[dict[str, np.ndarray] | None]
    remaining: int
    timing: list[int] | None = None
    arrived_ns: int = 0
    failed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def settled(self, index: int, answer: dict[str, np.ndarray]) -> bool:
        """Keep one part's answer; whether it was the last the request waited for."""
        with self.lock:
            self.answers[index] = answer
            self.remaining -= 1
            return self.remaining == 0 and not self.failed

    def fail(self) -> bool:
        """Mark the request failed; whether it was the first failure (the one to count)."""
        with self.lock:
            first = not self.failed
            self.failed = True
            return first

    def joined(self) -> dict[str, np.ndarray]:
        answers = [answer for answer in self.answers if answer is not None]
        return join_parts(answers, self.outputs)


class PartPending:
    """What a queued part carries for the scheduler (``QueuedRequest.payload``)."""

    __slots__ = ("future", "index", "key", "loop", "part", "request")

    def __init__(
        self, request: TokenRequest, index: int, part: Part, key: bytes | None = None
    ) -> None:
        self.request = request
        self.index = index  # the row (a text model's) or part its answer fills
        self.part = part
        self.key = key  # its text's key in the embedding cache, where there is one
        self.future = request.future
        self.loop = request.loop
