"""What a model's ``sequence_batching`` asks for, read once at load, and a request's flags.

``SequencePolicy.from_config`` turns the config into plain values: the strategy
(direct or oldest), the idle time after which an abandoned sequence gives up its
slot, the control inputs the server fills (START, END, READY, CORRID, each with the
values its kind takes for false and true, or CORRID's datatype) and the implicit
states (``state``) it carries from one request of a sequence to the next. Anything
the server would have to ignore is refused here with the field and what to do.

``sequence_flags`` reads a request's ``sequence_id``, ``sequence_start`` and
``sequence_end`` parameters, as tritonclient sends them over HTTP and gRPC.
"""

from __future__ import annotations

import math
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ConfigError, ModelServerError, shown
from modelyard.modelfiles.served_config import SEQUENCE_IDLE_DEFAULT_US
from modelyard.types import CONFIG_TO_V2, NUMPY_TO_V2, V2_TO_CONFIG, numpy_dtype

START, END, READY, CORRID = "start", "end", "ready", "corrid"
_KINDS = {
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START: START,
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END: END,
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY: READY,
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID: CORRID,
}
_CORRID_TYPES = ("UINT64", "INT64", "UINT32", "INT32", "BYTES")
# one sequence's state, kept between its requests: its config's first state, its initial
# state file (its first bytes) and what the model returns for a variable-sized one
STATE_MAX_BYTES = 64 << 20

SequenceId = int | str


class SequenceFlags(NamedTuple):
    """A request's place in its sequence."""

    id: SequenceId
    start: bool
    end: bool


@dataclass(frozen=True, slots=True)
class Control:
    """A control input the server fills: its kind, dtype and the values for false and true."""

    name: str
    kind: str
    dtype: np.dtype[Any]
    false_true: tuple[Any, Any] = (0, 1)


@dataclass(frozen=True, slots=True)
class State:
    """An implicit state: fed to ``input_name``, taken back from ``output_name``."""

    input_name: str
    output_name: str
    dtype: np.dtype[Any]
    initial: np.ndarray  # one row's (or, unbatched, the whole) state at a sequence's start
    dims: tuple[int, ...]  # the config's, -1 where the state takes the shape returned

    @property
    def variable(self) -> bool:
        return -1 in self.dims

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return _zeros(self.dtype, shape)

    def fits(self, shape: tuple[int, ...]) -> bool:
        """Whether a state returned in ``shape`` (one row's) is one of this state's."""
        return len(shape) == len(self.dims) and all(
            d == -1 or d == s for d, s in zip(self.dims, shape, strict=True)
        )


