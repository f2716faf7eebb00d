"""Layer (6): which devices exist, where instances go, and device memory.

GPUs are found through torch's CUDA runtime when torch is installed with CUDA;
a CPU-only host has none, and a config that asks for ``KIND_GPU`` there is
refused with its error line. Device memory is read device-wide
(``torch.cuda.mem_get_info``), so a version's footprint is the growth of used
memory on its devices while it loads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from tritonclient.grpc import model_config_pb2 as mc

_KIND = mc.ModelInstanceGroup.Kind
# what Triton says of the GPUs it may use (its minimum compute capability, as it writes it)
_MIN_CAPABILITY = "6.000000"


def asks_for_gpus(config: mc.ModelConfig) -> bool:
    """Whether any instance group of ``config`` is KIND_GPU, or KIND_AUTO naming GPUs.

    Only such a config looks for GPUs: that imports torch (about 1.5 s and 150 MB), which
    a repository of CPU models never needs.
    """
    return any(
        g.kind == _KIND.KIND_GPU or (g.kind == _KIND.KIND_AUTO and g.gpus)
        for g in config.instance_group
    )


def visible_gpus() -> list[int]:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    return list(range(torch.cuda.device_count()))


def device_memory_used(devices: list[str]) -> int:
    """Bytes in use on the given ``cuda:N`` devices (0 for CPU-only placements)."""
    indices = sorted({int(d.split(":", 1)[1]) for d in devices if d.startswith("cuda:")})
    if not indices:
        return 0
    import torch

    used = 0
    for index in indices:
        free, total = torch.cuda.mem_get_info(index)
        used += total - free
    return used


def placements(config: mc.ModelConfig, gpus: list[int]) -> list[str] | str:
    """One device per instance ("cpu" or "cuda:N"), or the reason it cannot be placed."""
    placed = placed_groups(config, gpus)
    return placed if isinstance(placed, str) else [device for device, _ in placed]


# the backends whose CPU groups Triton gives two instances where a config names no count
# (SetDefaultInstanceCount); every other group has one, as has every group under
# ``modelyard serve``
TWO_CPU_INSTANCES = frozenset({"onnxruntime", "tensorflow"})


def default_count(kind: int, backend: str, as_tritonserver: bool) -> int:
    """The instances of a group whose config gives no count."""
    two = as_tritonserver and kind == _KIND.KIND_CPU and backend in TWO_CPU_INSTANCES
    return 2 if two else 1


def normalized_groups(
    config: mc.ModelConfig, gpus: list[int], count: Callable[[int], int] = lambda kind: 1
) -> list[mc.ModelInstanceGroup]:
    """The config's instance groups as Triton normalizes them (NormalizeInstanceGroup): one
    named after the model where the config has none, an unnamed one ``<model>_<index>``,
    KIND_AUTO resolved (KIND_GPU where every GPU it names, or any, exists, else KIND_CPU),
    ``count(kind)`` instances where it names no count, and a KIND_GPU group that names no
    GPU on each of ``gpus``. Normalizing a normalized config changes nothing."""
    groups = [copy.deepcopy(group) for group in config.instance_group]
    if not groups:
        groups = [mc.ModelInstanceGroup(name=config.name)]
    for index, group in enumerate(groups):
        group.name = group.name or f"{config.name}_{index}"
        if group.kind == _KIND.KIND_AUTO:
            on_gpus = bool(gpus) and all(g in gpus for g in group.gpus)
            group.kind = _KIND.KIND_GPU if on_gpus else _KIND.KIND_CPU
        if group.count < 1:
            group.count = count(group.kind)
        if group.kind == _KIND.KIND_GPU and not group.gpus:
            group.gpus.extend(gpus)
    return groups


def normalize_instance_groups(config: mc.ModelConfig, backend: str, as_tritonserver: bool) -> None:
    """Replace the config's instance groups with their normalized form (an ensemble has
    none: Triton leaves its config without)."""
    if config.HasField("ensemble_scheduling"):
        return
    gpus = visible_gpus() if asks_for_gpus(config) else []
    groups = normalized_groups(
        config, gpus, lambda kind: default_count(kind, backend, as_tritonserver)
    )
    del config.instance_group[:]
    config.instance_group.extend(groups)


def placed_groups(
    config: mc.ModelConfig, gpus: list[int]
) -> list[tuple[str, mc.ModelInstanceGroup]] | str:
    """Each instance's device and the instance group it belongs to (normalized), or why
    none fit, in Triton's words."""
    placed: list[tuple[str, mc.ModelInstanceGroup]] = []
    for group in normalized_groups(config, gpus):
        said = f"instance group {group.name} of model {config.name}"
        if group.kind == _KIND.KIND_GPU:
            if not group.gpus:
                return f"{said} has kind KIND_GPU but no GPUs are available"
            for gpu in group.gpus:
                if gpu not in gpus:
                    return (
                        f"{said} specifies invalid or unsupported gpu id {gpu}. GPUs with at "
                        f"least the minimum required CUDA compute compatibility of "
                        f"{_MIN_CAPABILITY} are: {', '.join(str(g) for g in gpus)}"
                    )
            # Triton places `count` instances on each listed GPU
            placed += [(f"cuda:{g}", group) for g in group.gpus for _ in range(group.count)]
        elif group.gpus:
            return f"{said} has kind {_KIND.Name(group.kind)} but specifies one or more GPUs"
        else:
            placed += [("cpu", group)] * group.count
    return placed
