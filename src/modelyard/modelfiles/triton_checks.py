"""Triton's checks of a model config, in its words, before anything of the model loads.

A config is checked as tritonserver checks it when it reads the repository
(``ValidateModelConfig``): names, platform and backend, ``max_batch_size``, the dynamic
and sequence batchers' settings, the response cache's limits and an ensemble's
scheduling (its steps' wiring as a graph); with auto-complete off, its inputs, outputs
and batch inputs and outputs too (``ValidateModelIOConfig``), which an auto-completed
config gets once the model completed it. Each problem is the first Triton finds, in its
text; ``config_problem`` and ``io_problem`` answer None for a config Triton takes.

modelyard's own engines (sklearn, xgboost, lightgbm, identity, python) are backends
Triton does not know, which it lets take any platform.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

ENSEMBLE_PLATFORM = "ensemble"
WILDCARD_DIM = -1
# Triton's platforms and the backend each belongs to (its BackendType)
_PLATFORM_BACKEND = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "torch_aoti": "pytorch_aoti",
}
_KNOWN_BACKENDS = frozenset(_PLATFORM_BACKEND.values())
_TENSORRT_PLATFORM = "tensorrt_plan"
_CORRID_TYPES = (mc.TYPE_UINT64, mc.TYPE_INT64, mc.TYPE_UINT32, mc.TYPE_INT32, mc.TYPE_STRING)
_BOOLEAN_CONTROLS = (
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START,
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END,
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY,
)
_BATCH_INPUT_KINDS = frozenset(
    {
        mc.BatchInput.BATCH_ELEMENT_COUNT,
        mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT,
        mc.BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO,
        mc.BatchInput.BATCH_MAX_ELEMENT_COUNT_AS_SHAPE,
        mc.BatchInput.BATCH_ITEM_SHAPE,
        mc.BatchInput.BATCH_ITEM_SHAPE_FLATTEN,
    }
)


def triton_identity(config: mc.ModelConfig, found_backend: str = "") -> tuple[str, str]:
    """The platform and backend Triton settles on (its server-side auto-complete of those
    fields): a config that names neither takes the backend its files say
    (``found_backend``), and a known backend and its platform complete each other."""
    platform, backend = config.platform, config.backend
    if not platform and not backend:
        backend = found_backend
    if not backend and platform in _PLATFORM_BACKEND:
        backend = _PLATFORM_BACKEND[platform]
    elif not platform and backend in _KNOWN_BACKENDS and backend != "tensorflow":
        platform = next(p for p, b in _PLATFORM_BACKEND.items() if b == backend)
    return platform, backend


def config_problem(config: mc.ModelConfig, found_backend: str = "") -> str | None:
    """Triton's ValidateModelConfig: the first problem of ``config``, whose files say its
    backend is ``found_backend`` ("" where they say none)."""
    name = config.name
    platform, backend = triton_identity(config, found_backend)
    if not name:
        return "model configuration must specify 'name'"
    if not backend and platform != ENSEMBLE_PLATFORM:
        return f"unexpected platform type '{platform}' for {name}"
    if backend and platform == ENSEMBLE_PLATFORM:
        return (
            f"Ensemble model '{name}' must have platform type '{platform}' and empty "
            "backend type"
        )
    if backend in _KNOWN_BACKENDS and _PLATFORM_BACKEND.get(platform) != backend:
        return f"unexpected 'platform' and 'backend' pair, got:{platform}, {backend}"
    if config.max_batch_size < 0:
        return f"'max_batch_size' must be non-negative value for {name}"
    return (
        _dynamic_batching_problem(config)
        or _sequence_batching_problem(config)
        or _ensemble_problem(config, platform)
        or _response_cache_problem(config)
    )


def io_problem(config: mc.ModelConfig) -> str | None:
    """Triton's ValidateModelIOConfig: the first problem of the inputs, outputs, batch
    inputs and batch outputs of ``config``."""
    platform = triton_identity(config)[0]
    for entry in config.input:
        problem = _io_shape_problem(entry, config.max_batch_size, "model input ")
        if problem is None and entry.format in (mc.ModelInput.FORMAT_NHWC,
                                                mc.ModelInput.FORMAT_NCHW):  # fmt: skip
            problem = "model input NHWC/NCHW require 3 dims" if len(entry.dims) != 3 else None
        problem = problem or _tensor_kind_problem(entry, platform, "input")
        if problem:
            return f"{problem} for {config.name}"
    for entry in config.output:
        problem = _io_shape_problem(entry, config.max_batch_size, "model output ")
        problem = problem or _tensor_kind_problem(entry, platform, "output")
        if problem:
            return f"{problem} for {config.name}"
    problem = _batch_io_problem(config)
    return f"{problem} for {config.name}" if problem else None


def _dynamic_batching_problem(config: mc.ModelConfig) -> str | None:
    if not config.HasField("dynamic_batching"):
        return None
    name, db = config.name, config.dynamic_batching
    for size in db.preferred_batch_size:
        if size <= 0:
            return f"dynamic batching preferred size must be positive for {name}"
        if size > config.max_batch_size:
            return f"dynamic batching preferred size must be <= max batch size for {name}"
    levels = db.priority_levels
    if levels != 0:
        if db.default_priority_level == 0 or db.default_priority_level > levels:
            return f"default priority level must be in range [1, {levels}] for {name}"
        for level in db.priority_queue_policy:
            if level == 0 or level > levels:
                return (
                    f"priority queue policy must have priority level in range [1, {levels}] "
                    f"for {name}"
                )
    if db.preserve_ordering:
        if levels > 1:
            return f"Only one priority level is allowed when 'preserve_ordering' is true for {name}"
        policies = [db.default_queue_policy, *db.priority_queue_policy.values()]
        for policy in policies:
            if policy.default_timeout_microseconds != 0 and (
                policy.timeout_action == mc.ModelQueuePolicy.DELAY
            ):
                return (
                    "Queue policy can not have DELAY as timeout action when "
                    f"'preserve_ordering' is true for {name}"
                )
    return None


def _sequence_batching_problem(config: mc.ModelConfig) -> str | None:
    if not config.HasField("sequence_batching"):
        return None
    name, sb = config.name, config.sequence_batching
    if config.response_cache.enable:
        return (
            f"Response Cache does not currently support model {name} with sequence batching "
            "scheduler. Please disable the response cache."
        )
    for kind in _BOOLEAN_CONTROLS:
        problem = _control_problem(sb, name, kind, boolean=True)
        if problem:
            return problem
    corrid = mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID
    problem = _control_problem(sb, name, corrid, boolean=False)
    if problem:
        return problem
    for control_input in sb.control_input:
        for control in control_input.control:
            if control.kind == corrid and control.data_type not in _CORRID_TYPES:
                return (
                    f"unexpected data type for control CONTROL_SEQUENCE_CORRID for {name}. "
                    "Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 "
                    "and TYPE_STRING"
                )
    if sb.HasField("oldest"):
        for size in sb.oldest.preferred_batch_size:
            if size <= 0:
                return f"sequence batching preferred batch size must be positive for {name}"
            if size > config.max_batch_size:
                return (
                    "sequence batching preferred batch size must be <= max batch size for "
                    f"{name}"
                )
    if sb.HasField("direct") and not 0.0 <= sb.direct.minimum_slot_utilization <= 1.0:
        return (
            f"sequence batching minimum slot utilization must be in range (0.0, 1.0] for {name}"
        )
    return None


def _control_problem(
    sb: mc.ModelSequenceBatching, name: str, kind: int, boolean: bool
) -> str | None:
    """Triton's Get{Boolean,Typed}SequenceControlProperties: one control kind's tensors."""
    kind_name = mc.ModelSequenceBatching.Control.Kind.Name(kind)
    seen_tensors: set[str] = set()
    seen = False
    for control_input in sb.control_input:
        if not control_input.name:
            return f"sequence batching control tensor must have a name for {name}"
        if control_input.name in seen_tensors:
            return (
                f"sequence batching control tensor '{control_input.name}' is specified for "
                f"multiple control kinds for {name}"
            )
        seen_tensors.add(control_input.name)
        for control in control_input.control:
            if control.kind != kind:
                continue
            if seen:
                return f"sequence batching specifies multiple {kind_name} tensors for {name}"
            seen = True
            given = [
                (field_name, len(getattr(control, field_name)))
                for field_name in ("int32_false_true", "fp32_false_true", "bool_false_true")
                if len(getattr(control, field_name))
            ]
            if not boolean:
                if given:
                    return (
                        "sequence batching must not specify either 'int32_false_true', "
                        f"'fp32_false_true' or 'bool_false_true' for {kind_name} for {name}"
                    )
                continue
            if not given:
                return (
                    "sequence batching must specify either 'int32_false_true', "
                    f"'fp32_false_true' or 'bool_false_true' for {kind_name} for {name}"
                )
            if len(given) > 1:
                return (
                    "sequence batching specifies more than one from 'int32_false_true', "
                    f"'fp32_false_true' and 'bool_false_true' for {kind_name} for {name}"
                )
            field_name, count = given[0]
            if count != 2:
                return (
                    f"sequence batching control '{field_name}' must have exactly 2 entries "
                    f"for {kind_name} for {name}"
                )
    return None


def _response_cache_problem(config: mc.ModelConfig) -> str | None:
    if config.model_transaction_policy.decoupled and config.response_cache.enable:
        return (
            f"Response Cache does not currently support model {config.name} with 'decoupled' "
            "transaction policy. Please disable the response cache."
        )
    return None


# ---- an ensemble's scheduling ---------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """An ensemble tensor in the data flow: written by a step's output map, or read."""

    name: str
    is_output: bool
    ready: bool = False
    before: list[_Node] = field(default_factory=list)
    after: list[_Node] = field(default_factory=list)


