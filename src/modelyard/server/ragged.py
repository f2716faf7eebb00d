"""Triton's ragged batching: requests whose inputs differ in shape, batched without padding.

A config asks for it in three ways (Triton's ``model_config.proto``), each served here as
Triton's backends serve it:

* an input with ``allow_ragged_batch: true`` batches whatever each request's shape of it
  (the queue leaves its shape out of the batch key), and the engine gets every request's
  elements of it one after another, as one flat tensor (Triton's onnxruntime backend
  feeds it so: the model's input is ``[-1]``);
* ``batch_input`` adds tensors computed for each execution from a source input's shape in
  each request (their element counts, running totals, the largest, each item's shape), fed
  to the engine beside the inputs under its ``target_name``\\ s;
* ``batch_output`` of kind ``BATCH_SCATTER_WITH_INPUT_SHAPE``: the engine returns the output
  as one flat run over the batch, and each request gets its part, shaped as the output's
  config dims with each ``-1`` taken from the request's shape of the source input.

Any other input is stacked along the batch axis, and any other output split by rows, as
for every batch. A model that batches none of these ways has no ``RaggedBatching``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ConfigError, EngineError

_KINDS = mc.BatchInput.Kind
BATCH_ELEMENT_COUNT = _KINDS.Value("BATCH_ELEMENT_COUNT")
BATCH_ACCUMULATED_ELEMENT_COUNT = _KINDS.Value("BATCH_ACCUMULATED_ELEMENT_COUNT")
BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO = _KINDS.Value(
    "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO"
)
BATCH_MAX_ELEMENT_COUNT_AS_SHAPE = _KINDS.Value("BATCH_MAX_ELEMENT_COUNT_AS_SHAPE")
BATCH_ITEM_SHAPE = _KINDS.Value("BATCH_ITEM_SHAPE")
BATCH_ITEM_SHAPE_FLATTEN = _KINDS.Value("BATCH_ITEM_SHAPE_FLATTEN")
_BATCH_INPUT_KINDS = frozenset(_KINDS.values())
BATCH_SCATTER_WITH_INPUT_SHAPE = mc.BatchOutput.Kind.Value("BATCH_SCATTER_WITH_INPUT_SHAPE")
_BATCH_INPUT_TYPES = {mc.TYPE_INT32: np.dtype(np.int32), mc.TYPE_FP32: np.dtype(np.float32)}


@dataclass(frozen=True, slots=True)
class BatchInput:
    """One ``batch_input``: what to compute, from which input, under which names."""

    kind: int  # a BatchInput.Kind value
    source: str
    targets: tuple[str, ...]
    dtype: np.dtype[Any]

    def compute(self, shapes: Sequence[tuple[int, ...]]) -> np.ndarray:
        """The tensor for one execution, from each request's shape of the source input (its
        batch dimension first)."""
        counts = [math.prod(shape) for shape in shapes]
        kind = self.kind
        if kind == BATCH_ELEMENT_COUNT:
            return np.array(counts, dtype=self.dtype)
        if kind == BATCH_ACCUMULATED_ELEMENT_COUNT:
            return np.cumsum(counts).astype(self.dtype)
        if kind == BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO:
            return np.cumsum([0, *counts]).astype(self.dtype)
        if kind == BATCH_MAX_ELEMENT_COUNT_AS_SHAPE:
            # the tensor's shape is the message: Triton leaves its values unset
            return np.zeros(max(counts, default=0), dtype=self.dtype)
        # BATCH_ITEM_SHAPE(_FLATTEN): each batch item's shape, its batch dimension left out
        rank = max((len(shape) - 1 for shape in shapes), default=0)
        items = [shape[1:] for shape in shapes for _ in range(shape[0])]
        table = np.array(items, dtype=self.dtype).reshape(len(items), rank)
        return table if kind == BATCH_ITEM_SHAPE else table.reshape(-1)


@dataclass(frozen=True, slots=True)
class ScatteredOutput:
    """An output the engine returns flat, each request's part shaped by its source input."""

    source: str
    shape: tuple[int, ...]  # the batch dimension (-1) and the output's config dims

    def shape_for(self, source_shape: tuple[int, ...]) -> tuple[int, ...] | None:
        """A request's shape of it (None: the source input has no dimension for a -1)."""
        shape = []
        for index, dim in enumerate(self.shape):
            if dim == -1:
                if index >= len(source_shape):
                    return None
                dim = source_shape[index]
            shape.append(dim)
        return tuple(shape)


def _refuse(origin: str, detail: str, where: str) -> ConfigError:
    return ConfigError.of(
        error_rules.RAGGED_BATCH, f"{detail} (invalid model config {origin})", where=where
    )


def _kind_name(kinds: Any, kind: int) -> str:
    try:
        return str(kinds.Name(kind))
    except ValueError:  # a number no kind has
        return str(kind)


