"""One loaded model version: completed config, engines, scheduler and state."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.engines import (
    BACKENDS,
    PYTHON_BACKEND_FILE,
    Engine,
    LoadContext,
    Signature,
    backend_for,
    engine_class,
    python_based_backend,
)
from modelyard.engines.base import DecoupledRequest, triton_instance_name
from modelyard.errors import Code, ConfigError, ModelServerError, ModelyardError, load_error
from modelyard.hardware.memory import settled_resident_bytes
from modelyard.hardware.placement import (
    asks_for_gpus,
    device_memory_used,
    placed_groups,
    visible_gpus,
)
from modelyard.modelfiles.config import (
    AUTOCOMPLETE_MAX_BATCH_SIZE,
    TENSORS_OPTIONAL,
    ModelSpec,
    compile_spec,
    complete_config,
    config_to_json,
)
from modelyard.modelfiles.served_config import fill_backend_fields, served_config
from modelyard.modelfiles.triton_checks import io_problem, onnx_problem
from modelyard.server.batcher import BatchingPolicy, priority_problem
from modelyard.server.decoupled import DecoupledScheduler
from modelyard.server.embedding_cache import EmbeddingCache, parse_size
from modelyard.server.instance_loading import Loaded, load_instances
from modelyard.server.loop_load import LoopLoad
from modelyard.server.ragged import RaggedBatching
from modelyard.server.resource_limiter import InstanceNeeds, ResourceLimiter, instance_needs
from modelyard.server.scheduler import Scheduler
from modelyard.server.sequence_batcher import SequenceScheduler
from modelyard.server.sequence_policy import SequencePolicy
from modelyard.server.text_encoding import TextEncoding, is_text_model, load_text_encoding
from modelyard.server.token_batching import TokenBatching, token_batching_for
from modelyard.server.token_scheduler import TokenScheduler
from modelyard.types import CONFIG_TO_V2, numpy_dtype

if TYPE_CHECKING:
    from modelyard.server.scheduling import ModelScheduler

log = structlog.get_logger("modelyard.server")

class VersionState(StrEnum):
    LOADING = "LOADING"
    READY = "READY"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"


@dataclass(eq=False)
class _Completed:
    """What completing a version's config made, as its instances load."""

    config: mc.ModelConfig = field(default_factory=mc.ModelConfig)
    spec: ModelSpec | None = None
    graph: Signature | None = None  # what the model file says of its tensors
    signature: Signature | None = None  # the tensors served (a text model's: its texts)
    text: TextEncoding | None = None
    tokens: TokenBatching | None = None
    ragged: RaggedBatching | None = None  # Triton's ragged batching, where the config asks
    instance_configs: list[mc.ModelConfig] = field(default_factory=list)
    samples: list[WarmupSample] = field(default_factory=list)


@dataclass(eq=False)
class InstanceMaker:
    """How one more instance of a loaded version loads and warms up, as its first ones did
    (Triton's instance update adds instances to a model that serves)."""

    model: str
    version: int
    engine_class: type[Engine]
    context: LoadContext  # the first instance's, less its config, device and index
    samples: list[WarmupSample]
    tokens: TokenBatching | None = None
    ragged: RaggedBatching | None = None

    def make(self, index: int, device: str, config: mc.ModelConfig) -> Engine:
        """Instance ``index`` of ``config`` loaded on ``device`` and warmed up (raises,
        having released it, if either fails)."""
        engine = self.engine_class()
        engine.load(dataclasses.replace(
            self.context, config=copy.deepcopy(config), device=device, instance_index=index,
            config_complete=None,
        ))  # fmt: skip
        try:
            run_warmup(
                engine, self.samples, self.tokens, self.ragged, model=self.model,
                version=self.version, instance=triton_instance_name(config, index),
                decoupled=config.model_transaction_policy.decoupled,
            )  # fmt: skip
        except BaseException:
            release_quietly([engine])
            raise
        return engine


