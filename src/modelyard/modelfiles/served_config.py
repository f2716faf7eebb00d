"""A completed config as Triton serves it: the fields it fills where a config is silent.

Triton fills some fields when it reads a repository (``AutoCompleteBackendFields``: a
backend's platform and model file name) and others before it serves a config
(``NormalizeModelConfig``: the version policy, preferred batch sizes, the sequence idle
time, pinned memory). Clients read them from the model config endpoints, and Triton's
QA compares whole configs. modelyard's schedulers read the config as written (a
preferred size asks for Triton's batches), so the normalized fields go only into what is
served; the instance groups are normalized where they are placed
(``hardware/placement.py``).
"""

from __future__ import annotations

import copy

from tritonclient.grpc import model_config_pb2 as mc

# Triton's max_sequence_idle_microseconds when a config gives none
SEQUENCE_IDLE_DEFAULT_US = 1_000_000

# backend -> (the platform Triton fills in, the model file name it fills in)
_TRITON_FILLED = {
    "onnxruntime": ("onnxruntime_onnx", "model.onnx"),
    "tensorrt": ("tensorrt_plan", "model.plan"),
    "pytorch": ("pytorch_libtorch", "model.pt"),
    "python": ("", "model.py"),
}


def fill_backend_fields(config: mc.ModelConfig, backend: str, custom: bool) -> None:
    """The backend, platform and model file name Triton fills in from what it found of the
    model's backend (``custom``: from the model's folder name, ``MODEL.BACKEND``). A PyTorch
    model gets a file name only where its config named no platform (as in Triton)."""
    silent = not (config.backend or config.platform or config.default_model_filename)
    config.backend = config.backend or backend
    platform, filename = _TRITON_FILLED.get(backend, ("", ""))
    if backend == "pytorch" and config.platform:
        filename = ""
    if platform and not config.platform:
        config.platform = platform
    if custom and silent:
        filename = f"model.{backend}"
    if filename and not config.default_model_filename:
        config.default_model_filename = filename


def served_config(config: mc.ModelConfig) -> mc.ModelConfig:
    """A copy of the completed ``config`` with what ``NormalizeModelConfig`` fills in: the
    latest version where no policy is named, ``max_batch_size`` as the preferred batch size
    of a dynamic batcher (or an oldest-first sequence batcher) that names none, the default
    sequence idle time, and pinned input and output memory (not for an ensemble)."""
    served = copy.deepcopy(config)
    if not served.HasField("version_policy"):
        served.version_policy.latest.num_versions = 1
    batch = served.max_batch_size
    if served.HasField("dynamic_batching"):
        preferred = served.dynamic_batching.preferred_batch_size
        if not preferred and batch > 0:
            preferred.append(batch)
    if served.HasField("sequence_batching"):
        sequences = served.sequence_batching
        if sequences.max_sequence_idle_microseconds == 0:
            sequences.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_US
        if sequences.HasField("oldest"):
            preferred = sequences.oldest.preferred_batch_size
            if not preferred and batch > 0:
                preferred.append(batch)
    if not served.HasField("ensemble_scheduling"):
        optimization = served.optimization
        if not optimization.HasField("input_pinned_memory"):
            optimization.input_pinned_memory.enable = True
        if not optimization.HasField("output_pinned_memory"):
            optimization.output_pinned_memory.enable = True
    return served
