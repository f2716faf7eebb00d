"""Layer (6): which devices exist, where instances go, and device memory.

GPUs are found through torch's CUDA runtime when torch is installed with CUDA;
a CPU-only host has none, and a config that asks for ``KIND_GPU`` there is
refused with its error line. Device memory is read device-wide
(``torch.cuda.mem_get_info``), so a version's footprint is the growth of used
memory on its devices while it loads.
"""

from __future__ import annotations

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


def placed_groups(
    config: mc.ModelConfig, gpus: list[int]
) -> list[tuple[str, mc.ModelInstanceGroup]] | str:
    """Each instance's device and the instance group it belongs to, or why none fit, in
    Triton's words (a group without a name is ``<model>_<index>``; KIND_AUTO is KIND_GPU
    where every GPU it names, or any, exists, else KIND_CPU)."""
    placed: list[tuple[str, mc.ModelInstanceGroup]] = []
    groups = list(config.instance_group) or [mc.ModelInstanceGroup()]
    for index, group in enumerate(groups):
        said = f"instance group {group.name or f'{config.name}_{index}'} of model {config.name}"
        count = group.count if group.count > 0 else 1
        kind = group.kind
        if kind == _KIND.KIND_AUTO:
            on_gpus = bool(gpus) and all(g in gpus for g in group.gpus)
            kind = _KIND.KIND_GPU if on_gpus else _KIND.KIND_CPU
        if kind == _KIND.KIND_GPU:
            if not group.gpus and not gpus:
                return f"{said} has kind KIND_GPU but no GPUs are available"
            for gpu in group.gpus:
                if gpu not in gpus:
                    return (
                        f"{said} specifies invalid or unsupported gpu id {gpu}. GPUs with at "
                        f"least the minimum required CUDA compute compatibility of "
                        f"{_MIN_CAPABILITY} are: {', '.join(str(g) for g in gpus)}"
                    )
            # Triton places `count` instances on each listed GPU
            wanted = list(group.gpus) or gpus
            placed += [(f"cuda:{g}", group) for g in wanted for _ in range(count)]
        elif group.gpus:
            return f"{said} has kind {_KIND.Name(kind)} but specifies one or more GPUs"
        else:
            placed += [("cpu", group)] * count
    return placed