@dataclass(eq=False)
class ModelVersion:
    name: str
    version: int
    config: mc.ModelConfig
    spec: ModelSpec
    backend: str
    scheduler: ModelScheduler  # its kind's (scheduling.py): dynamic, sequence, decoupled...
    engines: list[Engine]
    labels: dict[str, list[str]] = field(default_factory=dict)
    memory_bytes: int = 0  # host RSS growth while the engines loaded
    device_memory_bytes: int = 0  # GPU memory growth on its devices while they loaded
    devices: list[str] = field(default_factory=lambda: ["cpu"])
    state: VersionState = VersionState.READY
    reason: str = ""
    sequence: SequencePolicy | None = None  # a sequence model's policy (sequence_batching)
    tokens: TokenBatching | None = None  # an encoder's token batching (and its text cache)
    # each instance's device and instance group (the Nth engine's is the Nth)
    placed: list[tuple[str, mc.ModelInstanceGroup]] = field(default_factory=list)
    # Triton's rate limiter, where an instance names resources, and each instance's needs
    limiter: ResourceLimiter | None = None
    needs: list[InstanceNeeds | None] = field(default_factory=list)
    maker: InstanceMaker | None = None  # how more instances load (None: an ensemble's)

    @property
    def decoupled(self) -> bool:
        return self.scheduler.decoupled

    # whether its engines read each request (Triton's python backend): its parameters
    takes_requests: bool = field(init=False, default=False)
    # what every response carries (Triton's identity backend's parameters); empty for most
    response_parameters: dict[str, Any] = field(init=False, default_factory=dict)
    _config_document: dict[str, Any] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.takes_requests = any(getattr(e, "takes_requests", False) for e in self.engines)
        if self.engines:
            self.response_parameters = dict(self.engines[0].response_parameters)

    def drain_and_unload(self, timeout: float | None = None) -> None:
        """Finish queued requests, then release the engines (blocking: run off the loop)."""
        self.scheduler.close()
        self.scheduler.join(timeout)
        said = "TRITONBACKEND_ModelInstanceFinalize: delete instance state"
        for _ in self.engines:
            log.info("instance_unloading", model=self.name, version=self.version, triton=said)
        try:
            unload_all(self.engines)
            log.info("model_unloading", model=self.name, version=self.version,
                     triton="TRITONBACKEND_ModelFinalize: delete model state")  # fmt: skip
        finally:  # an engine that failed to unload (finalize raised) is released all the same
            self.state = VersionState.UNAVAILABLE
            if self.limiter is not None:
                self.limiter.remove(self.needs)

    def reconfigured(self, config: mc.ModelConfig) -> None:
        """Serve ``config`` from now (an instance update changed its instance groups)."""
        self.config = config
        self._config_document = None

    def config_document(self) -> dict[str, Any]:
        """The completed config as Triton's JSON (made once: the version's config is fixed
        once it has loaded). Not to be changed by its readers."""
        if self._config_document is None:
            self._config_document = config_to_json(served_config(self.config))
        return self._config_document

    def engine_info(self) -> dict[str, Any]:
        return {"backend": self.backend, **(self.engines[0].describe() if self.engines else {})}


def _engine_class(backend: str, backend_directory: Path | None) -> type[Engine]:
    """The engine of a backend modelyard has; with a backend directory, an unknown name's
    refusal says where a Python-based backend of that name would be."""
    if backend in BACKENDS or backend_directory is None:
        return engine_class(backend)
    raise ConfigError.of(
        error_rules.UNKNOWN_BACKEND,
        f"unable to find backend library for backend '{backend}', try specifying runtime on "
        f"the model configuration. (unknown backend '{backend}': modelyard serves "
        f"{', '.join(BACKENDS)}; nor is there a Python-based backend "
        f"'{backend}/{PYTHON_BACKEND_FILE}' in the backend directory)",
        where=f"backend in config.pbtxt, or {backend}/{PYTHON_BACKEND_FILE} under "
        "--backend-directory",
        triton=True,
    )


def _check_runtime(model: str, runtime: str, backend: str, version_dir: Path) -> None:
    """A config's ``runtime`` (the backend library Triton loads) as Triton looks for it:
    in the version directory, then the model's. modelyard's engines stand in for the
    backend's own library (``libtriton_<backend>.so``) and a Python-based backend
    (``model.py``); any other library is refused in Triton's words where it is missing or
    lies outside the directory it was found from, else as a library modelyard does not
    load. Nothing is opened."""
    if not runtime or runtime in (f"libtriton_{backend}.so", PYTHON_BACKEND_FILE):
        return
    where = f"runtime in {model}/config.pbtxt"
    searched = (version_dir, version_dir.parent)
    for directory in searched:
        path = directory / runtime
        if not path.exists():
            continue
        root = os.path.realpath(directory)
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise ConfigError.of(
                error_rules.UNKNOWN_BACKEND,
                f"backend library name '{runtime}' escapes backend directory '{directory}', "
                f"for model '{model}', check model config runtime field",
                where=where,
                triton=True,
            )
        raise ConfigError.of(
            error_rules.UNKNOWN_BACKEND,
            f"backend library '{runtime}' for model '{model}' is a C++ backend library, which "
            f"modelyard does not load (its {backend} engine serves backend '{backend}')",
            where=where,
        )
    raise ConfigError.of(
        error_rules.UNKNOWN_BACKEND,
        f"unable to find backend library '{runtime}' for model '{model}', searched: "
        + " ".join(f"'{d}'" for d in searched),
        where=where,
        triton=True,
    )


def _find_artifact(
    model: str, version: int, version_dir: Path, config: mc.ModelConfig, cls: type[Engine]
) -> Path:
    names: tuple[str, ...] = (
        (config.default_model_filename,) if config.default_model_filename else ()
    )
    names = names or tuple(cls.default_filenames)
    if not names:  # a backend without a model file (Triton's identity)
        return version_dir
    for filename in names:
        if "/" in filename or filename in ("", ".", ".."):
            continue
        candidate = version_dir / filename
        if candidate.exists():
            return candidate
    raise load_error(
        model,
        version,
        f"no model file {' or '.join(names)} in {version_dir}",
        "put the model file in the version directory, or set default_model_filename",
    )