def _ensemble_problem(config: mc.ModelConfig, platform: str) -> str | None:
    name = config.name
    if not config.HasField("ensemble_scheduling"):
        if platform == ENSEMBLE_PLATFORM:
            return (
                f"ensemble scheduling must be set for ensemble {name} whose platform is "
                f"{ENSEMBLE_PLATFORM}"
            )
        return None
    if platform != ENSEMBLE_PLATFORM:
        return (
            f"ensemble scheduling cannot be set for model '{name}' whose platform is not "
            f"{ENSEMBLE_PLATFORM}"
        )
    if len(config.instance_group):
        return f"instance group should not be specified for ensemble '{name}'"
    if config.HasField("optimization"):
        return f"optimization should not be specified for ensemble '{name}'"
    if len(config.model_warmup):
        return f"model_warmup can not be specified for ensemble '{name}'"
    if not config.ensemble_scheduling.step:
        return f"must specify 'step' for ensemble '{name}'"
    graph: dict[str, _Node] = {}
    problem = _ensemble_graph(config, graph)
    return problem or _ensemble_flow_problem(config, graph)


def _ensemble_graph(config: mc.ModelConfig, graph: dict[str, _Node]) -> str | None:
    """Triton's BuildEnsembleGraph: each step's outputs after each of its inputs."""
    name = config.name
    for index, step in enumerate(config.ensemble_scheduling.step):
        for field_name in ("model_name", "input_map", "output_map"):
            if not getattr(step, field_name):
                return f"must specify '{field_name}' in step {index} of ensemble '{name}'"
        written: list[_Node] = []
        for tensor in step.output_map.values():
            node = graph.get(tensor)
            if node is None:
                node = graph[tensor] = _Node(tensor, is_output=True)
            elif node.is_output:
                return (
                    f"ensemble tensor '{tensor}' can appear in an output map only once for "
                    f"ensemble '{name}' step {index}"
                )
            else:
                node.is_output = True
            written.append(node)
        for tensor in step.input_map.values():
            node = graph.setdefault(tensor, _Node(tensor, is_output=False))
            for output in written:
                output.before.append(node)
                node.after.append(output)
    return None