@dataclass(frozen=True, slots=True)
class SequencePolicy:
    oldest: bool  # the oldest strategy; else direct
    idle_ns: int
    controls: tuple[Control, ...]
    states: tuple[State, ...]
    slots: int  # per instance: direct, max(1, max_batch_size); oldest, the candidates
    max_batch_size: int
    max_queue_delay_ns: int
    minimum_slot_utilization: float  # direct only
    preferred: tuple[int, ...]  # oldest only
    # the CORRID control's name, config type (TYPE_UINT64 ...) and dtype; None: any id
    corrid: tuple[str, str, np.dtype[Any]] | None
    # oldest only: answers leave in the order their requests were taken for execution
    preserve_ordering: bool = False
    # Triton's iterative_sequence: a request without a correlation id starts a sequence of
    # its own, which ends with it; a python model may give a request back to run again
    iterative: bool = False
    # oldest only: the requests a batch waits for, up to the queue delay (Triton's dynamic
    # batcher over the candidates: the largest preferred size, else max_batch_size, at
    # most the candidates)
    oldest_aim: int = 1

    @property
    def batched(self) -> bool:
        return self.max_batch_size > 0

    @property
    def hidden_inputs(self) -> frozenset[str]:
        """The inputs the server fills: a client never sends them."""
        return frozenset([c.name for c in self.controls] + [s.input_name for s in self.states])

    @property
    def variable_states(self) -> tuple[State, ...]:
        return tuple(s for s in self.states if s.variable)

    @property
    def state_outputs(self) -> tuple[str, ...]:
        return tuple(s.output_name for s in self.states)

    @classmethod
    def from_config(cls, config: mc.ModelConfig, model_dir: Path, origin: str) -> SequencePolicy:
        sb = config.sequence_batching
        controls = tuple(_control(entry, origin) for entry in sb.control_input)
        names = [c.name for c in controls]
        if len(set(names)) != len(names):
            raise _config_error(origin, "a control_input name is given twice")
        kinds = [c.kind for c in controls]
        if len(set(kinds)) != len(kinds):
            raise _config_error(origin, "a control kind is given to two control inputs")
        states = tuple(_state(entry, config, model_dir, origin) for entry in sb.state)
        declared = {entry.name for entry in config.input}
        for name in [*names, *(s.input_name for s in states)]:
            if name in declared:
                raise _config_error(
                    origin,
                    f"'{name}' is both an input and a control or state input: the server fills "
                    "it, so remove it from input",
                )
        corrid = next((c for c in controls if c.kind == CORRID), None)
        corrid_type = None
        if corrid is not None:
            corrid_type = (corrid.name, "TYPE_STRING" if corrid.dtype == np.object_ else
                           V2_TO_CONFIG[NUMPY_TO_V2[corrid.dtype]], corrid.dtype)  # fmt: skip
        batch = int(config.max_batch_size)
        if sb.WhichOneof("strategy_choice") == "oldest":
            oldest = sb.oldest
            slots = int(oldest.max_candidate_sequences) or max(1, batch)
            preferred = tuple(sorted(p for p in oldest.preferred_batch_size if 0 < p <= batch))
            return cls(
                oldest=True,
                idle_ns=_idle_ns(sb),
                controls=controls,
                states=states,
                slots=slots,
                max_batch_size=batch,
                max_queue_delay_ns=int(oldest.max_queue_delay_microseconds) * 1000,
                minimum_slot_utilization=0.0,
                preferred=preferred,
                corrid=corrid_type,
                preserve_ordering=bool(oldest.preserve_ordering),
                iterative=bool(sb.iterative_sequence),
                oldest_aim=min(preferred[-1] if preferred else max(1, batch), slots),
            )
        direct = sb.direct
        return cls(
            oldest=False,
            idle_ns=_idle_ns(sb),
            controls=controls,
            states=states,
            slots=max(1, batch),
            max_batch_size=batch,
            max_queue_delay_ns=int(direct.max_queue_delay_microseconds) * 1000,
            minimum_slot_utilization=min(1.0, max(0.0, float(direct.minimum_slot_utilization))),
            preferred=(),
            corrid=corrid_type,
            iterative=bool(sb.iterative_sequence),
        )


def _idle_ns(sb: mc.ModelSequenceBatching) -> int:
    return int(sb.max_sequence_idle_microseconds or SEQUENCE_IDLE_DEFAULT_US) * 1000


def _config_error(origin: str, detail: str) -> ConfigError:
    return ConfigError.of(
        error_rules.MODEL_CONFIG,
        f"invalid model config {origin}: sequence_batching: {detail}",
        where=f"sequence_batching in {origin}",
    )


def _control(entry: Any, origin: str) -> Control:
    if not entry.name:
        raise _config_error(origin, "a control_input has no name")
    if len(entry.control) != 1:
        raise _config_error(origin, f"control_input '{entry.name}' must have exactly one control")
    control = entry.control[0]
    kind = _KINDS[control.kind]
    if kind == CORRID:
        datatype = CONFIG_TO_V2.get(mc.DataType.Name(control.data_type))
        if datatype not in _CORRID_TYPES:
            raise _config_error(
                origin,
                f"control_input '{entry.name}' (CORRID) needs data_type TYPE_UINT64, "
                "TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING",
            )
        return Control(entry.name, kind, numpy_dtype(datatype))
    given = [
        (np.dtype(np.int32), list(control.int32_false_true)),
        (np.dtype(np.float32), list(control.fp32_false_true)),
        (np.dtype(np.bool_), list(control.bool_false_true)),
    ]
    filled = [(dtype, values) for dtype, values in given if values]
    if len(filled) != 1 or len(filled[0][1]) != 2:
        raise _config_error(
            origin,
            f"control_input '{entry.name}' needs one of int32_false_true, fp32_false_true or "
            "bool_false_true, with two values (false, true)",
        )
    dtype, values = filled[0]
    return Control(entry.name, kind, dtype, (values[0], values[1]))