def instance_devices(model: str, version: int, config: mc.ModelConfig) -> list[str]:
    """The device of each instance, from instance_group and the GPUs this host has."""
    return [device for device, _ in instance_placements(model, version, config)]


def instance_placements(
    model: str, version: int, config: mc.ModelConfig
) -> list[tuple[str, mc.ModelInstanceGroup]]:
    """Each instance's device and instance group."""
    placed = placed_groups(config, visible_gpus() if asks_for_gpus(config) else [])
    if isinstance(placed, str):
        raise load_error(
            model,
            version,
            placed,
            f"instance_group (kind, gpus) in {model}/config.pbtxt",
        )
    return placed


def instance_count(model: str, version: int, config: mc.ModelConfig) -> int:
    return len(instance_devices(model, version, config))


def _read_labels(
    model_dir: Path, config: mc.ModelConfig, signature: Signature | None
) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = dict(signature.labels) if signature else {}
    for output in config.output:
        filename = output.label_filename
        if not filename or "/" in filename or filename.startswith("."):
            continue
        path = model_dir / filename
        if path.is_file():
            labels[output.name] = path.read_text(encoding="utf-8").splitlines()
    return labels


def _check_signature(
    model: str, version: int, config: mc.ModelConfig, signature: Signature | None,
    names: bool = True,
) -> None:  # fmt: skip
    """The config's tensors against the model file's: with ``names``, each is in the file
    (the onnxruntime backend's own checks say so in its words, ``onnx_problem``)."""
    if signature is None:
        return
    known_in = {s.name for s in signature.inputs}
    known_out = {s.name for s in signature.outputs}
    for entry, known, kind in [(e, known_in, "input") for e in config.input] + [
        (e, known_out, "output") for e in config.output
    ]:
        if names and entry.name not in known:
            raise load_error(
                model,
                version,
                f"config {kind} '{entry.name}' is not in the model file (it has "
                f"{', '.join(sorted(known))})",
                f"the {kind} names in {model}/config.pbtxt",
            )
    for target in (t for entry in config.batch_input for t in entry.target_name):
        if target not in known_in:
            raise load_error(
                model,
                version,
                f"batch_input target '{target}' is not an input of the model file (it has "
                f"{', '.join(sorted(known_in))})",
                f"batch_input's target_name in {model}/config.pbtxt",
            )
    _check_scalars(model, version, config, signature)
    graph_dims = {s.name: s.dims for s in signature.inputs}
    for entry in config.input:
        if entry.allow_ragged_batch and graph_dims[entry.name] != (-1,):
            raise load_error(  # Triton's onnxruntime backend's words
                model,
                version,
                f"configuration expects model provides input with shape [-1] for ragged input "
                f"'{entry.name}', model provides {list(graph_dims[entry.name])}",
                f"the model file's input '{entry.name}' (one variable dimension), or "
                f"allow_ragged_batch in {model}/config.pbtxt",
            )


def _check_scalars(model: str, version: int, config: mc.ModelConfig, signature: Signature) -> None:
    """A tensor of no dimensions in the model file (a scalar, or one whose shape the file
    leaves out) is served with config dims of ones only, as Triton's onnxruntime backend
    checks (its words)."""
    files = {s.name: s.dims for s in (*signature.inputs, *signature.outputs)}
    for entry in (*config.input, *config.output):
        dims = list(entry.reshape.shape) if entry.HasField("reshape") else list(entry.dims)
        if files.get(entry.name) == () and any(d != 1 for d in dims):
            raise load_error(
                model,
                version,
                f"unable to load model '{model}', scalar tensor '{entry.name}', should only "
                "provide 1 in the model configuration when the model doesn't support "
                f"batching. Model configuration provided: [{','.join(map(str, dims))}].",
                f"the dims of '{entry.name}' in {model}/config.pbtxt (ones: the model file's "
                "tensor is a scalar)",
            )


# a warm-up sample: its name, inputs, the outputs asked, how many times it runs
WarmupSample = tuple[str, dict[str, np.ndarray], list[str], int]