def _ensemble_flow_problem(config: mc.ModelConfig, graph: dict[str, _Node]) -> str | None:
    """Triton's data-flow check: every ensemble input used, every output written from the
    inputs, no tensor left over."""
    name = config.name
    ready: deque[_Node] = deque()
    for entry in config.input:
        node = graph.get(entry.name)
        if node is None:
            return f"ensemble input '{entry.name}' for ensemble {name}' is not used"
        node.ready = True
        ready.append(node)
    while ready:
        for following in ready.popleft().after:
            if not following.ready and all(n.ready for n in following.before):
                following.ready = True
                ready.append(following)
    outputs: set[str] = set()
    for entry in config.output:
        node = graph.get(entry.name)
        if node is None:
            return f"ensemble output '{entry.name}' for ensemble {name}' is not used"
        if not node.ready:
            return _not_written(name, node)
        outputs.add(entry.name)
    for tensor, node in graph.items():
        if tensor not in outputs and (not node.ready or not node.after):
            return f"ensemble tensor '{tensor}' is unused in ensemble '{name}'"
    return None


def _not_written(ensemble: str, node: _Node) -> str:
    """Triton's message of an ensemble output no step writes, with the first tensor it
    depends on that nothing connects."""
    said = f"output '{node.name}' for ensemble '{ensemble}' is not written"
    last, before = node, node.before
    seen: set[str] = set()
    while before:
        following: list[_Node] = []
        for candidate in before:
            if not candidate.ready and candidate.name not in seen:
                seen.add(candidate.name)
                last, following = candidate, candidate.before
                break
        before = following
    if last is not node:
        said += f": at least one of its depending tensors, '{last.name}', is not connected"
    return said


# ---- inputs and outputs ----------------------------------------------------------------