def _one_source(entry: Any, what: str, name: str, origin: str, where: str) -> None:
    """Triton's check that a batch input or output names exactly one source input."""
    if len(entry.source_input) != 1:
        raise _refuse(
            origin,
            f"{what} expects 1 source input, got {len(entry.source_input)} for {name}",
            where,
        )


def _source(
    entry: Any, inputs: set[str], optional: set[str], name: str, origin: str, where: str
) -> str:
    """The one source input of a batch input or output, an input every request carries."""
    source = str(entry.source_input[0])
    if source not in inputs:
        raise _refuse(origin, f"unknown source input name '{source}' for {name}", where)
    if source in optional:
        raise _refuse(
            origin,
            f"source input '{source}' of {name} is optional: a request that leaves it out has "
            "no shape to count",
            f"optional of input '{source}', or its batch_input and batch_output, in {origin}",
        )
    return source


@dataclass(frozen=True, slots=True)
class RaggedBatching:
    """What a model with ragged inputs, batch inputs or batch outputs needs around each
    execution: the batch assembled for its engine, and the answers taken apart per request."""

    ragged: frozenset[str]
    batch_inputs: tuple[BatchInput, ...]
    scattered: Mapping[str, ScatteredOutput]

    @classmethod
    def from_config(cls, config: mc.ModelConfig, origin: str) -> RaggedBatching | None:
        """The config's ragged batching, checked as Triton checks it (its words lead each
        refusal); None when it asks for none."""
        name = config.name
        where = f"batch_input and batch_output in {origin}"
        inputs = {entry.name for entry in config.input}
        ranks = {  # each input's rank as a request sends it, with its batch dimension
            entry.name: int(config.max_batch_size > 0)
            + len(entry.reshape.shape if entry.HasField("reshape") else entry.dims)
            for entry in config.input
        }
        optional = {entry.name for entry in config.input if entry.optional}
        outputs = {entry.name: entry for entry in config.output}
        batch_inputs = []
        for entry in config.batch_input:
            kind_name = _kind_name(mc.BatchInput.Kind, entry.kind)
            if entry.kind not in _BATCH_INPUT_KINDS:  # a JSON config may give any number
                raise _refuse(origin, f"unknown batch input kind '{kind_name}' for {name}", where)
            _one_source(entry, f"batch input kind '{kind_name}'", name, origin, where)
            if entry.data_type not in _BATCH_INPUT_TYPES:
                raise _refuse(
                    origin,
                    f"batch input data type must be TYPE_INT32 or TYPE_FP32 for {name}",
                    where,
                )
            source = _source(entry, inputs, optional, name, origin, where)
            if not entry.target_name:
                raise _refuse(origin, f"batch input of '{source}' names no target_name", where)
            clash = next((t for t in entry.target_name if t in inputs), None)
            if clash is not None:
                raise _refuse(
                    origin,
                    f"batch input target_name '{clash}' is also an input of {name}: the "
                    "server computes a batch input, a request never sends it",
                    where,
                )
            batch_inputs.append(
                BatchInput(
                    entry.kind,
                    source,
                    tuple(entry.target_name),
                    _BATCH_INPUT_TYPES[entry.data_type],
                )
            )
        scattered: dict[str, ScatteredOutput] = {}
        lead = (-1,) if config.max_batch_size > 0 else ()
        for entry in config.batch_output:
            kind_name = _kind_name(mc.BatchOutput.Kind, entry.kind)
            if entry.kind != BATCH_SCATTER_WITH_INPUT_SHAPE:
                raise _refuse(origin, f"unknown batch output kind '{kind_name}' for {name}", where)
            _one_source(entry, f"batch output kind '{kind_name}'", name, origin, where)
            source = _source(entry, inputs, optional, name, origin, where)
            for target in entry.target_name:
                if target not in outputs:
                    raise _refuse(
                        origin, f"unknown target output name '{target}' for {name}", where
                    )
                if target in scattered:
                    raise _refuse(
                        origin,
                        f"target output name '{target}' can only be specified once for {name}",
                        where,
                    )
                output = outputs[target]
                dims = output.reshape.shape if output.HasField("reshape") else output.dims
                shape = (*lead, *(int(d) for d in dims))
                past = [i for i, d in enumerate(shape) if d == -1 and i >= ranks[source]]
                if past:
                    raise _refuse(
                        origin,
                        f"batch output '{target}' {list(shape)} has a -1 at dimension "
                        f"{past[0]}, and its source input '{source}' has {ranks[source]} "
                        f"dimensions to take it from, for {name}",
                        where,
                    )
                scattered[target] = ScatteredOutput(source, shape)
        ragged = frozenset(entry.name for entry in config.input if entry.allow_ragged_batch)
        if not ragged and not batch_inputs and not scattered:
            return None
        if config.max_batch_size <= 0:
            asks = (
                f"input '{min(ragged)}' sets allow_ragged_batch"
                if ragged
                else "its batch_input and batch_output describe a batch"
            )
            raise _refuse(
                origin,
                f"model '{name}' does not batch (max_batch_size 0) and {asks}: ragged batching "
                "needs a batching model",
                f"max_batch_size > 0 with dynamic_batching, or remove allow_ragged_batch, "
                f"batch_input and batch_output in {origin}",
            )
        both = min(ragged & optional, default=None)
        if both is not None:
            raise _refuse(
                origin,
                f"ragged input '{both}' of {name} is optional, which is not supported for a "
                "ragged input",
                f"optional or allow_ragged_batch of input '{both}' in {origin}",
            )
        return cls(ragged, tuple(batch_inputs), scattered)

    def scattering(self, outputs: Mapping[str, str], config: mc.ModelConfig) -> RaggedBatching:
        """With the outputs an engine itself returns flat over a ragged batch (output ->
        source input: Triton's identity backend answers each request with its own input),
        shaped as their config dims; a batch_output of the same output stays as it is."""
        extra = {
            entry.name: ScatteredOutput(outputs[entry.name], (-1, *(int(d) for d in entry.dims)))
            for entry in config.output
            if entry.name in outputs and entry.name not in self.scattered
        }
        return replace(self, scattered={**self.scattered, **extra}) if extra else self

    def shape_key(self, inputs: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Requests batch together only when this matches: a ragged input's shape is left
        out (``scheduler.shape_key_of`` for the rest)."""
        ragged = self.ragged
        return tuple(
            (name, None if name in ragged else array.shape[1:], array.dtype.str)
            for name, array in inputs.items()
        )

    def assemble(
        self,
        requests: Sequence[Mapping[str, np.ndarray]],
        stack: Callable[[list[np.ndarray]], np.ndarray],
    ) -> dict[str, np.ndarray]:
        """The engine's inputs for a batch of ``requests`` (each its inputs): ragged ones
        flat and one after another, the rest joined by ``stack`` (a list of arrays -> one),
        and the batch inputs."""
        first = requests[0]
        assembled: dict[str, np.ndarray] = {}
        for name in first:
            parts = [request[name] for request in requests]
            if name in self.ragged:
                flat = [part.reshape(-1) for part in parts]
                assembled[name] = flat[0] if len(flat) == 1 else np.concatenate(flat)
            else:
                assembled[name] = parts[0] if len(parts) == 1 else stack(parts)
        for batch_input in self.batch_inputs:
            source = batch_input.source
            tensor = batch_input.compute([request[source].shape for request in requests])
            for target in batch_input.targets:
                assembled[target] = tensor
        return assembled

    def split(
        self,
        results: Mapping[str, np.ndarray],
        requests: Sequence[Mapping[str, np.ndarray]],
        outputs: Sequence[Sequence[str]],
        rows: Sequence[int],
        where: str,
    ) -> list[dict[str, np.ndarray]]:
        """Each request's outputs (those it asked for, of those returned): a scattered one
        its part of the flat run, shaped by its source input; any other its rows."""
        flat = {
            name: np.asarray(results[name]).reshape(-1)
            for name in self.scattered
            if name in results
        }
        shapes = self._scattered_shapes(flat, requests, where)
        answers: list[dict[str, np.ndarray]] = []
        row = 0
        offsets = dict.fromkeys(flat, 0)
        for index, (asked, count) in enumerate(zip(outputs, rows, strict=True)):
            part: dict[str, np.ndarray] = {}
            for name in flat:
                shape = shapes[name][index]
                end = offsets[name] + math.prod(shape)
                if name in asked:
                    part[name] = flat[name][offsets[name] : end].reshape(shape)
                offsets[name] = end
            for name in asked:
                if name in results and name not in flat:
                    part[name] = results[name][row : row + count]
            row += count
            answers.append(part)
        return answers

    def _scattered_shapes(
        self,
        flat: Mapping[str, np.ndarray],
        requests: Sequence[Mapping[str, np.ndarray]],
        where: str,
    ) -> dict[str, list[tuple[int, ...]]]:
        """Each scattered output's shape in each request, checked against what the engine
        returned (at least as many elements as the requests' parts together)."""
        shapes: dict[str, list[tuple[int, ...]]] = {}
        for name, array in flat.items():
            output = self.scattered[name]
            each = []
            for request in requests:
                source = request.get(output.source)
                shape = None if source is None else output.shape_for(source.shape)
                if shape is None:
                    raise EngineError.of(
                        error_rules.ENGINE_CONTRACT,
                        f"batch output '{name}' ({list(output.shape)}) cannot take its shape "
                        f"from input '{output.source}' of a request "
                        f"({list(source.shape) if source is not None else 'left out'})",
                        where=where,
                    )
                each.append(shape)
            needed = sum(math.prod(shape) for shape in each)
            if array.size < needed:
                raise EngineError.of(
                    error_rules.ENGINE_CONTRACT,
                    f"engine returned {array.size} elements of batch output '{name}' for "
                    f"{needed} in its requests' shapes of '{output.source}'",
                    where=where,
                )
            shapes[name] = each
        return shapes