def run_warmup(
    engine: Engine,
    samples: list[WarmupSample],
    tokens: TokenBatching | None = None,
    ragged: RaggedBatching | None = None,
    *,
    model: str = "",
    version: int = 0,
    instance: str = "",
    decoupled: bool = False,
) -> None:
    """Execute warm-up samples on one engine before its version takes traffic (an encoder's
    as its scheduler would: tokenized, padded, pooled; a ragged batch's assembled; a
    decoupled model's until its final response), each run logged and a failure refused in
    Triton's words."""
    for sample, inputs, outputs, count in samples:
        for iteration in range(1, max(1, count) + 1):
            log.debug(
                "warmup_sample", model=model, instance=instance, sample=sample,
                iteration=iteration, triton=f"model '{model}' instance {instance} is running "
                f"warmup sample '{sample}' for iteration {iteration}",
            )  # fmt: skip
            try:
                if decoupled:
                    _execute_until_final(engine, inputs, outputs)
                elif ragged is not None:
                    engine.execute(ragged.assemble([inputs], np.concatenate), outputs)
                elif tokens is None:
                    engine.execute(inputs, outputs)
                else:
                    rows = len(next(iter(inputs.values()))) if inputs else 1
                    tokens.execute_unqueued(engine, inputs, outputs, rows)
            except Exception as exc:
                said = exc.detail if isinstance(exc, ModelyardError) else str(exc)
                raise load_error(
                    model, version, f"failed to run warmup sample '{sample}': {said}",
                    f"model_warmup '{sample}' in {model}/config.pbtxt, or the model's execute",
                ) from exc  # fmt: skip


# how long a decoupled model's warm-up sample may take to send its final response
WARMUP_FINAL_S = 60.0


def _execute_until_final(engine: Any, inputs: dict[str, np.ndarray], outputs: list[str]) -> None:
    """One warm-up request of a decoupled model, its responses dropped; raises the first
    error it sends, or if no final response comes."""
    final = threading.Event()
    errors: list[Any] = []

    def deliver(answer: Any, error: Any = None, last: bool = False, **_: Any) -> None:
        if error is not None:
            errors.append(error)
        if last:
            final.set()

    engine.execute_decoupled([DecoupledRequest(inputs, outputs, deliver, lambda: False)])
    if not final.wait(WARMUP_FINAL_S):
        raise TimeoutError(f"no final response within {WARMUP_FINAL_S:.0f}s")
    if errors:
        raise errors[0] if isinstance(errors[0], BaseException) else RuntimeError(errors[0])


def _serialized_strings(raw: bytes, count: int) -> np.ndarray | None:
    """Triton's serialized BYTES (each element a 4-byte little-endian length, then its
    bytes), as a warm-up file holds them; the elements repeat to fill ``count`` (a file
    holds one sample, the same in every row of the batch). None: not that format."""
    elements: list[bytes] = []
    at = 0
    while at + 4 <= len(raw):
        size = int.from_bytes(raw[at : at + 4], "little")
        if at + 4 + size > len(raw):
            return None
        elements.append(raw[at + 4 : at + 4 + size])
        at += 4 + size
    if at != len(raw) or not elements:
        return None
    return np.array([elements[i % len(elements)] for i in range(count)], dtype=object)


def _warmup_file_error(model: str, sample: str, name: str, file: str, problem: str) -> ConfigError:
    return ConfigError.of(
        error_rules.MODEL_CONFIG,
        f"model '{model}' warm-up sample '{sample}', input '{name}': {problem}",
        where=f"model_warmup '{sample}' input_data_file in {model}/config.pbtxt, or the file "
        f"{model}/warmup/{file}",
    )


# the most one warm-up input may hold, or its file may be (a config's dims and a file of the
# model's folder are bounded as a caller's bytes are: before they cost memory)
WARMUP_INPUT_MAX_BYTES = 256 * 2**20


def _warmup_input_error(model: str, sample: str, name: str, problem: str) -> ConfigError:
    return ConfigError.of(
        error_rules.MODEL_CONFIG,
        f"model '{model}' warm-up sample '{sample}', input '{name}': {problem}",
        where=f"model_warmup '{sample}' in {model}/config.pbtxt",
    )


def _read_warmup_file(path: Path, model: str, sample: str, name: str) -> bytes:
    """A sample's ``input_data_file``, refused past ``WARMUP_INPUT_MAX_BYTES``."""
    with path.open("rb") as file:  # its size asked first: a file past the bound is not read
        too_big = os.fstat(file.fileno()).st_size > WARMUP_INPUT_MAX_BYTES
        raw = b"" if too_big else file.read(WARMUP_INPUT_MAX_BYTES + 1)
    if too_big or len(raw) > WARMUP_INPUT_MAX_BYTES:
        problem = f"the file is larger than the {WARMUP_INPUT_MAX_BYTES} bytes a sample may hold"
        raise _warmup_file_error(model, sample, name, path.name, problem)
    return raw


