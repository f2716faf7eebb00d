"""Triton's instance update: a reload that changes only a model's instance groups adds
and removes instances while the version serves, instead of loading it again.

A version is updated in place when its files are as they were and its config differs
from the one it serves in ``instance_group`` (and ``version_policy``) alone, the way
Triton decides it (``ConfigChangeRequiresReload``). An instance is kept where the new
config has one of the same signature: its device and its group with name and count left
out (``rate_limiter``, ``kind``, ``gpus`` ... as they were). So a group renamed keeps its
instances, a count lowered by two removes two, and a group whose ``rate_limiter`` changed
is replaced whole.

In order: the new instances' resources are checked against the rate limiter's flags and
the new instances load and warm up beside the serving ones (requests go on meanwhile);
the memory budget is checked against what they measured; then the scheduler serves on the
new list at once. A removed instance finishes what it executes and is unloaded before the
load returns, unless it holds sequences: then it serves them until they end, and is
unloaded then. A failure anywhere before the switch leaves the version as it was.
"""

from __future__ import annotations

import copy
import threading
from collections import defaultdict, deque
from collections.abc import Callable

import structlog
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import ModelyardError, load_error
from modelyard.hardware.memory import settled_resident_bytes
from modelyard.modelfiles.served_config import served_config
from modelyard.server.instance_loading import load_more
from modelyard.server.model_version import (
    ModelVersion,
    instance_placements,
    release_quietly,
)
from modelyard.server.resource_limiter import ResourceLimiter, instance_needs
from modelyard.server.scheduler import InstanceThreads, Retiring

log = structlog.get_logger("modelyard.server")

Placed = list[tuple[str, mc.ModelInstanceGroup]]


def updatable(mv: ModelVersion) -> bool:
    """Whether ``mv``'s scheduler adds and removes instances while it serves."""
    scheduler = mv.scheduler
    return (
        mv.maker is not None
        and isinstance(scheduler, InstanceThreads)
        and scheduler.updates_instances
    )


def only_instances_differ(old: mc.ModelConfig, new: mc.ModelConfig) -> bool:
    """Whether two configs differ at most in their instance groups and version policy, once
    each is as it is served (a config read back from the server, changed and loaded again,
    carries the fields the served one was given)."""
    old, new = served_config(old), served_config(new)
    for config in (old, new):
        config.ClearField("instance_group")
        config.ClearField("version_policy")
    return old == new


def updated_config(serving: mc.ModelConfig, new: mc.ModelConfig) -> mc.ModelConfig:
    """The completed config ``serving`` with ``new``'s instance groups and version policy."""
    config = copy.deepcopy(serving)
    del config.instance_group[:]
    config.instance_group.extend(new.instance_group)
    config.version_policy.CopyFrom(new.version_policy)
    if not new.HasField("version_policy"):
        config.ClearField("version_policy")
    return config


def _signature(device: str, group: mc.ModelInstanceGroup) -> tuple[str, bytes]:
    """What makes two instances the same one (Triton's: its device and its group's config
    but its name and count)."""
    normal = copy.deepcopy(group)
    normal.name = ""
    normal.count = 0
    kind = mc.ModelInstanceGroup.Kind
    if normal.kind == kind.KIND_AUTO:
        normal.kind = kind.KIND_GPU if device.startswith("cuda") else kind.KIND_CPU
    return device, normal.SerializeToString(deterministic=True)


def kept_instances(old: Placed, new: Placed) -> list[int | None]:
    """For each instance of ``new``: the index of the instance of ``old`` it keeps, or None
    for one to load. Each old instance is kept at most once, in order."""
    free: defaultdict[tuple[str, bytes], deque[int]] = defaultdict(deque)
    for index, (device, group) in enumerate(old):
        free[_signature(device, group)].append(index)
    kept: list[int | None] = []
    for device, group in new:
        same = free[_signature(device, group)]
        kept.append(same.popleft() if same else None)
    return kept


def update_instances(
    mv: ModelVersion,
    config: mc.ModelConfig,
    limiter: ResourceLimiter | None,
    check_memory: Callable[[int], None],
) -> None:
    """Serve ``mv`` with ``config``'s instances (blocking: run off the event loop); raises,
    leaving it as it was, when an instance cannot load or the rate limiter or the memory
    budget (``check_memory(bytes the version would hold)``) refuses."""
    assert mv.maker is not None and isinstance(mv.scheduler, InstanceThreads)
    maker, scheduler = mv.maker, mv.scheduler
    placed = instance_placements(mv.name, mv.version, config)
    kept = kept_instances(mv.placed, placed)
    fresh = instance_needs(placed) if limiter is not None else [None] * len(placed)
    old_needs = mv.needs or [None] * len(mv.placed)
    needs = [fresh[i] if old is None else old_needs[old] for i, old in enumerate(kept)]
    added = [i for i, old in enumerate(kept) if old is None]
    if limiter is not None:
        limiter.check([needs[i] for i in added], mv.name)
    held_before = settled_resident_bytes()
    try:
        loaded = iter(
            load_more(added, lambda i: maker.make(i, placed[i][0], config), model=mv.name)
        )
    except ModelyardError:
        raise
    except Exception as exc:  # an engine's own error, as a load's
        raise load_error(
            mv.name, mv.version, f"{type(exc).__name__}: {exc}",
            f"the files of {mv.name}/{mv.version}",
        ) from exc  # fmt: skip
    grown = max(0, settled_resident_bytes() - held_before)
    engines = [mv.engines[old] if old is not None else next(loaded) for old in kept]
    new_ones = [engines[i] for i in added]
    each = mv.memory_bytes // max(len(mv.engines), 1)
    memory = each * sum(old is not None for old in kept) + grown
    try:
        check_memory(memory)
        if limiter is not None:
            limiter.add([needs[i] for i in added], mv.name)
    except BaseException:  # the refusal is the answer: what loaded goes quietly
        release_quietly(new_ones)
        raise
    retiring = scheduler.update_instances(engines, needs, limiter)
    mv.engines, mv.needs, mv.placed = engines, needs, placed
    mv.devices = [device for device, _ in placed]
    mv.memory_bytes = memory
    if mv.limiter is None and limiter is not None and any(needs):
        mv.limiter = limiter
    mv.reconfigured(config)
    log.info(
        "model_instances_updated", model=mv.name, version=mv.version, added=len(added),
        removed=len(retiring), instances=len(engines),
    )  # fmt: skip
    for retired in retiring:
        if retired.busy:  # it serves its sequences until they end
            threading.Thread(
                target=_retire, args=(mv, retired), name=f"{mv.name}-retire", daemon=True
            ).start()
        else:
            _retire(mv, retired)


def _retire(mv: ModelVersion, retired: Retiring) -> None:
    """Wait for a removed instance to stop, then unload it and give back what it held."""
    retired.thread.join()
    try:
        retired.engine.unload()
    except Exception as exc:  # a model's finalize raised: said, and the instance is gone
        log.error("model_instance_unload_failed", model=mv.name, version=mv.version,
                  error=f"{type(exc).__name__}: {exc}")  # fmt: skip
    finally:
        if mv.limiter is not None and retired.needs is not None:
            mv.limiter.remove([retired.needs])
