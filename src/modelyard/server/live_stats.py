"""``GET /v2/modelyard/stats``: one instance's live numbers, for a console that polls it.

Counters only ever grow (a poller takes differences between two polls for
rates); ``in_flight`` and ``pending`` are instantaneous. Each version's numbers
come from one snapshot taken under its stats lock, so ``success`` always equals
the sum of ``request_seconds`` counts and no histogram is read half updated.
The governance block is built by ``Governance.live_stats``; this module only
places it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modelyard.server.model_version import ModelVersion
from modelyard.server.residency import LOAD_WAIT_BUCKETS
from modelyard.server.stats import Histogram, VersionStats

if TYPE_CHECKING:
    from modelyard.server.local_dataplane import LocalDataPlane


def _histogram(hist: Histogram) -> dict[str, list[Any]]:
    # counts has one entry per bound plus the last, +Inf; not cumulative
    return {"bounds": list(hist.bounds), "counts": list(hist.counts)}


def _tokens(mv: ModelVersion, s: VersionStats) -> dict[str, Any] | None:
    """An encoder batched by tokens: its limits, its tokens and its embedding cache."""
    tokens = getattr(mv.scheduler, "tokens", None)
    if tokens is None:
        return None
    block: dict[str, Any] = {
        "max_batch_tokens": tokens.max_batch_tokens,
        "max_padding_ratio": tokens.max_padding_ratio,
        "real": s.tokens_real,
        "padded": s.tokens_padded,
        "padding_ratio": _histogram(s.padding_ratio),
    }
    if tokens.cache is not None:
        block["embedding_cache"] = {
            "hits": s.text_cache_hits,
            "misses": s.text_cache_misses,
            "entries": len(tokens.cache),
            "bytes": tokens.cache.bytes,
            "budget_bytes": tokens.cache.budget_bytes,
            "evictions": tokens.cache.evictions,
        }
    return block


def _version(mv: ModelVersion) -> dict[str, Any]:
    s = mv.scheduler.stats.snapshot()
    row = {
        "name": mv.name,
        "version": str(mv.version),
        "state": str(mv.state),
        "platform": mv.config.platform or mv.backend,
        "devices": list(mv.devices),
        "pending": mv.scheduler.pending,
        "success": s.success_count,
        "failure": s.fail_count,
        "bad_requests": s.bad_request_count,
        "inference_count": s.inference_count,
        "execution_count": s.execution_count,
        "queue_ns": s.queue_ns,
        "compute_ns": s.compute_input_ns + s.compute_infer_ns + s.compute_output_ns,
        "histograms": {
            "request_seconds": _histogram(s.request_seconds),
            "queue_seconds": _histogram(s.queue_seconds),
            "compute_seconds": _histogram(s.compute_seconds),
            "batch_size": _histogram(s.batch_size),
        },
    }
    tokens = _tokens(mv, s)
    if tokens is not None:
        row["tokens"] = tokens
    return row


def _residency(dataplane: LocalDataPlane) -> dict[str, Any] | None:
    """serve --model-residency: the budget, what the resident models hold, each model's
    loads and unloads, and how long ago a request last named it."""
    manager = dataplane.manager
    residency = manager.residency
    if residency is None:
        return None
    held = manager.resident_bytes()
    now = residency.now()
    names = sorted({*held, *residency.models, *manager.loadable_models()})
    rows = {}
    for name in names:  # what it holds, what it knows of, and what it may load
        state = residency.of(name)
        rows[name] = {
            "resident": name in held,
            "bytes": held.get(name, state.footprint),
            "pinned": name in residency.pinned,
            "loads": state.loads,
            "load_s": state.load_seconds,  # its last load's duration
            "evictions": state.evictions,
            "waited": state.load_wait.count,  # requests that waited for its loads
            "waited_p99_s": state.waited_p99(),
            "waited_counts": list(state.load_wait.counts),  # per bound of wait_bounds_s, +inf
            "idle_s": now - state.last_used if state.last_used else None,
            "requests": state.asked,  # since the instance started, across loads and unloads
        }
    return {
        "policy": residency.policy,
        "wait_bounds_s": list(LOAD_WAIT_BUCKETS),
        "budget_bytes": residency.budget,
        "held_bytes": sum(held.values()),
        "models": rows,
    }


def live_stats(dataplane: LocalDataPlane, governance: dict[str, Any] | None) -> dict[str, Any]:
    """The whole document; ``governance`` is ``Governance.live_stats()``, or None without one."""
    clock = dataplane.clock
    versions = sorted(dataplane.manager.all_versions(), key=lambda mv: (mv.name, mv.version))
    instance: dict[str, Any] = {
        "in_flight": dataplane.in_flight,
        "uptime_s": clock.monotonic() - dataplane.started,
        "time": clock.wall(),
    }
    residency = _residency(dataplane)
    if residency is not None:
        instance["residency"] = residency
    return {
        "instance": instance,
        "models": [_version(mv) for mv in versions],
        "governance": governance,
    }