def warmup_samples(config: mc.ModelConfig, spec: ModelSpec, model_dir: Path) -> list[WarmupSample]:
    samples: list[WarmupSample] = []
    rng = np.random.default_rng(0)
    outputs = list(spec.outputs)
    for warmup in config.model_warmup:
        batch = max(1, warmup.batch_size)
        inputs: dict[str, np.ndarray] = {}
        for name, item in warmup.inputs.items():
            datatype = CONFIG_TO_V2.get(mc.DataType.Name(item.data_type), "FP32")
            dtype = numpy_dtype(datatype)
            shape = tuple(item.dims)
            if spec.batched:
                shape = (batch, *shape)
            size = math.prod(shape) * (8 if datatype == "BYTES" else dtype.itemsize)
            if size > WARMUP_INPUT_MAX_BYTES or any(d < 0 for d in shape):
                problem = f"shape {list(shape)} " + (
                    "has a negative dimension" if any(d < 0 for d in shape)
                    else f"holds more than the {WARMUP_INPUT_MAX_BYTES} bytes a sample may"
                )  # fmt: skip
                raise _warmup_input_error(config.name, warmup.name, name, problem)
            kind = item.WhichOneof("input_data_type")
            raw = b""
            filename = item.input_data_file
            if kind == "input_data_file":
                if "/" in filename or filename.startswith("."):
                    problem = f"the file name '{filename}' must be a plain name"
                    raise _warmup_file_error(config.name, warmup.name, name, filename, problem)
                raw = _read_warmup_file(model_dir / "warmup" / filename, config.name,
                                        warmup.name, name)  # fmt: skip
            if datatype == "BYTES" and raw:
                strings = _serialized_strings(raw, int(np.prod(shape)))
                if strings is None:
                    problem = "the file is not serialized BYTES (each element a 4-byte "
                    problem += "little-endian length, then its bytes)"
                    raise _warmup_file_error(config.name, warmup.name, name, filename, problem)
                array = strings
            elif datatype == "BYTES":
                array = np.full(shape, b"", dtype=object)
            elif kind == "random_data":
                array = rng.random(shape).astype(dtype)
            elif raw:  # one sample's worth, as Triton reads it, the same in every row
                sample = int(np.prod(item.dims))
                if len(raw) < sample * dtype.itemsize:
                    problem = f"the file holds {len(raw)} bytes, less than the "
                    problem += f"{sample * dtype.itemsize} of one sample"
                    raise _warmup_file_error(config.name, warmup.name, name, filename, problem)
                one = np.frombuffer(raw, dtype=dtype, count=sample)
                array = np.resize(one, int(np.prod(shape)))
            else:
                array = np.zeros(shape, dtype=dtype)
            inputs[name] = array.reshape(shape)
        samples.append((warmup.name, inputs, outputs, warmup.count))
    return samples


def unload_all(engines: list[Engine]) -> None:
    """Unload every engine (each may hold a process or a device), then raise the first
    failure, if any: one engine's error never leaves the others loaded."""
    first: Exception | None = None
    for engine in engines:
        try:
            engine.unload()
        except Exception as exc:
            first = first or exc
    if first is not None:
        raise first


def release_quietly(engines: list[Engine]) -> None:
    """Unload what a failed load had loaded; the load's own error is the one to report."""
    with contextlib.suppress(Exception):
        unload_all(engines)


# Triton's identity backend refuses GPU instances ("GPU instances not supported")
_CPU_ONLY_BACKENDS = frozenset({"identity"})