def _state(entry: Any, config: mc.ModelConfig, model_dir: Path, origin: str) -> State:
    if not entry.input_name or not entry.output_name:
        raise _config_error(origin, "a state needs input_name and output_name")
    datatype = CONFIG_TO_V2.get(mc.DataType.Name(entry.data_type))
    if datatype is None or datatype == "BF16":
        raise _config_error(
            origin, f"state '{entry.input_name}' needs a numeric or STRING data_type (not BF16)"
        )
    dims = tuple(int(d) for d in entry.dims)
    if not dims or any(d < 1 and d != -1 for d in dims):
        raise _config_error(
            origin, f"state '{entry.input_name}' dims {list(dims)}: each above 0, or -1"
        )
    dtype = numpy_dtype(datatype)
    if len(entry.initial_state) > 1:
        raise _config_error(origin, f"state '{entry.input_name}' has more than one initial_state")
    init = entry.initial_state[0] if entry.initial_state else None
    shape = _first_shape(entry, dims, init, origin)
    if math.prod(shape) * (8 if datatype == "BYTES" else dtype.itemsize) > STATE_MAX_BYTES:
        raise _config_error(
            origin,
            f"state '{entry.input_name}' of shape {list(shape)} is over {STATE_MAX_BYTES} bytes",
        )
    initial = _zeros(dtype, shape)
    if init is not None and init.WhichOneof("state_data") == "data_file":
        path, size = _initial_state_file(init.data_file, model_dir, origin)
        if datatype == "BYTES":
            _check_string_initial_file(size, init.data_file, shape, entry.input_name, origin)
        else:
            initial = _initial_from_file(path, init.data_file, shape, dtype, origin)
    return State(entry.input_name, entry.output_name, dtype, initial, dims)


def _first_shape(entry: Any, dims: tuple[int, ...], init: Any, origin: str) -> tuple[int, ...]:
    """Triton's first state's shape: its initial_state's dims, else 1 for each -1."""
    if init is None:
        return tuple(1 if d == -1 else d for d in dims)
    shape = tuple(int(d) for d in init.dims)
    if init.data_type != entry.data_type or len(shape) != len(dims) or any(
        s < 1 or d not in (-1, s) for d, s in zip(dims, shape, strict=False)
    ):
        raise _config_error(
            origin,
            f"initial_state of '{entry.input_name}' must have the state's data_type and "
            "dims (a size for each -1)",
        )
    return shape