def _io_shape_problem(entry: Any, max_batch_size: int, prefix: str) -> str | None:
    """Triton's ValidateIOShape of one input or output."""
    if not entry.name:
        return f"{prefix}must specify 'name'"
    prefix = f"{prefix}'{entry.name}' "
    if entry.data_type == mc.TYPE_INVALID:
        return f"{prefix}must specify 'data_type'"
    if not entry.dims:
        return f"{prefix}must specify 'dims'"
    reshaped = entry.HasField("reshape")
    if reshaped and not entry.reshape.shape and max_batch_size == 0:
        return (
            f"{prefix}cannot have empty reshape for non-batching model as scalar tensors are "
            "not supported"
        )
    if any(d < 1 and d != WILDCARD_DIM for d in entry.dims):
        return (
            f"{prefix}dimension must be integer >= 1, or {WILDCARD_DIM} to indicate a "
            "variable-size dimension"
        )
    if not reshaped:
        return None
    shape = list(entry.reshape.shape)
    if any(d < 1 and d != WILDCARD_DIM for d in shape):
        return (
            f"{prefix}reshape dimensions must be integer >= 1, or {WILDCARD_DIM} to indicate "
            "a variable-size dimension"
        )
    dims_size, reshape_size = _element_count(entry.dims), _element_count(shape)
    if dims_size != reshape_size and (reshape_size != 0 or dims_size != 1):
        return f"{prefix}has different size for dims and reshape"
    if dims_size == WILDCARD_DIM:
        dims_runs, reshape_runs = _runs(entry.dims), _runs(shape)
        if len(dims_runs) != len(reshape_runs):
            return (
                f"{prefix}has different number of variable-size dimensions for dims and "
                "reshape"
            )
        if dims_runs != reshape_runs:
            return f"{prefix}has different size for dims and reshape"
    return None


def _element_count(dims: Iterable[int]) -> int:
    """Triton's GetElementCount: the product, -1 where a dimension is variable, 0 for none."""
    dims = list(dims)
    if not dims:
        return 0
    count = 1
    for d in dims:
        if d == WILDCARD_DIM:
            return WILDCARD_DIM
        count *= d
    return count


def _runs(dims: Iterable[int]) -> list[int]:
    """The element counts of the runs of fixed dimensions between variable ones."""
    runs, current = [], 1
    for d in dims:
        if d == WILDCARD_DIM:
            runs.append(current)
            current = 1
        else:
            current *= d
    return [*runs, current]


def _tensor_kind_problem(entry: Any, platform: str, kind: str) -> str | None:
    if platform != _TENSORRT_PLATFORM and entry.is_shape_tensor:
        return "shape tensors are only supported for TensorRT platform"
    if entry.is_non_linear_format_io:
        if platform != _TENSORRT_PLATFORM:
            return "Non-linear IO format is only supported for the TensorRT platform"
        if len(entry.dims) != 3:
            return f"Non-linear IO format {kind} requires 3 dims"
    return None


def _batch_io_problem(config: mc.ModelConfig) -> str | None:
    """Triton's ValidateBatchIO."""
    inputs = {entry.name for entry in config.input}
    outputs = {entry.name for entry in config.output}
    for batch_input in config.batch_input:
        kind = mc.BatchInput.Kind.Name(batch_input.kind)
        if batch_input.kind not in _BATCH_INPUT_KINDS:
            return f"unknown batch input kind '{kind}'"
        if len(batch_input.source_input) != 1:
            return (
                f"batch input kind '{kind}' expects 1 source input, got "
                f"{len(batch_input.source_input)}"
            )
        if batch_input.data_type not in (mc.TYPE_INT32, mc.TYPE_FP32):
            return "batch input data type must be TYPE_INT32 or TYPE_FP32"
        for source in batch_input.source_input:
            if source not in inputs:
                return f"unknown source input name '{source}'"
    for batch_output in config.batch_output:
        kind = mc.BatchOutput.Kind.Name(batch_output.kind)
        if batch_output.kind != mc.BatchOutput.BATCH_SCATTER_WITH_INPUT_SHAPE:
            return f"unknown batch output kind '{kind}'"
        if len(batch_output.source_input) != 1:
            return (
                f"batch output kind '{kind}' expects 1 source input, got "
                f"{len(batch_output.source_input)}"
            )
        for source in batch_output.source_input:
            if source not in inputs:
                return f"unknown source input name '{source}'"
        targets: set[str] = set()
        for target in batch_output.target_name:
            if target not in outputs:
                return f"unknown target output name '{target}'"
            if target in targets:
                return f"target output name '{target}' can only be specified once"
            targets.add(target)
    return None