def load_model_version(
    model_dir: Path,
    version: int,
    base_config: mc.ModelConfig,
    backend: str,
    *,
    trusted: bool = False,
    default_max_queue_size: int = 0,
    triton_batches: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    loop_load: LoopLoad | None = None,
    limiter: ResourceLimiter | None = None,
    infer: Callable[[Any], Any] | None = None,
    control: Callable[..., Any] | None = None,
    name: str | None = None,
    auto_complete: bool = True,
    backend_directory: Path | None = None,
    default_max_batch_size: int = AUTOCOMPLETE_MAX_BATCH_SIZE,
) -> ModelVersion:
    """Load, complete, warm up: returns a READY version or raises with the reason.

    ``limiter``: the server's rate limiter (--rate-limit execution_count), or None.
    ``name``: the name it is served under (its directory's unless namespaced).
    ``auto_complete``: False takes the config as written, as tritonserver's
    --disable-auto-complete-config (a model file's tensors are still checked against it).
    ``default_max_batch_size``: what auto-complete makes a batching model's max_batch_size
    (--backend-config default-max-batch-size; 0: such a model is completed unbatched).
    ``backend_directory``: where Python-based backends are (``DIR/NAME/model.py`` serves a
    config's ``backend: "NAME"`` that names no engine of modelyard's), or None.
    """
    name = name or model_dir.name
    version_dir = model_dir / str(version)
    config = copy.deepcopy(base_config)
    _check_runtime(name, config.runtime, backend, version_dir)
    backend_dir = python_based_backend(backend, backend_directory)
    if backend_dir is not None:  # its model.py, for this model's version directory
        cls, artifact, kind = engine_class("python"), backend_dir / PYTHON_BACKEND_FILE, "python"
    else:
        cls, kind = _engine_class(backend, backend_directory), backend
    if backend in _CPU_ONLY_BACKENDS and asks_for_gpus(config):
        raise ModelServerError(  # the identity backend's own refusal, in its words
            f"failed to load '{name}' version {version}: GPU instances not supported",
            code=Code.INTERNAL,
            rule="model-server/load",
            where=f"instance_group kind KIND_CPU in {name}/config.pbtxt (the {backend} "
            "backend runs on CPUs only)",
        )
    placed = instance_placements(name, version, config)  # as Triton: before the files
    if backend_dir is None:
        artifact = _find_artifact(name, version, version_dir, config, cls)
    devices = [device for device, _ in placed]
    held_before = settled_resident_bytes()
    device_before = device_memory_used(devices)
    first_config = config  # the first instance's, which its load may complete
    made = _Completed()

    context = LoadContext(
        artifact=artifact,
        version_dir=version_dir,
        config=first_config,
        trusted=trusted,
        infer=infer,
        control=control,
        backend_dir=backend_dir,
        auto_complete=auto_complete,
    )

    def load_one(index: int, config_complete: Callable[[], None] | None) -> Loaded:
        device = devices[index]
        on_gpu = device.startswith("cuda")
        where = f"GPU device {device.partition(':')[2]}" if on_gpu else "CPU device 0"
        instance = triton_instance_name(first_config, index)
        said = f"TRITONBACKEND_ModelInstanceInitialize: {instance} ({where})"
        log.info("instance_loading", model=name, instance=instance, device=device, triton=said)
        engine = cls()
        described = engine.load(dataclasses.replace(
            context, config=first_config if index == 0 else made.instance_configs[index],
            device=devices[index], instance_index=index, config_complete=config_complete,
        ))  # fmt: skip
        return engine, described

    def complete(graph: Signature | None) -> Callable[[Engine, int], None]:
        """The version's config, completed from the first instance's (as it completed it)
        and what its file says; each instance's copy of it; how each warms up."""
        completed = made.config = copy.deepcopy(first_config)
        signature = made.graph = made.signature = graph
        if is_text_model(version_dir, completed, graph):
            made.text = _text_encoding(name, version, version_dir, completed, graph)
            signature = made.signature = made.text.signature
        # the onnxruntime backend checks the completed config against the file, in its words
        as_onnxruntime = backend == "onnxruntime" and made.text is None and signature is not None
        _check_signature(name, version, completed, signature, names=not as_onnxruntime)
        if auto_complete and as_onnxruntime and first_config.input and first_config.output:
            said = f"'{name}': inputs and outputs already specified"
            log.info("auto_complete_skipped", model=name,
                     triton=f"skipping model configuration auto-complete for {said}")  # fmt: skip
        if auto_complete:
            complete_config(
                completed, signature, f"{name}/config.pbtxt",
                tensors_required=kind not in TENSORS_OPTIONAL,
                default_max_batch_size=default_max_batch_size,
            )  # fmt: skip
        if as_onnxruntime:
            assert signature is not None
            problem = onnx_problem(completed, signature.inputs, signature.outputs)
            if problem is not None:
                raise load_error(name, version, problem, f"the tensors in {name}/config.pbtxt")
        custom = backend_dir is None and backend_for("", "", [version_dir]) is None
        fill_backend_fields(completed, backend, custom)
        if backend_dir is not None and not completed.runtime:  # as Triton names its library
            completed.runtime = PYTHON_BACKEND_FILE
        problem = io_problem(completed) if auto_complete else None  # as Triton, once complete
        if problem is not None:
            raise ConfigError.of(error_rules.MODEL_CONFIG, problem,
                                 where=f"fix {name}/config.pbtxt", triton=True)  # fmt: skip
        made.spec = compile_spec(completed, f"{name}/config.pbtxt")
        cache = _embedding_cache(name, version, completed, made.text)
        made.tokens = token_batching_for(name, version, completed, graph, made.text, cache)
        made.ragged = _ragged_batching(name, version, completed, backend, cls, made.tokens)
        made.instance_configs = [copy.deepcopy(completed) for _ in devices]
        samples = made.samples = warmup_samples(completed, made.spec, model_dir)
        return lambda engine, index: run_warmup(
            engine, samples, made.tokens, made.ragged, model=name, version=version,
            instance=triton_instance_name(completed, index),
            decoupled=completed.model_transaction_policy.decoupled,
        )  # fmt: skip

    try:
        engines = load_instances(
            len(devices), load_one, complete,
            completes_early=not cls.describes_signature, model=name,
        )  # fmt: skip
    except ModelyardError:
        raise
    except Exception as exc:
        raise load_error(
            name, version, f"{type(exc).__name__}: {exc}", f"the files of {name}/{version}"
        ) from exc
    config, spec, signature, tokens = made.config, made.spec, made.signature, made.tokens
    assert spec is not None
    sequence: SequencePolicy | None = None
    scheduler: ModelScheduler
    try:
        ragged = made.ragged
        if ragged is not None:  # with the outputs the engine itself returns flat
            ragged = ragged.scattering(engines[0].ragged_outputs, config)
        if config.HasField("sequence_batching"):
            sequence = SequencePolicy.from_config(config, model_dir, f"{name}/config.pbtxt")
            decoupled = config.model_transaction_policy.decoupled
            if decoupled:
                _refuse_rate_limiter(name, version, "decoupled", placed, limiter)
                _check_decoupled_sequences(name, version, backend, engines, sequence)
            needs = _rate_limited(name, placed, limiter)
            scheduler = SequenceScheduler(name, version, engines, sequence, clock=clock,
                                          decoupled=decoupled, ragged=ragged,
                                          limiter=limiter if any(needs) else None,
                                          needs=needs)  # fmt: skip
        elif config.model_transaction_policy.decoupled:
            scheduler = _decoupled_scheduler(name, version, config, backend, engines, placed,
                                             limiter, clock)  # fmt: skip
        else:
            scheduler = _dynamic_scheduler(name, version, config, engines, placed, limiter,
                                           clock, loop_load, default_max_queue_size,
                                           triton_batches, tokens, ragged)  # fmt: skip
    except BaseException:  # a refusal, or a bug: the engines loaded go either way
        release_quietly(engines)
        raise
    return ModelVersion(
        name=name,
        version=version,
        config=config,
        spec=spec,
        backend=backend,
        scheduler=scheduler,
        engines=engines,
        labels=_read_labels(model_dir, config, signature),
        memory_bytes=max(0, settled_resident_bytes() - held_before),
        device_memory_bytes=max(0, device_memory_used(devices) - device_before),
        devices=devices,
        sequence=sequence,
        tokens=tokens,
        placed=placed,
        limiter=limiter if any(scheduler.needs) else None,
        needs=scheduler.needs,
        maker=InstanceMaker(name, version, cls, context, made.samples, tokens, made.ragged),
    )


