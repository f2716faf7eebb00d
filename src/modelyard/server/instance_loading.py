"""A version's instances, loaded at once as Triton creates a model's instances.

Triton completes a model's config first (its backend's model-level step: the python
backend runs ``auto_complete_config`` in a stub of its own, onnxruntime reads the
graph), then creates every instance, each in a thread of its own where the backend
allows it (python and onnxruntime do), and warms each up as it is created. It waits for
all of them; each failure is logged (``Failed to create instance: ...``), the load fails
with the last one's error, and the instances that were created are released with the
model.

Here the first instance's load completes the config: an engine that reads its file's
tensors returns them (its load is the model-level step), and a python model calls
``LoadContext.config_complete`` once ``auto_complete_config`` ran, before its
``initialize``. From then on every other instance loads on a thread of its own, beside
the rest of the first, and each warms up as soon as it has loaded. Engines are kept in
instance order whatever order they finish in (the scheduler's instance N is the Nth
placement's), and all loads have ended, failed or not, before this returns or raises,
so nothing still loads while the caller measures what the version holds or releases
what it loaded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import structlog

from modelyard.engines import Engine, Signature
from modelyard.errors import ModelyardError

log = structlog.get_logger("modelyard.server")

# instances loading at once, at most, in all (a config's count is its author's)
MAX_LOAD_THREADS = 32
# the threads instances load on: kept, so that what a load measures (RSS growth) holds no
# allocator arena made for a new thread (glibc's fresh arena kept about 4 MB more of an
# ONNX session's load than a warm one: a thread that was made for one load and ended
# would make the next load's thread start cold again)
_LOADERS = ThreadPoolExecutor(MAX_LOAD_THREADS, thread_name_prefix="instance-load")

# a loaded engine, and what it described of its file's tensors
Loaded = tuple[Engine, Signature | None]
# (instance index, its config_complete or None) -> it, loaded
LoadOne = Callable[[int, Callable[[], None] | None], Loaded]
# the first instance's description -> how to warm up an instance (raises: the load fails)
Complete = Callable[[Signature | None], Callable[[Engine, int], None]]
# an instance's engine, or why it has none
Outcome = tuple[Engine | None, BaseException | None]


def load_instances(
    count: int, load: LoadOne, complete: Complete, *, completes_early: bool, model: str
) -> list[Engine]:
    """``count`` instances loaded and warmed up, in instance order; or the last failure
    raised, once every instance that loaded is unloaded again.

    ``completes_early``: the first instance's load may call its ``config_complete``
    before it ends (an engine that describes no signature), and the others start then."""
    completed = threading.Event()
    first = _LOADERS.submit(load, 0, completed.set if completes_early else None)
    first.add_done_callback(lambda _: completed.set())
    completed.wait()
    if first.done() and first.exception() is not None:
        raise _raised(first)  # nothing loaded: none of the others starts
    signature = first.result()[1] if first.done() else None
    try:
        warm_up = complete(signature)
    except BaseException:
        _unload_quietly([engine for engine, _ in [_outcome(first)] if engine is not None])
        raise
    rest = [_LOADERS.submit(_ready, load, warm_up, index) for index in range(1, count)]
    # every load waited for, in order (each future's outcome waits until it is done)
    outcomes = [_first_ready(first, warm_up), *(_outcome(future) for future in rest)]
    return _all_or_none(outcomes, list(range(count)), model)


def load_more(indices: list[int], make: Callable[[int], Engine], *, model: str) -> list[Engine]:
    """Instances ``indices`` of a version that serves, each ``make(index)`` (loaded and
    warmed up) on a thread of its own, as Triton adds instances in an instance update; or
    the last failure raised, once every one that loaded is unloaded again."""
    futures = [_LOADERS.submit(_made, make, index) for index in indices]
    return _all_or_none([_outcome(future) for future in futures], indices, model)


def _made(make: Callable[[int], Engine], index: int) -> Loaded:
    return make(index), None


def _all_or_none(outcomes: list[Outcome], indices: list[int], model: str) -> list[Engine]:
    """The engines, when every instance loaded; else each failure logged in Triton's words,
    the loaded ones unloaded, and the last failure raised."""
    failures = [(index, error) for index, (_, error) in zip(indices, outcomes, strict=True)
                if error is not None]  # fmt: skip
    if not failures:
        return [engine for engine, _ in outcomes if engine is not None]
    for index, error in failures:
        said = error.detail if isinstance(error, ModelyardError) else str(error)
        log.error(
            "model_instance_load_failed", model=model, instance=index, error=str(error),
            triton=f"Failed to create instance: {said}",
        )  # fmt: skip
    _unload_quietly([engine for engine, error in outcomes if engine is not None and error is None])
    raise failures[-1][1]


def _ready(load: LoadOne, warm_up: Callable[[Engine, int], None], index: int) -> Loaded:
    """One instance other than the first: loaded, then warmed up (unloaded if that fails)."""
    engine, described = load(index, None)
    try:
        warm_up(engine, index)
    except BaseException:
        _unload_quietly([engine])
        raise
    return engine, described


def _first_ready(first: Future[Loaded], warm_up: Callable[[Engine, int], None]) -> Outcome:
    """The first instance, warmed up once it has loaded (on the calling thread)."""
    engine, error = _outcome(first)
    if engine is None:
        return None, error
    try:
        warm_up(engine, 0)
    except Exception as exc:
        _unload_quietly([engine])
        return None, exc
    return engine, None


def _outcome(future: Future[Loaded]) -> Outcome:
    """What a load came to, once it has: its engine, or its error."""
    error = future.exception()
    return (None, error) if error is not None else (future.result()[0], None)


def _raised(future: Future[Loaded]) -> BaseException:
    error = future.exception()
    assert error is not None
    return error


def _unload_quietly(engines: list[Engine]) -> None:
    """Unload what a failed load had loaded; the load's own error is the one to report."""
    for engine in engines:
        with contextlib.suppress(Exception):
            engine.unload()