# ---- the onnxruntime backend's checks of a config against its model file ---------------


def onnx_problem(config: mc.ModelConfig, inputs: list[Any], outputs: list[Any]) -> str | None:
    """Triton's onnxruntime backend's ValidateInputs and ValidateOutputs: the config's
    tensors against the model file's (``inputs``, ``outputs``: each with ``name``,
    ``datatype`` (V2) and ``dims``), in its words."""
    name, max_batch_size = config.name, config.max_batch_size
    sb = config.sequence_batching
    controls = {c.kind for entry in sb.control_input for c in entry.control}
    fed = controls & {*_BOOLEAN_CONTROLS, mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID}
    expected = (
        sum(not entry.optional for entry in config.input)
        + len(config.batch_input)
        + len(fed)
        + len(sb.state)
    )
    if len(inputs) != expected:
        return (
            f"unable to load model '{name}', configuration expects {expected} inputs, model "
            f"provides {len(inputs)}"
        )
    files = {spec.name: spec for spec in inputs}
    for entry in config.input:
        if entry.optional and max_batch_size != 0:
            return (
                f"unable to load model '{name}', optional input '{entry.name}' is not supported "
                "for models that support batching"
            )
        problem = _onnx_tensor_problem(config, entry, files, "input", exact=False)
        if problem:
            return problem
    files = {spec.name: spec for spec in outputs}
    batch_outputs = {t for entry in config.batch_output for t in entry.target_name}
    for entry in config.output:
        exact = entry.name not in batch_outputs
        problem = _onnx_tensor_problem(config, entry, files, "output", exact=exact, dims=exact)
        if problem:
            return problem
    return None


def _onnx_tensor_problem(
    config: mc.ModelConfig, entry: Any, files: dict[str, Any], kind: str, exact: bool,
    dims: bool = True,
) -> str | None:  # fmt: skip
    name = config.name
    spec = files.get(entry.name)
    if spec is None:
        return (
            f"unexpected inference {kind} '{entry.name}', allowed {kind}s are: "
            f"{', '.join(sorted(files))}"
        )
    declared = mc.DataType.Name(entry.data_type)
    provided = "TYPE_STRING" if spec.datatype == "BYTES" else f"TYPE_{spec.datatype}"
    if declared != provided:
        return (
            f"unable to load model '{name}', configuration expects datatype {declared} for "
            f"{kind} '{entry.name}', model provides {provided}"
        )
    shape = list(entry.reshape.shape) if entry.HasField("reshape") else list(entry.dims)
    model = list(spec.dims)
    # a ragged input's shape [-1] is checked with every engine's (_check_signature)
    if not dims or getattr(entry, "allow_ragged_batch", False):
        return None
    if not model:
        if any(d != 1 for d in shape):
            return (
                f"unable to load model '{name}', scalar tensor '{entry.name}', should only "
                "provide 1 in the model configuration when the model doesn't support "
                f"batching. Model configuration provided: {_shape(shape)}."
            )
        return None
    return _dims_problem(name, entry.name, model, shape, config.max_batch_size, exact)


def _dims_problem(
    model: str, tensor: str, model_shape: list[int], dims: list[int], max_batch_size: int,
    exact: bool,
) -> str | None:  # fmt: skip
    """Triton's onnxruntime CompareDimsSupported."""
    said = f"model '{model}', tensor '{tensor}': "
    if max_batch_size > 0:
        if not model_shape or model_shape[0] != WILDCARD_DIM:
            return (
                f"{said}for the model to support batching the shape should have at least 1 "
                "dimension and the first dimension must be -1; but shape expected by the "
                f"model is {_shape(model_shape)}"
            )
        full = [WILDCARD_DIM, *dims]
        if not _dims_match(model_shape, full, exact):
            return (
                f"{said}the model expects {len(model_shape)} dimensions (shape "
                f"{_shape(model_shape)}) but the model configuration specifies {len(full)} "
                "dimensions (an initial batch dimension because max_batch_size > 0 followed "
                f"by the explicit tensor shape, making complete shape {_shape(full)})"
            )
        return None
    if not _dims_match(model_shape, dims, exact):
        return (
            f"{said}the model expects {len(model_shape)} dimensions (shape "
            f"{_shape(model_shape)}) but the model configuration specifies {len(dims)} "
            f"dimensions (shape {_shape(dims)})"
        )
    return None


def _dims_match(model_shape: list[int], dims: list[int], exact: bool) -> bool:
    return len(model_shape) == len(dims) and all(
        m == d for m, d in zip(model_shape, dims, strict=True) if exact or m != WILDCARD_DIM
    )


def _shape(dims: Iterable[int]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"