def _dynamic_scheduler(
    name: str,
    version: int,
    config: mc.ModelConfig,
    engines: list[Engine],
    placed: list[tuple[str, mc.ModelInstanceGroup]],
    limiter: ResourceLimiter | None,
    clock: Clock,
    loop_load: LoopLoad | None,
    default_max_queue_size: int,
    triton_batches: bool,
    tokens: TokenBatching | None = None,
    ragged: RaggedBatching | None = None,
) -> Scheduler:
    """The scheduler of a model that answers each request once: dynamic batching (by tokens,
    for an encoder), or none."""
    problem = priority_problem(config)
    if problem is not None:
        raise load_error(
            name, version, problem, f"dynamic_batching.default_priority_level and "
            f"priority_queue_policy in {name}/config.pbtxt: levels 1 to priority_levels",
        )  # fmt: skip
    policy = BatchingPolicy.from_config(config, default_max_queue_size, triton_batches)
    if policy.batching:
        said = f"Starting dynamic-batcher thread for {name} at default nice..."
        log.debug("dynamic_batcher_started", model=name, version=version, triton=said)
    key = "modelyard_inline_execution"
    inline = config.parameters[key].string_value.lower() if key in config.parameters else ""
    needs = _rate_limited(name, placed, limiter)
    if tokens is not None:
        return TokenScheduler(
            name, version, engines, policy, tokens, clock=clock, loop_load=loop_load,
            limiter=limiter if any(needs) else None, needs=needs,
        )  # fmt: skip
    return Scheduler(
        name,
        version,
        engines,
        policy,
        clock=clock,
        # the event loop never waits for resources: a model that names some runs on threads
        allow_inline=inline not in ("false", "0", "no")
        and not any(needs)
        and all(engine.runs_on_loop for engine in engines),
        loop_load=loop_load,
        limiter=limiter if any(needs) else None,
        needs=needs,
        ragged=ragged,
    )


def _ragged_batching(
    name: str,
    version: int,
    config: mc.ModelConfig,
    backend: str,
    engine: type[Engine],
    tokens: TokenBatching | None,
) -> RaggedBatching | None:
    """The config's ragged batching (None: it asks for none), where its engine and its
    scheduler serve it: the dynamic or the sequence batcher's, on an engine that takes
    ragged batches (a python model: ragged inputs alone, each request in its own shape)."""
    ragged = RaggedBatching.from_config(config, f"{name}/config.pbtxt")
    if ragged is None:
        return None
    change = f"remove allow_ragged_batch, batch_input and batch_output from {name}/config.pbtxt"
    if not engine.serves_ragged_batches:
        if not engine.serves_ragged_inputs:
            raise load_error(
                name,
                version,
                f"the {backend} backend does not take ragged batches (allow_ragged_batch, "
                "batch_input, batch_output): onnxruntime, pytorch, identity and python models do",
                change,
                rule="model-server/ragged-batch",
            )
        if ragged.batch_inputs or ragged.scattered:
            raise load_error(
                name,
                version,
                f"the {backend} backend takes allow_ragged_batch (each request in its own "
                "shape) but not batch_input or batch_output, which onnxruntime, pytorch and "
                "identity models take",
                f"remove batch_input and batch_output from {name}/config.pbtxt",
                rule="model-server/ragged-batch",
            )
        if config.sequence_batching.state:  # each request's state would be its own shape
            raise load_error(
                name,
                version,
                f"the {backend} backend takes allow_ragged_batch on a sequence model without "
                "implicit state (sequence_batching.state): onnxruntime and identity models "
                "take both",
                change,
                rule="model-server/ragged-batch",
            )
    if config.model_transaction_policy.decoupled:
        kind = "a decoupled model's"
    elif tokens is not None:
        kind = "a text model's (batched by tokens)"
    else:
        return ragged
    raise load_error(
        name,
        version,
        f"ragged batching is served by the dynamic and sequence batchers, not {kind} scheduler",
        change,
        rule="model-server/ragged-batch",
    )