def _zeros(dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """A state of zero bytes: zeros, or empty elements of a STRING state (Triton's)."""
    if dtype == np.object_:
        return np.full(shape, b"", dtype=object)
    return np.zeros(shape, dtype)


def _initial_state_file(filename: str, model_dir: Path, origin: str) -> tuple[Path, int]:
    """``<model>/initial_state/<data_file>`` and its size: a regular file (a FIFO or a
    device would hold the load, or never end)."""
    if (
        not filename
        or any(mark in filename for mark in ("/", "\\", "\0"))
        or filename.startswith(".")
    ):
        raise _config_error(
            origin, f"initial_state data_file '{shown(filename)}' must be a plain name"
        )
    path = model_dir / "initial_state" / filename
    try:
        status = path.stat()
    except OSError as exc:
        raise _config_error(
            origin, f"initial_state data_file '{filename}': {exc.strerror}"
        ) from None
    if not stat.S_ISREG(status.st_mode):
        raise _config_error(origin, f"initial_state data_file '{filename}' is not a regular file")
    return path, status.st_size


def _initial_from_file(
    path: Path, filename: str, dims: tuple[int, ...], dtype: np.dtype[Any], origin: str
) -> np.ndarray:
    """Triton reads a numeric state's file as its raw bytes: its first bytes, as many as
    the state takes; a shorter file is refused."""
    expected = math.prod(dims) * dtype.itemsize
    try:
        with path.open("rb") as handle:
            raw = handle.read(expected)  # at most STATE_MAX_BYTES
    except OSError as exc:
        raise _config_error(
            origin, f"initial_state data_file '{filename}': {exc.strerror}"
        ) from None
    if len(raw) != expected:
        raise _config_error(
            origin,
            f"initial_state data_file '{filename}' holds {len(raw)} bytes; the state takes "
            f"{expected}",
        )
    return np.frombuffer(raw, dtype=dtype).reshape(dims).copy()


def _check_string_initial_file(
    size: int, filename: str, dims: tuple[int, ...], state: str, origin: str
) -> None:
    """A STRING state starts as empty strings whatever its file holds: Triton copies the
    file's bytes into the state and then sets them all to zero (a 4-byte length of 0 for
    each element), so only the file's size counts, and it must be 4 bytes an element
    (Triton fails each sequence's first request otherwise: a size not a multiple of 4 in
    its scheduler, another count of elements in the backend). Its bytes are never read."""
    elements = math.prod(dims)
    if size != 4 * elements:
        raise _config_error(
            origin,
            f"initial_state data_file '{filename}' of the STRING state '{state}' holds {size} "
            f"bytes; a STRING state starts as empty strings whatever its file holds, and the "
            f"file must be 4 bytes for each of its {elements} elements ({4 * elements} bytes), "
            "or use zero_data",
        )


def _invalid(detail: str, model: str) -> ModelServerError:
    return ModelServerError.of(
        error_rules.SEQUENCE,
        detail,
        where=f"the sequence_id, sequence_start and sequence_end parameters of requests to "
        f"'{model}'",
        triton=detail.startswith("inference request to model"),  # Triton's words
    )


def one_row_per_request(model: str) -> ModelServerError:
    """A batching sequence model's refusal of a request of more than one row."""
    return ModelServerError.of(
        error_rules.SEQUENCE_ONE_ROW,
        f"inference request to model '{model}' must specify batch-size 1 due to requirements "
        "of sequence batcher",
        triton=True,
    )


def _flag(parameters: dict[str, Any], key: str, model: str) -> bool:
    value = parameters.get(key, False)
    if not isinstance(value, bool):
        raise _invalid(f"the '{key}' parameter must be true or false", model)
    return value


def sequence_flags(
    model: str, parameters: dict[str, Any], policy: SequencePolicy | None = None
) -> SequenceFlags:
    """The sequence a request belongs to, from its parameters; checked against ``policy``,
    a sequence model's (None: an ensemble's request, whose sequence models' steps check
    it against their own, ``check_sequence``)."""
    raw = parameters.get("sequence_id", 0)
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise _invalid("the 'sequence_id' parameter must be an unsigned integer or a string", model)
    if isinstance(raw, int) and not 0 <= raw < 1 << 64:
        raise _invalid("the 'sequence_id' parameter must be an unsigned 64-bit integer", model)
    if isinstance(raw, str) and len(raw.encode("utf-8")) > 128:
        raise _invalid("string correlation ID cannot be longer than 128 characters", model)
    flags = SequenceFlags(
        raw,
        _flag(parameters, "sequence_start", model),
        _flag(parameters, "sequence_end", model),
    )
    if policy is not None:
        check_sequence(model, flags, policy)
    return flags


def check_sequence(model: str, flags: SequenceFlags, policy: SequencePolicy) -> None:
    """Refuse a request's sequence that ``model`` (a sequence model) cannot take."""
    raw = flags.id
    if (raw == 0 or raw == "") and policy.iterative:
        return  # Triton's iterative sequencer starts a sequence of its own for it
    if raw == 0 or raw == "":
        raise _invalid(
            f"inference request to model '{model}' must specify a non-zero or non-empty "
            "correlation ID",
            model,
        )
    if policy.corrid is not None:
        name, expects, dtype = policy.corrid
        if (expects == "TYPE_STRING") != isinstance(raw, str):
            raise _invalid(
                f"sequence batching control '{name}' data-type is "
                f"'{'BYTES' if isinstance(raw, str) else 'UINT64'}', but model '{model}' "
                f"expects '{expects}'",
                model,
            )
        if isinstance(raw, int) and raw > np.iinfo(dtype).max:
            raise _invalid(
                f"correlation ID {raw} does not fit sequence batching control '{name}' "
                f"({expects}) of model '{model}'",
                model,
            )
