"""Model configuration: Triton's config.pbtxt, parsed against the real schema.

``read_model_config`` parses the protobuf text with the ModelConfig message that
ships in tritonclient; a syntax or schema error names the file and line.
``complete_config`` fills what the file leaves out from the engine's view of
the model (as Triton's auto-complete does), and ``compile_spec`` turns the
completed config into the plain values the hot path reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import json_format, text_format
from google.protobuf.descriptor import FieldDescriptor
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.engines.base import Signature
from modelyard.errors import ConfigError
from modelyard.types import CONFIG_TO_V2, V2_TO_CONFIG, numpy_dtype

CONFIG_FILENAME = "config.pbtxt"
# Triton's auto-complete default for models whose first dimension is variable (its
# --backend-config default-max-batch-size)
AUTOCOMPLETE_MAX_BATCH_SIZE = 4


def _config_error(path: Path | str, detail: str, line: int | None = None) -> ConfigError:
    where = f"{path}:{line}" if line else str(path)
    return ConfigError.of(
        error_rules.MODEL_CONFIG, f"invalid model config {where}: {detail}", where=f"fix {where}"
    )


def parse_model_config(text: str, origin: str = "<config>") -> mc.ModelConfig:
    config = mc.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        line = exc.GetLine() if hasattr(exc, "GetLine") else None
        message = str(exc)
        # ParseError's text starts with "line:col : "; keep only the reason
        if ":" in message and message.split(":", 1)[0].strip().isdigit():
            message = message.split(" : ", 1)[-1]
        raise _config_error(origin, message, line) from None
    refuse_unserved_fields(config, origin, text)
    return config


# config fields that ask for what modelyard does not serve yet: each is refused at load,
# with what to do, rather than loaded and ignored. field -> (is it set?, what to do)
_UNSERVED: dict[str, tuple[Any, str]] = {
    "response_cache": (
        lambda c: (
            c.response_cache.enable
            and (c.HasField("sequence_batching") or c.model_transaction_policy.decoupled)
        ),
        "a sequence model's or a decoupled model's own response cache is not served; set "
        "enable: false",
    ),
    "model_repository_agents": (
        lambda c: any(a.name != "checksum" for a in c.model_repository_agents.agents),
        "of Triton's repository agents, only 'checksum' is run; remove the others from "
        "model_repository_agents",
    ),
    "model_operations": (
        lambda c: len(c.model_operations.op_library_filename) > 0,
        "custom operation libraries are not loaded; remove model_operations",
    ),
    "secondary_devices": (
        lambda c: any(len(g.secondary_devices) > 0 for g in c.instance_group),
        "secondary devices are not placed; remove instance_group's secondary_devices",
    ),
    "passive": (
        lambda c: any(g.passive for g in c.instance_group),
        "passive instances are not served; remove passive: true",
    ),
}


def refuse_unserved_fields(config: mc.ModelConfig, origin: str, text: str = "") -> None:
    """Refuse a config that sets a field modelyard does not serve, naming it and its line."""
    for field, (is_set, instead) in _UNSERVED.items():
        if is_set(config):
            line = next(
                (
                    number
                    for number, content in enumerate(text.splitlines(), 1)
                    if re.match(rf"\s*{field}\b", content)
                ),
                None,
            )
            raise ConfigError.of(
                error_rules.UNSERVED_FIELD,
                f"invalid model config {origin}{f':{line}' if line else ''}: {field} is not served",
                where=instead,
            )


def parse_json_config(document: dict[str, Any], origin: str = "<config>") -> mc.ModelConfig:
    """A config given as JSON (the repository load API's ``config`` parameter)."""
    config = mc.ModelConfig()
    try:
        json_format.ParseDict(_single_as_list(document, config.DESCRIPTOR), config)
    except json_format.ParseError as exc:
        raise _config_error(origin, str(exc)) from None
    refuse_unserved_fields(config, origin)
    return config


def _single_as_list(document: Any, descriptor: Any, depth: int = 0) -> Any:
    """``document`` with a repeated field given one value (``"instance_group": {...}``) as
    a list of it, as Triton's JSON reading takes it; nested messages likewise (bounded:
    a config nests a few levels)."""
    if descriptor is None or not isinstance(document, dict) or depth > 16:
        return document
    fixed: dict[str, Any] = {}
    for key, value in document.items():
        field = descriptor.fields_by_name.get(key) or descriptor.fields_by_camelcase_name.get(key)
        if field is None:
            fixed[key] = value
            continue
        entry = field.message_type
        is_map = entry is not None and entry.GetOptions().map_entry
        if field.label == FieldDescriptor.LABEL_REPEATED and not is_map:
            items = value if isinstance(value, list) else [value]
            fixed[key] = [_single_as_list(item, entry, depth + 1) for item in items]
        elif entry is not None and not is_map:
            fixed[key] = _single_as_list(value, entry, depth + 1)
        else:
            fixed[key] = value
    return fixed


def model_parameter(config: mc.ModelConfig, key: str) -> str | None:
    """A config's ``parameters`` entry as text, stripped; None when the config has none."""
    if key in config.parameters:
        return str(config.parameters[key].string_value).strip()
    return None


def positive_int_parameter(
    model: str, version: int, config: mc.ModelConfig, key: str, default: int
) -> int:
    """A parameter that is a positive whole number, ``default`` when not set; refused at load
    with its key otherwise."""
    text = model_parameter(config, key)
    if not text:
        return default
    value = int(text) if text.isascii() and text.isdigit() and len(text) < 19 else 0
    if value < 1:
        raise ConfigError.of(
            error_rules.PARAMETER,
            f"failed to load '{model}' version {version}: {key} '{text[:40]}' is not a "
            "positive whole number",
            where=f"{key} in {model}/config.pbtxt",
        )
    return value


def config_path(model_dir: Path, config_name: str | None = None) -> Path:
    """The config file a model loads from: ``configs/NAME.pbtxt`` where tritonserver's
    --model-config-name names one and the model has it, else ``config.pbtxt``."""
    if config_name:
        custom = model_dir / "configs" / f"{config_name}.pbtxt"
        if custom.is_file():
            return custom
    return model_dir / CONFIG_FILENAME


def read_model_config(
    model_dir: Path, config_name: str | None = None, required: bool = False,
    check_name: bool = True,
) -> mc.ModelConfig:  # fmt: skip
    """The model's config file, read (none: an empty config to complete from its files);
    ``required``: none is an error, in Triton's words (its --strict-model-config).
    ``check_name`` False: a name that is not the directory's is kept, for the caller to
    refuse once it checked the rest as Triton does (``directory_name_problem``)."""
    path = config_path(model_dir, config_name)
    config = mc.ModelConfig()
    if required and not path.is_file():
        raise ConfigError.of(
            error_rules.NO_MODEL_CONFIG,
            f"failed to open text file for read {path}: No such file or directory",
        )
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _config_error(path, f"cannot read: {exc}") from None
        config = parse_model_config(text, str(path))
    if check_name and directory_name_problem(config, model_dir.name):
        raise _config_error(
            path, f"name '{config.name}' differs from the model directory '{model_dir.name}'"
        )
    config.name = config.name or model_dir.name
    return config


def directory_name_problem(config: mc.ModelConfig, directory: str) -> str | None:
    """Triton's refusal of a config named otherwise than its directory."""
    if config.name and config.name != directory:
        return (
            f"unexpected directory name '{directory}' for model '{config.name}', directory "
            "name must equal model name"
        )
    return None


def config_to_json(config: mc.ModelConfig) -> dict[str, Any]:
    """The config as Triton's model config endpoint shows it: fields at their default value
    too (``max_batch_size: 0``, enum defaults, empty lists), which clients read, each
    message's fields in the order the proto declares them (protobuf's Python writer puts
    those at their default last), and 64-bit integers (dims, reshapes, delays, versions)
    as numbers."""
    out: dict[str, Any] = json_format.MessageToDict(
        config, preserving_proto_field_name=True, including_default_value_fields=True
    )
    _numbers_as_numbers(config, out)
    return out


_INT64_TYPES = frozenset(
    (
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    )
)


def _numbers_as_numbers(message: Any, doc: dict[str, Any]) -> None:
    """64-bit integers as JSON numbers, as Triton prints them (protobuf's JSON writes them
    as strings: ``"dims": ["3", "224"]``), and the fields in the proto's order, through
    every nested message and map."""
    declared = [field.name for field in message.DESCRIPTOR.fields if field.name in doc]
    if list(doc) != declared:
        ordered = {name: doc.pop(name) for name in declared}
        ordered.update(doc)
        doc.clear()
        doc.update(ordered)
    for field in message.DESCRIPTOR.fields:
        value = doc.get(field.name)
        if value is None:
            continue
        held = getattr(message, field.name)
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            target = entry.fields_by_name["value"]
            for key in value:
                if target.message_type is not None:
                    _numbers_as_numbers(held[_map_key(entry, key)], value[key])
                elif target.type in _INT64_TYPES:
                    value[key] = int(value[key])
        elif entry is not None:
            if field.label == FieldDescriptor.LABEL_REPEATED:
                for item, item_doc in zip(held, value, strict=True):
                    _numbers_as_numbers(item, item_doc)
            else:
                _numbers_as_numbers(held, value)
        elif field.type in _INT64_TYPES:
            is_list = field.label == FieldDescriptor.LABEL_REPEATED
            doc[field.name] = [int(v) for v in value] if is_list else int(value)


def _map_key(entry: Any, key: str) -> Any:
    """A JSON map key (always a string) as the map's own key type."""
    return key if entry.fields_by_name["key"].type == FieldDescriptor.TYPE_STRING else int(key)


# backends whose models may declare no tensors (Triton loads a python model, or an
# identity one, whose config names none: it has nothing to check them against)
TENSORS_OPTIONAL = frozenset({"python", "identity"})


def complete_config(
    config: mc.ModelConfig,
    signature: Signature | None,
    origin: str,
    tensors_required: bool = True,
    default_max_batch_size: int = AUTOCOMPLETE_MAX_BATCH_SIZE,
) -> None:
    """Fill inputs, outputs and max_batch_size from the model file where the config is silent
    (``tensors_required``: a model that describes none must name them in its config), as
    Triton's onnxruntime backend completes a config that lacks inputs or outputs: a file
    whose tensors all have a variable first dimension batches, to ``max_batch_size`` or
    ``default_max_batch_size`` (none if 0), dynamically above 1; a file that does not
    batch refuses a ``max_batch_size``."""
    if signature is None:
        if tensors_required and (not config.input or not config.output):
            raise _config_error(
                origin,
                "the model file does not describe its tensors: declare input and output "
                "in config.pbtxt",
            )
        return
    if (config.input or config.batch_input) and config.output:
        return  # Triton's backends complete nothing of a config that names both
    batched_file = signature.batched and all(
        spec.dims and spec.dims[0] == -1 for spec in (*signature.inputs, *signature.outputs)
    )
    if batched_file:
        if config.max_batch_size == 0:
            config.max_batch_size = max(default_max_batch_size, 0)
        batcher = config.HasField("dynamic_batching") or config.HasField("sequence_batching")
        if config.max_batch_size > 1 and not batcher:
            config.dynamic_batching.SetInParent()
    elif config.max_batch_size != 0:
        raise ConfigError.of(
            error_rules.MODEL_CONFIG,
            f"autofill failed for model '{config.name}': model does not support batching "
            "while non-zero max_batch_size is specified",
            where=f"max_batch_size in {origin} (0: the model file has a fixed first dimension)",
            triton=True,
        )
    skip = 1 if config.max_batch_size > 0 else 0
    filled = _server_filled(config)  # sequence controls and states: never a client's tensors
    for specs, field in ((signature.inputs, config.input), (signature.outputs, config.output)):
        if len(field) > 0:
            continue
        for spec in specs:
            if spec.name in filled:
                continue
            entry = field.add()
            entry.name = spec.name
            entry.data_type = mc.DataType.Value(V2_TO_CONFIG[spec.datatype])
            dims = spec.dims[skip:] if len(spec.dims) >= skip else spec.dims
            entry.dims.extend(dims if dims else [1])
            if not dims and config.max_batch_size > 0:  # Triton's: [1], an empty reshape
                entry.reshape.SetInParent()


def _server_filled(config: mc.ModelConfig) -> set[str]:
    """The tensors the server feeds and takes back: the sequence batcher's controls and
    states, and the batch inputs it computes (ragged batching)."""
    sb = config.sequence_batching
    names = {entry.name for entry in sb.control_input}
    for batch_input in config.batch_input:
        names.update(batch_input.target_name)
    for state in sb.state:
        names.update((state.input_name, state.output_name))
    return names


@dataclass(frozen=True, slots=True)
class TensorConfig:
    name: str
    datatype: str  # V2 name
    dtype: np.dtype[Any]
    dims: tuple[int, ...]  # without the batch dimension
    reshape: tuple[int, ...] | None
    optional: bool = False
    allow_ragged_batch: bool = False
    label_filename: str = ""

    def accepts_shape(self, shape: tuple[int, ...]) -> bool:
        if len(shape) != len(self.dims):
            return False
        return all(d == -1 or d == s for d, s in zip(self.dims, shape, strict=True))

    def answered_shape(self, shape: tuple[int, ...], batched: bool) -> tuple[int, ...]:
        """The shape an output with a ``reshape`` is answered in, from the ``shape`` the
        model gave: its dims, each -1 taking in turn the model's size where the reshape has
        a -1 (Triton's ``InferenceResponse::Output::Reshape``), after the batch dim."""
        lead, body = (shape[:1], shape[1:]) if batched else ((), shape)
        reshape = self.reshape or ()
        sizes = iter([body[i] for i, d in enumerate(reshape) if d == -1 and i < len(body)])
        return lead + tuple(next(sizes, -1) if d == -1 else d for d in self.dims)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """The completed config as the hot path reads it: no protobuf lookups per request."""

    name: str
    max_batch_size: int
    inputs: dict[str, TensorConfig]
    outputs: dict[str, TensorConfig]

    @property
    def batched(self) -> bool:
        return self.max_batch_size > 0


def _tensor_config(entry: Any, origin: str, kind: str) -> TensorConfig:
    type_name = mc.DataType.Name(entry.data_type)
    if type_name not in CONFIG_TO_V2:
        raise _config_error(origin, f"{kind} '{entry.name}' has no valid data_type ({type_name})")
    if not entry.name:
        raise _config_error(origin, f"an {kind} has no name")
    dims = tuple(int(d) for d in entry.dims)
    if any(d < -1 or d == 0 for d in dims):
        raise _config_error(origin, f"{kind} '{entry.name}' dims {list(dims)} must be > 0 or -1")
    reshape = tuple(int(d) for d in entry.reshape.shape) if entry.HasField("reshape") else None
    datatype = CONFIG_TO_V2[type_name]
    return TensorConfig(
        name=entry.name,
        datatype=datatype,
        dtype=numpy_dtype(datatype),
        dims=dims,
        reshape=reshape,
        optional=bool(getattr(entry, "optional", False)),
        allow_ragged_batch=bool(getattr(entry, "allow_ragged_batch", False)),
        label_filename=getattr(entry, "label_filename", ""),
    )


def compile_spec(config: mc.ModelConfig, origin: str) -> ModelSpec:
    if config.max_batch_size < 0:
        raise _config_error(origin, f"max_batch_size {config.max_batch_size} must be >= 0")
    inputs = {e.name: _tensor_config(e, origin, "input") for e in config.input}
    outputs = {e.name: _tensor_config(e, origin, "output") for e in config.output}
    if len(inputs) != len(config.input) or len(outputs) != len(config.output):
        raise _config_error(origin, "input and output names must be unique")
    if (not inputs or not outputs) and config.backend not in TENSORS_OPTIONAL:
        raise _config_error(origin, "a model needs at least one input and one output")
    return ModelSpec(config.name, int(config.max_batch_size), inputs, outputs)


def validate_version_policy(config: mc.ModelConfig, origin: str) -> None:
    policy = config.version_policy
    if policy.WhichOneof("policy_choice") == "latest" and policy.latest.num_versions < 1:
        raise _config_error(origin, "version_policy.latest.num_versions must be >= 1")
    if policy.WhichOneof("policy_choice") == "specific" and not policy.specific.versions:
        raise _config_error(origin, "version_policy.specific lists no versions")


def select_versions(config: mc.ModelConfig, available: list[int]) -> list[int]:
    """The versions the version policy asks for, highest first."""
    ordered = sorted(available, reverse=True)
    policy = config.version_policy
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        return ordered
    if choice == "specific":
        wanted = set(policy.specific.versions)
        return [v for v in ordered if v in wanted]
    count = policy.latest.num_versions if choice == "latest" else 1
    return ordered[:count]