def _text_encoding(
    name: str, version: int, version_dir: Path, config: mc.ModelConfig, graph: Signature | None
) -> TextEncoding:
    if graph is None:
        raise load_error(
            name,
            version,
            "a text model needs an engine that reads its graph's inputs and outputs "
            "(onnxruntime)",
            f"serve the encoder as an ONNX file, or remove tokenizer from {name}/config.pbtxt",
        )
    return load_text_encoding(name, version, version_dir, config, graph)


def _embedding_cache(
    name: str, version: int, config: mc.ModelConfig, text: TextEncoding | None
) -> EmbeddingCache | None:
    """A text model's embedding cache, where its config asks for one."""
    key = "embedding_cache_size"
    if key not in config.parameters:
        return None
    asked = config.parameters[key].string_value
    size = parse_size(asked)
    if text is None or size is None or size <= 0:
        raise load_error(
            name,
            version,
            f"{key} '{asked}' is not a size in bytes (64M, 1G ...) of a text model's cache"
            if text is not None
            else f"{key} is served for text models only (a tokenizer before the encoder)",
            f"{key} in {name}/config.pbtxt",
        )
    return EmbeddingCache(size)


def _rate_limited(
    name: str, placed: list[tuple[str, mc.ModelInstanceGroup]], limiter: ResourceLimiter | None
) -> list[InstanceNeeds | None]:
    """What each instance holds while it executes, made room for in the server's rate
    limiter (refused when it could never execute); empty when nothing is limited."""
    needs = instance_needs(placed) if limiter is not None else []
    if not any(needs):
        return []
    assert limiter is not None
    limiter.add(needs, name)
    return needs


def _refuse_rate_limiter(
    name: str,
    version: int,
    kind: str,
    placed: list[tuple[str, mc.ModelInstanceGroup]],
    limiter: ResourceLimiter | None,
) -> None:
    """A decoupled model's instances do not wait for rate_limiter resources."""
    if limiter is not None and any(instance_needs(placed)):
        raise load_error(
            name,
            version,
            f"rate_limiter resources on a {kind} model are not served",
            f"remove instance_group's rate_limiter in {name}/config.pbtxt",
        )


def _decoupled_scheduler(
    name: str,
    version: int,
    config: mc.ModelConfig,
    backend: str,
    engines: list[Engine],
    placed: list[tuple[str, mc.ModelInstanceGroup]],
    limiter: ResourceLimiter | None,
    clock: Clock,
) -> DecoupledScheduler:
    """The scheduler of a config that says ``decoupled: true``, which hands each instance one
    request at a time, or with dynamic batching the waiting ones up to max_batch_size (what
    the model sends is each request's own). A decoupled sequence model has the sequence
    scheduler, which answers as this one does (``SequenceScheduler(decoupled=True)``)."""
    _refuse_unless_senders(name, version, backend, engines)
    _refuse_rate_limiter(name, version, "decoupled", placed, limiter)
    # dynamic batching gives execute() as many waiting requests as max_batch_size allows,
    # held for its preferred size up to its queue delay
    batching = config.dynamic_batching if config.HasField("dynamic_batching") else None
    batch_size = config.max_batch_size if batching is not None else 1
    preferred = [size for size in (batching.preferred_batch_size if batching else ())
                 if size <= batch_size]  # fmt: skip
    delay_us = batching.max_queue_delay_microseconds if batching is not None else 0
    return DecoupledScheduler(
        name, version, engines, batch_size=batch_size, clock=clock,
        target=max(preferred, default=0), delay_ns=delay_us * 1000,
    )  # fmt: skip


def _refuse_unless_senders(name: str, version: int, backend: str, engines: list[Engine]) -> None:
    """Only Triton's python-backend models answer through response senders."""
    if not all(getattr(engine, "takes_requests", False) for engine in engines):
        raise load_error(
            name,
            version,
            "decoupled models are served for python-backend models that answer through "
            f"triton_python_backend_utils only (backend '{backend}')",
            f"set decoupled: false in {name}/config.pbtxt, or send responses with "
            "request.get_response_sender()",
        )


def _check_decoupled_sequences(
    name: str, version: int, backend: str, engines: list[Engine], policy: SequencePolicy
) -> None:
    """A decoupled sequence model: its sender's responses carry no state to keep."""
    _refuse_unless_senders(name, version, backend, engines)
    if policy.states:
        raise load_error(
            name,
            version,
            "implicit state (sequence_batching.state) is not served for a decoupled model: "
            "which of a request's responses would carry it is not defined",
            f"keep the state in the model, or set decoupled: false in {name}/config.pbtxt",
        )
