"""Model lifecycle: which versions are loaded, and swapping them without failures.

Control modes follow Triton's ``--model-control-mode``:
  none      load everything at start; the repository API cannot load or unload
  poll      like none, and rescan the repository every ``poll_secs``
  explicit  load what ``startup_models`` names; the repository API drives the rest

Ensembles (server/ensemble.py) load after the models their steps use.

Routing state lives on the event loop thread: ``resolve`` and the scheduler's
``submit`` run with no ``await`` between them, so a swap never lands between a
request's routing and its queueing. A new version is loaded and warmed up in a
worker thread before it takes traffic; the version it replaces stops taking
requests at once and is unloaded after its queue drains.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import os
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.engines import backend_for, engine_source
from modelyard.errors import (
    TRITON_WORDING,
    Code,
    ConfigError,
    GovernanceError,
    ModelServerError,
    ModelyardError,
    NotResident,
    internal_error,
    shown,
    without_paths,
)
from modelyard.generation import Generation
from modelyard.hardware.memory import FrozenGarbage, check_budget, estimate_bytes
from modelyard.hardware.placement import normalize_instance_groups
from modelyard.modelfiles.config import (
    directory_name_problem,
    read_model_config,
    select_versions,
    validate_version_policy,
)
from modelyard.modelfiles.control_mode import ControlMode
from modelyard.modelfiles.load_request import OVERRIDE_PREFIX, write_override
from modelyard.modelfiles.repository import NAMESPACE_MARK, ModelFingerprint, ModelRepository
from modelyard.modelfiles.repository_agents import run_checksum_agent
from modelyard.modelfiles.triton_checks import config_problem, io_problem
from modelyard.server.backend_config import (
    BackendConfig,
    default_max_batch_size,
    log_backend_configuration,
)
from modelyard.server.ensemble import (
    ENSEMBLE,
    EnsembleScheduler,
    ensemble_error,
    load_ensemble_version,
    load_order,
    reached_models,
    step_models,
)
from modelyard.server.instance_update import (
    only_instances_differ,
    updatable,
    update_instances,
    updated_config,
)
from modelyard.server.loop_load import LoopLoad
from modelyard.server.model_version import (
    ModelVersion,
    VersionState,
    instance_count,
    load_model_version,
)
from modelyard.server.residency import PINNED, RESIDENCY_KEY, WARM, Residency, describe
from modelyard.server.resource_limiter import ResourceLimiter
from modelyard.server.response_cache import ResponseCache
from modelyard.server.scheduler import Scheduler
from modelyard.server.sequence_batcher import SequenceScheduler, stopping_refusal
from modelyard.server.stats import LatencySummaries

# the model whose own code (pb_utils.load_model, unload_model: server/model_control.py)
# asked for the load or unload this task runs; None for the API's and the server's own
ASKED_BY: ContextVar[str | None] = ContextVar("asked_by", default=None)
# loads a model asks for run on threads of their own: the asking model's load may hold a
# load thread while it waits (its initialize asks), and a load thread for each would run out
ASKED_LOAD_THREADS = 32

log = structlog.get_logger("modelyard.server")

Authorize = Callable[..., None]
"""``(models, interface="infer")``: raises unless the caller of a load may use each model
the loaded config reaches (``"admin"``: each model the load loads with it)."""


# the backends whose model files are data a parser reads, not code it runs: the only ones a
# load request's file overrides may bring (python runs code, TorchScript can read files,
# TensorRT plans are not safe to deserialize from strangers)
_DATA_BACKENDS = frozenset({"onnxruntime", "xgboost", "lightgbm", "sklearn"})


def _with_detail(error: ModelyardError, detail: str) -> ModelyardError:
    """A copy of ``error`` that says ``detail``."""
    twin = copy.copy(error)
    twin.args = (detail,)
    twin.detail = detail
    return twin


def _remove_override(model_dir: Path) -> None:
    """Remove the fresh directory of a load request's files (the model dir's parent).

    A loaded engine keeps what it opened: on Linux its files stay readable after this.
    """
    if model_dir.parent.name.startswith(OVERRIDE_PREFIX):
        shutil.rmtree(model_dir.parent, ignore_errors=True)


@dataclass(eq=False)
class ModelRecord:
    name: str
    versions: dict[int, ModelVersion] = field(default_factory=dict)
    ready_desc: list[int] = field(default_factory=list)  # routable versions, highest first
    failures: dict[int, str] = field(default_factory=dict)  # version (0: whole model) -> reason
    retiring: list[ModelVersion] = field(default_factory=list)
    fingerprint: ModelFingerprint | None = None
    override: mc.ModelConfig | None = None
    config: mc.ModelConfig | None = None  # as its last load read it (before completion)
    # the fresh directory a load request's file overrides were written into (its model dir)
    override_dir: Path | None = None
    unloaded: bool = False
    model_dir: Path | None = None  # where its files were when it last loaded
    # its config was read once: the model is known, as in Triton's model map (a request
    # finds it unavailable rather than not found)
    registered: bool = False
    # the versions that ever loaded or failed to: asked for when not serving, they are
    # "not at ready state" rather than not found
    known_versions: set[int] = field(default_factory=set)

    def refresh(self) -> None:
        self.ready_desc = sorted(
            (v for v, mv in self.versions.items() if mv.state is VersionState.READY), reverse=True
        )


class ModelManager:
    def __init__(
        self,
        repository: ModelRepository,
        mode: ControlMode = ControlMode.NONE,
        *,
        poll_secs: float = 15.0,
        startup_models: Iterable[str] = (),
        trusted_repository: bool = False,
        trusted_models: Iterable[str] = (),
        default_max_queue_size: int = 0,
        as_tritonserver: bool = False,
        memory_budget: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
        strict_readiness: bool = True,
        load_threads: int | None = None,
        backend_directory: Path | None = None,
        summary_quantiles: tuple[float, ...] | None = None,
        response_cache: ResponseCache | None = None,
        rate_limiter: ResourceLimiter | None = None,
        auto_complete: bool = True,
        backend_config: BackendConfig | None = None,
        load_retries: int = 0,
        pinned_versions: dict[str, int] | None = None,
        residency: Residency | None = None,
        generation: Generation | None = None,
    ) -> None:
        self.repository = repository
        # bumped whenever what a model's name routes to changes (a load, an unload, a swap)
        self.generation = generation or Generation()
        # serve --model-residency: every model servable, loaded when asked for, the least
        # recently used idle ones unloaded to make room (server/residency.py); None: off
        self.residency = residency
        # on-demand loads one at a time, so that two never unload what the other needs
        self._resident_load = asyncio.Lock()
        # model -> the one version served, whatever its config's version_policy says (a
        # release's canary: serve --model-version)
        self.pinned_versions = dict(pinned_versions or {})
        # a failed load is tried this many more times (tritonserver's --model-load-retry-count)
        self.load_retries = load_retries
        # False: configs are taken as written (tritonserver's --disable-auto-complete-config)
        self.auto_complete = auto_complete
        # tritonserver's --backend-config: each backend's settings (default-max-batch-size)
        self.backend_config = backend_config or BackendConfig.from_command_line(
            [], auto_complete
        )
        self._backends_started: set[str] = set()
        self.agents_started: set[str] = set()  # repository agents a load has run
        # Triton's rate limiter (--rate-limit execution_count): None, off
        self.rate_limiter = rate_limiter
        # the server's own infer, blocking, for models that call other models (BLS); the data
        # plane that serves this manager sets it
        self.infer_from_thread: Callable[[Any], Any] | None = None
        # where Python-based backends are (DIR/NAME/model.py); None: none are
        self.backend_directory = backend_directory
        # a model's own load, unload and readiness calls (the data plane's ModelControl)
        self.control_from_thread: Callable[..., Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        # the server's response cache (--cache-config local,size=N): the models whose
        # config enables it share it; None: no model caches
        self.response_cache = response_cache
        # False: ready once started, whatever the models' states (tritonserver's
        # --strict-readiness false)
        self.strict_readiness = strict_readiness
        # each version keeps Triton's latency summaries at these quantiles; None: none kept
        self.summary_quantiles = summary_quantiles
        # None: loads share the loop's default executor
        self._load_executor = (
            ThreadPoolExecutor(load_threads, thread_name_prefix="model-load")
            if load_threads
            else None
        )
        self.mode = mode
        self.poll_secs = poll_secs
        self._startup_models = list(startup_models)
        self._trusted_repository = trusted_repository
        self._trusted_models = set(trusted_models)
        self._default_max_queue_size = default_max_queue_size
        # served as tritonserver: Triton's batches and default instance counts
        self._as_tritonserver = as_tritonserver
        self.memory_budget = memory_budget
        self._clock = clock
        self._models: dict[str, ModelRecord] = {}
        # the repository API's loads under way: the models each reaches, and its end
        self._loads_under_way: list[tuple[set[str], asyncio.Future[None]]] = []
        # models that were served and have left the repository: still known, as in Triton
        self._gone: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        # a model whose code waits on its calls to load or unload models: what each waits
        # for (server/model_control.py keeps it; a load asked for refuses to wait on one
        # that waits, through such calls, on the model asking: a cycle)
        self.asked_waits: dict[str, list[str]] = {}
        self._asked_executor: ThreadPoolExecutor | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._namespaces_lock = asyncio.Lock()  # one reading of which names are shared at once
        self.loop_load = LoopLoad()
        self._background: set[asyncio.Task[Any]] = set()
        self.frozen_garbage = FrozenGarbage()
        self.started = False
        # why the server failed to initialize (tritonserver --exit-on-error false with a
        # repository it cannot read): it answers, not live and not ready, as Triton
        self.initialize_error: ModelyardError | None = None
        # the models that failed to load at start, with why (--exit-on-error reads them)
        self.start_failures: dict[str, ModelyardError] = {}
        # tritonserver's stop has begun: new inferences are refused (an ensemble's steps;
        # a sequence model's STARTs)
        self._stopping = False

    # ---- start and stop -------------------------------------------------

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.loop_load.start()
        if self.residency is not None:
            names = await self.loop.run_in_executor(None, self._resident_at_start)
            names = self._missing_steps(names) + names
        elif self.mode is ControlMode.EXPLICIT:
            names = [key for name in self._startup_models for key in self.repository.keys_of(name)]
            if "*" in names:
                names = self.repository.model_names()
            names = self._missing_steps(names) + names
        else:
            names = self.repository.model_names()
        for name in self._load_order(names):
            try:
                await self._load(name, None)
            except ModelyardError as exc:
                log.error("model_load_failed", model=name, **exc.fields())
                self.start_failures[name] = exc
        self.started = True
        if self.mode is ControlMode.POLL:
            self._poll_task = asyncio.create_task(self._poll_forever())

    async def stop(self) -> None:
        self.loop_load.stop()
        if self._poll_task:
            self._poll_task.cancel()
        for record in self._models.values():
            self._retire(record, list(record.versions))
            if record.override_dir is not None:
                _remove_override(record.override_dir)
                record.override_dir = None
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        self.frozen_garbage.close()
        for executor in (self._load_executor, self._asked_executor):
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)

    @property
    def stopping(self) -> bool:
        return self._stopping

    @stopping.setter
    def stopping(self, value: bool) -> None:
        self._stopping = value
        for mv in self.all_versions(retiring=True):
            if isinstance(mv.scheduler, SequenceScheduler):
                mv.scheduler.stopped_accepting = value

    # ---- routing (hot path, event loop thread) --------------------------

    def resolve(self, name: str, version: str | None) -> ModelVersion:
        if self.stopping:
            self._refuse_unless_ensemble(name)
        record = self._models.get(name)
        if record is None or record.unloaded or (not record.versions and not record.retiring):
            raise self._not_serving(name, version, record)
        if self.residency is not None:
            self.residency.touch(name)
        if not version:
            if record.ready_desc:
                return record.versions[record.ready_desc[0]]
            raise ModelServerError.of(
                error_rules.NO_READY_VERSION,
                f"Request for unknown model: '{name}' has no available versions",
                retry_after=1.0,
            )
        return self._numbered(name, version, record)

    def _not_serving(
        self, name: str, version: str | None, record: ModelRecord | None
    ) -> ModelyardError:
        """Why a model without a version to serve is not served: ambiguous, not resident
        (the residency loads it), unavailable, or unknown."""
        if self.repository.ambiguity(name):
            return self._ambiguous(name)
        if self.residency is not None and self._servable(name):
            return NotResident(name, functools.partial(self.make_resident, name))
        if (record is not None and record.registered) or name in self._gone:
            return _unavailable(name, version, record)
        return ModelServerError.of(
            error_rules.UNKNOWN_MODEL,
            f"Request for unknown model: '{shown(name)}' is not found",
            where="GET /v2/repository/index lists the models; load it first"
            if self.mode is ControlMode.EXPLICIT
            else "GET /v2/repository/index lists the models",
        )

    def _numbered(self, name: str, version: str, record: ModelRecord) -> ModelVersion:
        """The ready version a request names, or why it is not served."""
        # ASCII digits only ("²".isdigit() is true), and few: int() of 4,301 digits raises
        digits = version.isascii() and version.isdigit() and len(version) < 19
        number = int(version) if digits else -1
        mv = record.versions.get(number)
        if mv is not None and mv.state is VersionState.READY:
            return mv
        if mv is not None or any(r.version == number for r in record.retiring):
            raise ModelServerError.of(
                error_rules.VERSION_UNLOADING,
                f"Request for unknown model: '{name}' version {version} is not at ready state "
                "(unloading)",
            )
        if number in record.known_versions:
            raise _unavailable(name, version, record)
        raise ModelServerError.of(
            error_rules.UNKNOWN_VERSION,
            f"Request for unknown model: '{name}' version {shown(version, 40)} is not found "
            f"(ready: {', '.join(map(str, record.ready_desc)) or 'none'})",
        )

    def _refuse_unless_ensemble(self, name: str) -> None:
        """While tritonserver stops: new inferences are refused by the model that would run
        them (an ensemble's by its step, which names the ensemble), in Triton's words."""
        record = self._models.get(name)
        versions = list(record.versions.values()) if record is not None else []
        # a sequence model's scheduler refuses a START itself: its running sequences go on
        if any(isinstance(mv.scheduler, EnsembleScheduler | SequenceScheduler)
               for mv in versions):  # fmt: skip
            return
        raise stopping_refusal()

    def _ambiguous(self, name: str) -> ModelServerError:
        keys = self.repository.keys_of(name)
        return ModelServerError.of(
            error_rules.AMBIGUOUS_MODEL,
            f"There are {len(keys)} identifiers of model '{name}' in global map, model "
            "namespace must be provided to resolve ambiguity.",
            where=f"--model-namespacing serves them as {', '.join(keys)}: name one of them, or "
            "rename the model in all but one repository",
        )

    async def _follow_namespaces(self) -> None:
        """Read which names the roots share now; a loaded model whose key that changes (its
        name became shared, or stopped being) is served under its new key instead, as poll
        mode does on each scan: the server's housekeeping, not the caller's load (a model
        that fails to load under its new key is logged, and its old key serves on)."""
        async with self._namespaces_lock:
            loop = asyncio.get_running_loop()
            current = set(await loop.run_in_executor(None, self.repository.model_names))
            for key, record in list(self._models.items()):
                if key in current or record.unloaded or record.model_dir is None:
                    continue
                bare = key.partition(NAMESPACE_MARK)[0]
                for new_key in self.repository.keys_of(bare):
                    if self.repository.model_dir(new_key) != record.model_dir:
                        continue
                    try:
                        if new_key not in self._models or self._models[new_key].unloaded:
                            await self._load(new_key, None)
                    except ModelyardError as exc:
                        log.error("model_load_failed", model=new_key, **exc.fields())
                        continue
                    async with self._lock(key):
                        if self._models.get(key) is record:
                            self._unload(key)
                            self._models.pop(key, None)

    def _missing_steps(self, keys: list[str]) -> list[str]:
        """The models the ensembles among ``keys`` reach that are not loaded, in load order."""
        repository = self.repository
        found: list[str] = []
        waiting = list(keys)
        while waiting:
            model_dir = repository.model_dir(waiting.pop())
            if model_dir is None:
                continue
            for step in step_models(model_dir, repository.config_name):
                key = repository.step_key(step, model_dir)
                record = self._models.get(key)
                loaded = record is not None and not record.unloaded and record.versions
                present = repository.model_dir(key) is not None  # else the ensemble says so
                if present and not loaded and key not in found and key not in keys:
                    found.append(key)
                    waiting.append(key)
        return self._load_order(found)

    def _load_order(self, names: Iterable[str]) -> list[str]:
        repository = self.repository
        return load_order(names, repository.model_dir, repository.config_name, repository.step_key)

    def is_ready(self) -> bool:
        """Strict readiness, as Triton's default: started and every loaded model healthy."""
        if not self.started or self.initialize_error is not None:
            return False
        if not self.strict_readiness:
            return True
        for record in self._models.values():
            if record.unloaded or not record.registered:  # as Triton: a config it could not
                continue  # read keeps the model out of its map (it is not found either)
            if record.failures or not record.ready_desc:
                return False
        return True

    def ready_versions(self) -> list[ModelVersion]:
        return [r.versions[v] for r in self._models.values() for v in r.ready_desc]

    def all_versions(self, name: str | None = None, retiring: bool = False) -> list[ModelVersion]:
        """The versions loaded; ``retiring``: also those finishing their last requests."""
        # list() snapshots, so the metrics thread can call this while the loop swaps
        if name is None:
            records = list(self._models.values())
        else:
            record = self._models.get(name)
            records = [record] if record is not None else []
        versions = [mv for r in records for mv in list(r.versions.values())]
        if retiring:
            versions += [mv for r in records for mv in list(r.retiring)]
        return versions

    # ---- residency (serve --model-residency) ------------------------------

    def _servable(self, name: str) -> bool:
        """Whether residency loads the model when asked for: a model of the repository, and
        in explicit mode one the command line names (``--load-model``, '*' for all)."""
        if self.repository.model_dir(name) is None:
            return False
        if self.mode is not ControlMode.EXPLICIT or "*" in self._startup_models:
            return True
        return name in self._startup_models or name.partition(NAMESPACE_MARK)[0] in (
            self._startup_models
        )

    def _resident_at_start(self) -> list[str]:
        """The models loaded at start: those whose config pins or warms them (of those it
        may serve: in explicit mode, the ones ``--load-model`` names); the others load when
        asked for."""
        residency = self.residency
        assert residency is not None
        names = []
        for name in self.repository.model_names():
            model_dir = self.repository.model_dir(name)
            if model_dir is None or not self._servable(name):
                continue
            try:
                config = read_model_config(model_dir, self.repository.config_name)
            except ModelyardError:
                continue  # loads (and fails, with its line) when asked for
            setting = config.parameters[RESIDENCY_KEY].string_value.strip().lower() if (
                RESIDENCY_KEY in config.parameters
            ) else ""
            if setting == PINNED:
                residency.pinned.add(name)
            if setting in (PINNED, WARM):
                names.append(name)
        return names

    async def make_resident(self, name: str, deadline: float | None) -> None:
        """Return once ``name`` serves: its load (one at a time per model), or the one under
        way, awaited within ``deadline`` (monotonic seconds); refused at once when the load
        would outlast it."""
        residency = self.residency
        assert residency is not None
        state = residency.of(name)
        started = residency.now()
        loop = asyncio.get_running_loop()
        model_dir = self.repository.model_dir(name)
        if model_dir is None or not self._servable(name):
            raise _not_in_repository(name)
        estimate = state.footprint or await loop.run_in_executor(
            None, estimate_bytes, model_dir, 1
        )
        residency.refuse_if_too_slow(name, estimate, deadline, describe(self.resident_bytes()))
        if state.loading is None:
            state.loading = loop.create_future()
            state.loading.add_done_callback(_retrieved)
            task = loop.create_task(self._load_on_demand(name, state.loading))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        state.waiting += 1  # until the caller queues it, on its return (no await between)
        try:
            left = None if deadline is None else max(0.0, deadline - residency.now())
            await asyncio.wait_for(asyncio.shield(state.loading), left)
        except TimeoutError:
            raise ModelServerError.of(
                error_rules.LOAD_PAST_DEADLINE,
                f"the request's deadline passed while model '{name}' loaded "
                f"({residency.now() - started:.2f} s waited)",
            ) from None
        finally:
            state.waiting -= 1
            state.load_wait.observe(residency.now() - started)

    async def _load_on_demand(self, name: str, loaded: asyncio.Future[None]) -> None:
        residency = self.residency
        assert residency is not None
        try:
            async with self._resident_load:
                loop = asyncio.get_running_loop()
                steps = await loop.run_in_executor(None, self._missing_steps, [name])
                for key in [*steps, name]:  # an ensemble's models first, as in Triton
                    await self._load(key, None)
        except ModelyardError as exc:
            log.warning("model_load_failed", model=name, reason="on demand", **exc.fields())
            loaded.set_exception(self._public(exc))
        except Exception as exc:  # a waiting request is answered whatever went wrong
            log.exception("model_load_crashed", model=name)
            loaded.set_exception(exc)
        else:
            loaded.set_result(None)
        finally:
            residency.of(name).loading = None

    def loadable_models(self) -> list[str]:
        """The repository's models this instance loads when asked for (residency), not loaded
        now; none without residency."""
        if self.residency is None:
            return []
        loaded = {mv.name for mv in self.ready_versions()}
        return [
            name
            for name in self.repository.model_names()
            if name not in loaded and self._servable(name)
        ]

    def resident_bytes(self) -> dict[str, int]:
        """Bytes each model holds now (its versions, and those still draining); with
        residency what it counts for the model (the median of its loads' measures, never
        less than its files: residency.py): what the memory budget is kept against."""
        held: dict[str, int] = {}
        for name, _, size in self.held_memory():
            held[name] = held.get(name, 0) + size
        if self.residency is not None:
            for name in held:
                held[name] = self.residency.of(name).footprint or held[name]
        return held

    def _idle(self, name: str) -> bool:
        """Whether a model may be unloaded now: nothing queued or executing, nothing
        draining, not loading, no request woken by its load and yet to be queued."""
        record = self._models.get(name)
        if record is None:
            return True
        residency = self.residency
        if record.retiring or (
            residency is not None and (residency.of(name).loading or residency.of(name).waiting)
        ):
            return False
        return all(mv.scheduler.pending == 0 for mv in record.versions.values())

    def _ensembles_steps(self) -> set[str]:
        """The models that loaded ensembles call: they stay while their ensemble does."""
        steps: set[str] = set()
        for record in self._models.values():
            for mv in record.versions.values():
                graph = getattr(mv.scheduler, "graph", None)
                if graph is not None:
                    steps.update(step.model for step in graph.steps)
        return steps

    async def _make_room(self, name: str, needed: int) -> None:
        """Unload the least recently used idle models until ``needed`` more bytes fit in the
        budget; raise (changing nothing) when no choice of them would make room."""
        residency = self.residency
        assert residency is not None
        held = self.resident_bytes()
        keep = {name} | self._ensembles_steps()
        victims = residency.victims(needed, held, self._idle, keep)
        if victims is None:
            busy = [n for n in held if n in keep or not self._idle(n)]
            raise residency.full(name, needed, held, busy)
        drains: list[asyncio.Task[None]] = []
        for victim in victims:
            residency.of(victim).evictions += 1
            log.info(
                "model_evicted", model=victim, bytes=held[victim], for_model=name,
                budget=residency.budget,
            )  # fmt: skip
            drains += self._unload(victim)
        if drains:
            await asyncio.gather(*drains)

    # ---- repository API -------------------------------------------------

    def backend_states(self) -> list[tuple[str, str, str]]:
        """Each backend a load has started: its name, the file that serves it and its
        settings (``{"cmdline":{...}}``), as Triton's backend table shows them."""
        return [
            (
                backend,
                engine_source(backend, self.backend_directory),
                json.dumps({"cmdline": self.backend_config.resolved(backend, quiet=True)},
                           separators=(",", ":")),
            )
            for backend in sorted(self._backends_started)
        ]  # fmt: skip

    def index(self, ready_only: bool = False) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        duplicates = set(self.repository.duplicates())
        names = sorted(set(self.repository.model_names()) | set(list(self._models)) | duplicates)
        for name in names:
            record = self._models.get(name)
            if record is None or (name in duplicates and record.unloaded):
                if name in duplicates and not ready_only:  # Triton's words
                    reason = "model appears in two or more repositories"
                    rows.append({"name": name, "state": "UNAVAILABLE", "reason": reason})
                elif not ready_only:
                    rows.append({"name": name})
                continue
            entries: list[dict[str, Any]] = []
            for v, mv in sorted(list(record.versions.items())):
                entries.append(
                    {
                        "name": name,
                        "version": str(v),
                        "state": str(mv.state),
                        "reason": _still_serving(record, v) or mv.reason,
                        "memory_bytes": mv.memory_bytes,
                        "device_memory_bytes": mv.device_memory_bytes,
                    }
                )
            for mv in list(record.retiring):
                entries.append(
                    {
                        "name": name,
                        "version": str(mv.version),
                        "state": str(mv.state),
                        "reason": mv.reason or "unloading",
                    }
                )
            for v, reason in sorted(list(record.failures.items())):
                if v not in record.versions and not (v == 0 and record.versions):
                    row: dict[str, Any] = {"name": name, "state": "UNAVAILABLE", "reason": reason}
                    if v:
                        row["version"] = str(v)
                    entries.append(row)
            if record.unloaded and not entries:
                entries.append({"name": name, "state": "UNAVAILABLE", "reason": "unloaded"})
            if ready_only:
                entries = [e for e in entries if e.get("state") == "READY"]
            rows.extend(entries)
        return rows

    def repository_of(self, name: str) -> Path | None:
        """The repository (as given) a loaded model was read from; None for one loaded from
        a load request's files. Read from its record: no listing of the repositories."""
        record = self._models.get(name)
        if record is None or record.model_dir is None or record.override_dir is not None:
            return None
        return record.model_dir.parent

    def _refuse_unless_explicit(self, action: str) -> None:
        if self.mode is not ControlMode.EXPLICIT:
            raise ModelServerError.of(  # Triton's words (it says so in 'none' mode too)
                error_rules.CONTROL_MODE,
                "explicit model load / unload is not allowed if polling is enabled (model "
                f"control mode '{self.mode}', asked to {action})",
                triton=True,
            )

    async def load(
        self,
        name: str,
        override: mc.ModelConfig | None = None,
        authorize: Authorize | None = None,
        files: dict[tuple[str, ...], bytes] | None = None,
    ) -> None:
        """Load (or reload) a model for the repository API: raises if any version failed,
        naming no path outside the repository (the log keeps them); what served before a
        failed load serves on.

        ``files``: a load request's file overrides; the model is loaded from a fresh
        directory holding only them, with ``override`` as its config (as Triton does).
        """
        self._refuse_unless_explicit("load")
        try:
            if files:
                await self._load_files(name, override, authorize, files)
                return
            if self.repository.namespacing:
                await self._follow_namespaces()
            keys = self.repository.keys_of(name)  # a namespaced name: each of that name
            if override is not None and len(keys) > 1:
                raise self._ambiguous(name)
            loop = asyncio.get_running_loop()  # reads configs: off the loop
            steps = await loop.run_in_executor(None, self._missing_steps, keys)
            under_way = (set(steps) | set(keys), loop.create_future())
            self._loads_under_way.append(under_way)  # an unload of these waits for it
            # as Triton: an ensemble's models load first
            if steps and authorize is not None:  # all checked before any model loads
                reached = [step.partition(NAMESPACE_MARK)[0] for step in steps]
                authorize(reached)
                authorize(reached, "admin")
            try:
                for step in steps:
                    await self._load(step, None, authorize)
                for key in keys:
                    await self._load(key, override, authorize)
                    if self.residency is not None:
                        self.residency.placed(key)
            finally:
                self._loads_under_way.remove(under_way)
                under_way[1].set_result(None)
        except ModelyardError as exc:
            public = self._public(exc)
            if not isinstance(exc, GovernanceError) and not (
                public.triton or public.detail.startswith(TRITON_WORDING)
            ):  # Triton's words first, which clients match on; the rule names the layer
                public = _with_detail(public, f"failed to load '{shown(name)}': {public.detail}")
            if public is exc:
                raise
            log.warning("model_load_failed", model=name, **exc.fields())
            raise public from exc

    def register_repository(self, root: Path, mapping: dict[str, str]) -> None:
        """Serve one more repository, ``mapping`` naming some of its folders otherwise
        (Triton's repository registration, explicit mode only)."""
        self._refuse_registration_unless_explicit("registration")
        self.repository.register(root, mapping)
        log.info("repository_registered", triton=f"Model repository registered: {root}")

    def unregister_repository(self, root: Path) -> None:
        """Stop serving a repository ``register_repository`` added; what it loaded stays."""
        self._refuse_registration_unless_explicit("unregistration")
        self.repository.unregister(root)
        log.info("repository_unregistered", triton=f"Model repository unregistered: {root}")

    def _refuse_registration_unless_explicit(self, action: str) -> None:
        if self.mode is not ControlMode.EXPLICIT:
            raise ModelServerError.of(
                error_rules.CONTROL_MODE,
                f"repository {action} is not allowed if model control mode is not EXPLICIT",
                triton=True,
            )

    async def unload(self, name: str, unload_dependents: bool = False) -> None:
        """Unload a model once the loads under way that reach it have finished, and, as
        Triton, the loaded ensembles that call it; ``unload_dependents``: the models an
        ensemble calls too."""
        self._refuse_unless_explicit("unload")
        waiting = list(self.repository.keys_of(name))
        done: set[str] = set()
        while waiting:
            key = waiting.pop()
            if key in done:
                continue
            done.add(key)
            loads = [future for reached, future in self._loads_under_way if key in reached]
            if loads or self._lock(key).locked():
                self._refuse_a_wait_on_the_asker(key, "unload")
            if loads:
                await asyncio.wait(loads)
            steps = self._steps_of(key) if unload_dependents else set()
            async with self._lock(key):
                self._unload(key)
            waiting += sorted(self._ensembles_calling(key) | steps)

    def _steps_of(self, name: str) -> set[str]:
        """The models a loaded ensemble's steps call."""
        record = self._models.get(name)
        versions = list(record.versions.values()) if record is not None else []
        graphs = [getattr(mv.scheduler, "graph", None) for mv in versions]
        return {step.model for graph in graphs if graph is not None for step in graph.steps}

    def _ensembles_calling(self, name: str) -> set[str]:
        """The loaded ensembles one of whose steps calls ``name``."""
        return {key for key in list(self._models) if name in self._steps_of(key)}

    # ---- internals ------------------------------------------------------

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    def _refuse_a_wait_on_the_asker(self, name: str, doing: str) -> None:
        """Where a model's own call asked for this, refuse to wait on ``name``'s load or
        unload when that waits, through models' calls, on the asking model: each would
        wait for the other."""
        asker = ASKED_BY.get()
        if asker is None:
            return
        seen: set[str] = set()
        waiting = [name]
        while waiting:
            model = waiting.pop()
            if model == asker:
                rule = error_rules.MODEL_CONTROL
                raise ModelServerError(
                    f"model '{shown(asker)}' asked to {doing} '{shown(name)}', whose load or "
                    f"unload under way waits for '{shown(asker)}' itself (its load, or its "
                    "call to load another model): models that load each other wait forever",
                    code=Code.FAILED_PRECONDITION, rule=rule.id, where=rule.where,
                )  # fmt: skip
            if model not in seen:
                seen.add(model)
                waiting += self.asked_waits.get(model, ())

    def _public(self, error: ModelyardError) -> ModelyardError:
        """``error`` as a caller sees it: paths relative to the repository, others left out."""
        detail = without_paths(self._relative(error.detail))
        where = self._relative(error.where) if error.where else error.where
        if detail == error.detail and where == error.where:
            return error
        public = _with_detail(error, detail)
        public.where = where
        return public

    def _relative(self, text: str) -> str:
        for root in map(str, self.repository.roots):
            for prefix in {root, os.path.realpath(root)}:
                if os.path.isabs(prefix):
                    text = text.replace(prefix.rstrip(os.sep) + os.sep, "")
        return text

    def _trusted(self, name: str) -> bool:
        return self._trusted_repository or name in self._trusted_models

    def _attach_cache(self, mv: ModelVersion) -> None:
        if not mv.config.response_cache.enable:
            return
        if self.response_cache is None or not isinstance(
            mv.scheduler, (Scheduler, EnsembleScheduler)
        ):
            log.warning(
                "response_cache_not_used",
                model=mv.name,
                version=mv.version,
                reason="the server has no response cache: start it with --cache-config "
                "local,size=BYTES",
            )
            return
        mv.scheduler.cache = self.response_cache

    async def _load(
        self, name: str, override: mc.ModelConfig | None, authorize: Authorize | None = None
    ) -> None:
        if self.repository.model_dir(name) is None:
            raise _not_in_repository(name)  # before taking a lock: unknown names keep nothing
        if self._lock(name).locked():
            self._refuse_a_wait_on_the_asker(name, "load")
        async with self._lock(name):
            for attempt in range(self.load_retries + 1):
                try:
                    await self._load_locked(name, override, authorize)
                    return
                except GovernanceError:
                    raise  # a refusal is the caller's answer, not a failure to retry
                except ModelyardError as exc:
                    if attempt == self.load_retries:
                        raise
                    log.warning("model_load_retrying", model=name, attempt=attempt + 1,
                                **exc.fields())  # fmt: skip

    async def _load_files(
        self,
        name: str,
        override: mc.ModelConfig | None,
        authorize: Authorize | None,
        files: dict[tuple[str, ...], bytes],
    ) -> None:
        assert override is not None  # load_override requires the config with files
        if self.repository.ambiguity(name):
            raise self._ambiguous(name)
        if authorize is not None:  # before a byte is written
            authorize(reached_models(override))
        loop = asyncio.get_running_loop()
        model_dir = await loop.run_in_executor(None, write_override, name, files)
        async with self._lock(name):
            try:
                await self._load_locked(name, override, authorize, model_dir)
            finally:
                record = self._models.get(name)
                if record is None or record.override_dir != model_dir:  # not what serves
                    _remove_override(model_dir)

    async def _load_locked(
        self,
        name: str,
        override: mc.ModelConfig | None,
        authorize: Authorize | None = None,
        override_dir: Path | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        loop_started = self._clock.monotonic()
        model_dir = override_dir or self.repository.model_dir(name)
        if model_dir is None:
            raise _not_in_repository(name)
        fingerprint = await loop.run_in_executor(None, self.repository.fingerprint, model_dir)
        record = self._models.get(name) or ModelRecord(name)
        if override is None and _override_holds(record, fingerprint, model_dir):
            override = record.override  # as Triton: until the files it overrode change
        try:
            base, available, backend = self._config_to_load(name, override, model_dir, override_dir)
        except ModelyardError as exc:
            self._failed(name, record, fingerprint, exc)
            raise
        if authorize is not None:
            authorize(reached_models(base))  # refused: nothing changes, not even the record
        if base.model_repository_agents.agents:  # a digest of a model's files: off the loop
            if any(agent.name == "checksum" for agent in base.model_repository_agents.agents):
                self.agents_started.add("checksum")
            try:
                await loop.run_in_executor(None, run_checksum_agent, base, model_dir)
            except ModelyardError as exc:
                self._failed(name, record, fingerprint, exc)
                raise
        self._models[name] = record
        record.unloaded = False
        record.registered = True
        record.model_dir = model_dir
        wanted = select_versions(base, available)
        if not wanted:
            error = self._no_versions(name, available)
            self._failed(name, record, fingerprint, error)
            raise error
        to_load = _versions_to_load(record, wanted, fingerprint, base)
        updates = self._updated_in_place(record, to_load, fingerprint, base, model_dir)
        to_load = [v for v in to_load if v not in updates]
        record.override = override
        record.failures.pop(0, None)
        loaded, errors = await self._load_versions(
            name, record, to_load, model_dir, base, backend, override_dir
        )
        if not errors:  # as Triton: the versions that load first, then those updated
            errors = await self._update_versions(name, record, updates)
        if errors:  # as Triton: none of this load serves; what served before serves on
            for mv in loaded.values():
                await loop.run_in_executor(None, mv.drain_and_unload)
            record.fingerprint = fingerprint
            # a refusal to retry (the memory budget) is answered as it is, its retry kept
            transient = next((e for _, e in errors if e.retry_after is not None), None)
            raise transient if transient is not None else self._load_failed(name, errors)
        self._serve_loaded(record, loaded, wanted, override_dir)
        record.fingerprint = fingerprint
        record.config = base
        record.refresh()
        self.generation.bump()
        if self.residency is not None and loaded:
            self._count_load(name, record, loop_started)
        log.info("model_loaded", model=name, triton=f"successfully loaded '{name}'")

    def _updated_in_place(
        self,
        record: ModelRecord,
        versions: list[int],
        fingerprint: ModelFingerprint,
        config: mc.ModelConfig,
        model_dir: Path,
    ) -> dict[int, mc.ModelConfig]:
        """The serving versions of ``versions`` that an instance update serves
        (``instance_update.py``: their files as they were, the config changed in its
        instance groups alone), each with the config it serves then."""
        previous = record.fingerprint
        if (
            self.residency is not None  # a residency's footprints follow whole loads
            or previous is None
            or record.config is None
            or record.model_dir != model_dir
            or _other_files(previous) != _other_files(fingerprint)
        ):
            return {}
        updates: dict[int, mc.ModelConfig] = {}
        for v in versions:
            mv = record.versions.get(v)
            if (
                mv is None
                or not updatable(mv)
                or previous.versions.get(v) != fingerprint.versions.get(v)
            ):
                continue
            # the config file's, or the config the version serves (a load API's config)
            if only_instances_differ(record.config, config) or only_instances_differ(
                mv.config, config
            ):
                updates[v] = updated_config(mv.config, config)
        return updates

    async def _update_versions(
        self, name: str, record: ModelRecord, updates: dict[int, mc.ModelConfig]
    ) -> list[tuple[int, ModelyardError]]:
        """Each version's instance update; the errors of those that failed (each serves on
        as it did)."""
        errors: list[tuple[int, ModelyardError]] = []
        loop = asyncio.get_running_loop()
        for v, config in updates.items():
            mv = record.versions[v]
            check = functools.partial(self._check_updated_memory, name, v)
            update = functools.partial(update_instances, mv, config, self.rate_limiter, check)
            try:
                await loop.run_in_executor(self._executor(), update)
            except ModelyardError as exc:
                self._version_failed(name, v, record, errors, exc)
            else:
                record.failures.pop(v, None)
        if updates:
            self.generation.bump()
        return errors

    def _check_updated_memory(self, name: str, version: int, needed: int) -> None:
        """The memory budget against what a version would hold after an instance update."""
        if self.memory_budget is not None:
            held = [h for h in self.held_memory() if h[:2] != (name, version)]
            check_budget(name, version, needed, held, self.memory_budget, measured=True)

    def _config_to_load(
        self,
        name: str,
        override: mc.ModelConfig | None,
        model_dir: Path,
        override_dir: Path | None,
    ) -> tuple[mc.ModelConfig, list[int], str]:
        """The model's config (``override``, else its config file, with its pinned version),
        the versions its directory holds, and the backend that loads them."""
        if override is not None:
            base = override
            base.name = name
        else:
            base = read_model_config(model_dir, self.repository.config_name,
                                     not self.auto_complete, check_name=False)  # fmt: skip
        if name in self.pinned_versions:
            base.version_policy.Clear()
            base.version_policy.specific.versions[:] = [self.pinned_versions[name]]
        validate_version_policy(base, f"{name}/config.pbtxt")
        available = self.repository.versions(model_dir)
        for reason in self.repository.ignored_versions(model_dir):
            log.warning("version_directory_ignored", model=name, triton=reason)
        backend = backend_for(base.platform, base.backend, [model_dir / str(v) for v in available])
        if backend is None:  # Triton's custom backends: a model's folder named MODEL.BACKEND
            if "." not in model_dir.name:
                raise ConfigError.of(
                    error_rules.NO_BACKEND,
                    f"Invalid model name: Could not determine backend for model '{name}' with "
                    "no backend in model configuration. Expected model name of the form "
                    "'model.<backend_name>'.",
                    where=f"backend or platform in {name}/config.pbtxt, or a model file "
                    "modelyard knows",
                    triton=True,
                )
            backend = model_dir.name.split(".", 1)[1]
        self._check_as_triton(name, base, backend)
        normalize_instance_groups(base, backend, self._as_tritonserver)
        mapped = override is None and self.repository.mapped(name)
        named_otherwise = directory_name_problem(base, model_dir.name)
        if override is None and named_otherwise and not mapped:
            raise ConfigError.of(error_rules.MODEL_CONFIG, named_otherwise,
                                 where=f"name in {name}/config.pbtxt", triton=True)  # fmt: skip
        if override is None:  # as Triton: a registration's mapping names the model
            base.name = name if mapped else model_dir.name
        if override_dir is not None and backend not in _DATA_BACKENDS:
            raise ConfigError.of(
                error_rules.LOAD_FILE_OVERRIDE,
                f"failed to load '{name}': a {backend} model from a load request's files "
                "could run the caller's code or read the server's files",
                where=f"put {name}'s files in the repository, then load by name (file "
                f"overrides take {', '.join(sorted(_DATA_BACKENDS))} models)",
            )
        return base, available, backend

    def _check_as_triton(self, name: str, config: mc.ModelConfig, backend: str) -> None:
        """The config as tritonserver checks it when it reads the repository; with
        auto-complete off, its inputs and outputs too (an auto-completed config's are
        checked once completed)."""
        named = config.platform or config.backend
        problem = config_problem(config, "" if named else backend)
        if problem is None and not self.auto_complete:
            problem = io_problem(config)
        if problem is not None:
            raise ConfigError.of(
                error_rules.MODEL_CONFIG, problem, where=f"fix {name}/config.pbtxt", triton=True
            )

    def _load_failed(self, name: str, errors: list[tuple[int, ModelyardError]]) -> ModelyardError:
        """A load whose versions did not all load, in Triton's words: each failed version
        is at UNAVAILABLE state, with its reason; the first one's rule and where."""
        first = errors[0][1]
        states = "; ".join(
            f"version {version} is at UNAVAILABLE state: {_triton_status(self._public(error))}"
            for version, error in errors
        )
        return ModelServerError(
            f"load failed for model '{name}': {states}",
            code=first.code,
            rule=first.rule,
            where=first.where,
            triton=True,
        )

    def _no_versions(self, name: str, available: list[int]) -> ModelServerError:
        """The error of a model whose version policy selects none of its versions."""
        return ModelServerError.of(
            error_rules.NO_VERSIONS,
            f"model '{name}' has no version directory that its version policy selects "
            f"(found: {available or 'none'})",
            where=f"add {name}/{self.pinned_versions[name]}/ or change serve "
            f"--model-version {name}=VERSION"
            if name in self.pinned_versions
            else f"add {name}/<version>/ or change version_policy",
        )

    async def _load_versions(
        self,
        name: str,
        record: ModelRecord,
        to_load: list[int],
        model_dir: Path,
        base: mc.ModelConfig,
        backend: str,
        override_dir: Path | None,
    ) -> tuple[dict[int, ModelVersion], list[tuple[int, ModelyardError]]]:
        """Each version of ``to_load`` loaded and made ready to serve, one at a time: those
        that loaded, and the errors of those that did not (recorded in ``record``)."""
        loop = asyncio.get_running_loop()
        loaded: dict[int, ModelVersion] = {}
        errors: list[tuple[int, ModelyardError]] = []
        for v in to_load:
            log.info("model_version_loading", model=name, version=v, backend=backend,
                     triton=f"loading: {name}:{v}")  # fmt: skip
            try:
                mv = await self._load_version(name, v, model_dir, base, backend, override_dir)
            except ModelyardError as exc:
                self._version_failed(name, v, record, errors, exc)
                continue
            if backend != ENSEMBLE:
                try:
                    await self._room_once_loaded(name, v, model_dir, base, mv)
                except ModelyardError as exc:
                    await loop.run_in_executor(None, mv.drain_and_unload)
                    self._version_failed(name, v, record, errors, exc)
                    continue
            loaded[v] = mv
            self._ready(name, v, record, mv)
        return loaded, errors

    async def _load_version(
        self,
        name: str,
        version: int,
        model_dir: Path,
        base: mc.ModelConfig,
        backend: str,
        override_dir: Path | None,
    ) -> ModelVersion:
        """One version loaded: an ensemble on the loop, any other model, once there is room
        for it, in the load executor."""
        if backend == ENSEMBLE:
            last = self._ensemble_cycle(name, model_dir)
            if last is not None:
                raise ensemble_error(
                    name,
                    f"its steps lead back to it through '{last}'",
                    f"circular dependency between ensembles: {name} -> ... -> {last} -> {name}",
                )
            # on the loop: an ensemble checks its wiring against the loaded models
            return load_ensemble_version(
                model_dir, version, base, self._step_resolver(model_dir), clock=self._clock,
                name=name,
            )  # fmt: skip
        await self._room_for(name, version, model_dir, base)
        settings = self.backend_config.resolved(backend)
        if backend not in self._backends_started:
            self._backends_started.add(backend)
            said = f"TRITONBACKEND_Initialize: {backend}"
            log.info("backend_started", backend=backend, triton=said)
            log_backend_configuration(backend, settings)
        said = f"TRITONBACKEND_ModelInitialize: {name} (version {version})"
        log.info("model_initializing", model=name, version=version, triton=said)
        load = functools.partial(
            load_model_version,
            model_dir,
            version,
            base,
            backend,
            # files a request wrote are never the operator's trusted files
            trusted=self._trusted(name) and override_dir is None,
            default_max_queue_size=self._default_max_queue_size,
            triton_batches=self._as_tritonserver,
            clock=self._clock,
            loop_load=self.loop_load,
            limiter=self.rate_limiter,
            infer=self.infer_from_thread,
            control=self.control_from_thread,
            backend_directory=self.backend_directory,
            name=name,
            auto_complete=self.auto_complete,
            default_max_batch_size=default_max_batch_size(settings),
        )
        return await asyncio.get_running_loop().run_in_executor(self._executor(), load)

    def _executor(self) -> ThreadPoolExecutor | None:
        """Where a load runs: the load threads, or, for a model's own call, threads of
        their own (a load it waits for never waits behind it)."""
        if ASKED_BY.get() is None:
            return self._load_executor
        if self._asked_executor is None:
            self._asked_executor = ThreadPoolExecutor(
                ASKED_LOAD_THREADS, thread_name_prefix="model-load-asked"
            )
        return self._asked_executor

    async def _room_once_loaded(
        self, name: str, version: int, model_dir: Path, config: mc.ModelConfig, mv: ModelVersion
    ) -> None:
        """After a version loads: without residency, the budget checked against what it
        measured; with, room made for the most it may hold."""
        if self.residency is None:
            self._check_memory(name, version, model_dir, config, mv)
        else:  # what it measured may need more room
            state = self.residency.of(name)
            await self._make_room(name, max(mv.memory_bytes, state.footprint))

    def _version_failed(
        self,
        name: str,
        version: int,
        record: ModelRecord,
        errors: list[tuple[int, ModelyardError]],
        error: ModelyardError,
    ) -> None:
        """A version that failed to load: recorded, its error kept in ``errors`` and logged."""
        record.failures[version] = self._public(error).line()
        record.known_versions.add(version)
        errors.append((version, error))
        log.error(
            "model_version_load_failed", model=name, version=version, **error.fields(),
            triton=f"failed to load '{name}' version {version}: {_triton_status(error)}",
        )  # fmt: skip

    def _ready(self, name: str, version: int, record: ModelRecord, mv: ModelVersion) -> None:
        """A loaded version made ready to serve: its failure cleared, its latency summaries
        and response cache attached."""
        record.failures.pop(version, None)
        record.known_versions.add(version)
        if self.summary_quantiles is not None:
            mv.scheduler.stats.summaries = LatencySummaries(self.summary_quantiles)
        self._attach_cache(mv)
        log.info("model_version_ready", model=name, version=version, memory_bytes=mv.memory_bytes)

    def _serve_loaded(
        self,
        record: ModelRecord,
        loaded: dict[int, ModelVersion],
        wanted: list[int],
        override_dir: Path | None,
    ) -> None:
        """The loaded versions serve in place of those they replace; versions no longer
        wanted retire, and so do their failures."""
        replaced = [v for v in loaded if v in record.versions]
        retire = replaced + [v for v in record.versions if v not in wanted]
        self._retire(record, retire)
        record.versions.update(loaded)
        if loaded and record.override_dir != override_dir:  # they serve from here now
            if record.override_dir is not None:
                _remove_override(record.override_dir)
            record.override_dir = override_dir
        for v in list(record.failures):
            if v and v not in wanted:
                record.failures.pop(v)

    def _failed(
        self, name: str, record: ModelRecord, fingerprint: ModelFingerprint, error: ModelyardError
    ) -> None:
        """A config that cannot load: recorded, and the versions it would replace serve on."""
        self._models[name] = record
        record.unloaded = False
        record.failures = {0: self._public(error).line()}
        record.fingerprint = fingerprint

    async def _room_for(
        self, name: str, version: int, model_dir: Path, config: mc.ModelConfig
    ) -> None:
        """Before a version loads: with residency, room made for it (what it held when it
        last loaded, else its files); without, the budget checked against its files."""
        if self.residency is None:
            self._check_memory(name, version, model_dir, config, None)
            return
        state = self.residency.of(name)
        files = estimate_bytes(model_dir / str(version), instance_count(name, version, config))
        state.files = max(state.files, files)
        await self._make_room(name, state.footprint)

    def _count_load(self, name: str, record: ModelRecord, started: float) -> None:
        assert self.residency is not None
        state = self.residency.of(name)
        state.loads += 1
        state.loaded_at = self._clock.monotonic()
        state.load_seconds = state.loaded_at - started
        # what it counts for is the median of its last loads' measures (residency.py)
        state.measured.append(sum(mv.memory_bytes for mv in record.versions.values()))
        state.last_used = max(state.last_used, self._clock.monotonic())

    def held_memory(self) -> list[tuple[str, int, int]]:
        """(model, version, bytes) of every version that holds memory now."""
        held = []
        for record in list(self._models.values()):
            for mv in [*list(record.versions.values()), *list(record.retiring)]:
                held.append((mv.name, mv.version, mv.memory_bytes))
        return held

    def _check_memory(
        self,
        name: str,
        version: int,
        model_dir: Path,
        config: mc.ModelConfig,
        loaded: ModelVersion | None,
    ) -> None:
        if self.memory_budget is None:
            return
        held = [h for h in self.held_memory() if loaded is None or h[:2] != (name, version)]
        if loaded is None:
            needed = estimate_bytes(model_dir / str(version), instance_count(name, version, config))
        else:
            needed = loaded.memory_bytes
        check_budget(name, version, needed, held, self.memory_budget, measured=loaded is not None)

    def _retire(self, record: ModelRecord, versions: list[int]) -> list[asyncio.Task[None]]:
        """Stop the versions taking requests; the tasks that drain and unload them."""
        self.generation.bump()
        drains = []
        for v in versions:
            mv = record.versions.pop(v, None)
            if mv is None:
                continue
            mv.state = VersionState.UNLOADING
            mv.scheduler.close()
            record.retiring.append(mv)
            task = asyncio.get_running_loop().create_task(self._drain(record, mv))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            drains.append(task)
        record.refresh()
        return drains

    def _ensemble_cycle(self, name: str, model_dir: Path) -> str | None:
        """The ensemble among this one's steps, and their steps, whose step is this one
        again (itself, where it names itself); None where none is."""
        repository = self.repository
        seen: set[str] = set()
        waiting = [(name, model_dir)]
        while waiting:
            current, directory = waiting.pop()
            for step in step_models(directory, repository.config_name):
                key = repository.step_key(step, directory) if repository.namespacing else step
                if key == name:
                    return current
                path = repository.model_dir(key) if key not in seen else None
                seen.add(key)
                if path is not None:
                    waiting.append((key, path))
        return None

    def _step_resolver(self, ensemble_dir: Path) -> Callable[[str, str | None], ModelVersion]:
        """How an ensemble's steps find their models: by name, or, with namespacing, its own
        repository's model of that name first."""
        if not self.repository.namespacing:
            return self.resolve
        step_key = self.repository.step_key
        resolve = self.resolve

        def resolve_step(step: str, version: str | None) -> ModelVersion:
            key = step_key(step, ensemble_dir)
            try:
                return resolve(key, version)
            except ModelServerError:
                old_key = self._served_before(step, key)
                if old_key is None:
                    raise
                return resolve(old_key, version)

        return resolve_step

    def _served_before(self, name: str, key: str) -> str | None:
        """While the roots' shared names change, the key that still serves ``key``'s
        directory (its key before the change) until ``key`` itself serves, so an ensemble's
        step has no gap; None when none does. Off the hot path: only after a miss."""
        model_dir = self.repository.model_dir(key)
        if model_dir is None:
            return None
        for old_key, record in self._models.items():
            if (
                old_key != key
                and old_key.partition(NAMESPACE_MARK)[0] == name
                and not record.unloaded
                and record.ready_desc
                and record.model_dir == model_dir
            ):
                return old_key
        return None

    async def _drain(self, record: ModelRecord, mv: ModelVersion) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(None, mv.drain_and_unload)
        except Exception as exc:  # a model's finalize raised: said, and the version is gone
            error = exc if isinstance(exc, ModelyardError) else internal_error(exc)
            log.error("model_unload_failed", model=mv.name, version=mv.version, **error.fields())
        if mv in record.retiring:
            record.retiring.remove(mv)
        self.frozen_garbage.after_unload(asyncio.get_running_loop())
        log.info(
            "model_version_unloaded", model=mv.name, version=mv.version,
            triton=f"successfully unloaded '{mv.name}' version {mv.version}",
        )  # fmt: skip

    def _unload(self, name: str) -> list[asyncio.Task[None]]:
        """Unload a model: the tasks that drain and unload its versions."""
        record = self._models.get(name)
        if record is None:  # as Triton: unloading what is not loaded changes nothing
            return []
        drains = self._retire(record, list(record.versions))
        record.failures.clear()
        record.unloaded = True
        self.generation.bump()
        record.fingerprint = None
        if record.override_dir is not None:
            _remove_override(record.override_dir)
            record.override_dir = None
        return drains

    async def poll_once(self) -> None:
        loop = asyncio.get_running_loop()
        names = set(await loop.run_in_executor(None, self.repository.model_names))
        order = await loop.run_in_executor(None, self._load_order, sorted(names))
        for name in order:
            record = self._models.get(name)
            model_dir = self.repository.model_dir(name)
            if model_dir is None:
                continue
            if self.residency is not None and (record is None or record.unloaded):
                continue  # it loads when asked for
            if record is not None and record.fingerprint is not None:
                current = await loop.run_in_executor(None, self.repository.fingerprint, model_dir)
                if current == record.fingerprint:
                    continue
            try:
                await self._load(name, None)
            except ModelyardError as exc:
                log.error("model_load_failed", model=name, **exc.fields())
        for name in list(self._models):
            if name not in names:
                async with self._lock(name):
                    self._unload(name)
                    if self._models.pop(name, None) is not None:
                        self._gone.add(name)
                self._locks.pop(name, None)

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.poll_secs)
            try:
                await self.poll_once()
            except Exception:  # a scan error must never stop polling
                log.exception("repository_poll_failed")


def _retrieved(future: asyncio.Future[None]) -> None:
    """A load's outcome is read even when every request that waited for it has gone."""
    if not future.cancelled():
        future.exception()


# Triton's names of its status codes, as its messages write them ("Internal: ...")
_TRITON_CODE_NAMES = {
    Code.INVALID_ARGUMENT: "Invalid argument",
    Code.NOT_FOUND: "Not found",
    Code.UNAVAILABLE: "Unavailable",
    Code.UNIMPLEMENTED: "Unsupported",
}


def _triton_status(error: ModelyardError) -> str:
    """A version's load error as Triton writes a status: its code's name, then what went
    wrong (without the "failed to load 'X' version N: " it leads with here)."""
    detail = error.detail
    if detail.startswith("failed to load '") and ": " in detail:
        detail = detail.split(": ", 1)[1]
    return f"{_TRITON_CODE_NAMES.get(error.code, 'Internal')}: {detail}"


def _unavailable(name: str, version: str | None, record: ModelRecord | None) -> ModelServerError:
    """A model (or version) the server knows that serves nothing now, in Triton's words."""
    failed = record is not None and not record.unloaded and bool(record.failures)
    why = "its last load failed" if failed else "unloaded"
    if version:
        detail = (
            f"Request for unknown model: '{name}' version {shown(version, 40)} is not at ready "
            f"state ({why})"
        )
    else:
        detail = f"Request for unknown model: '{name}' has no available versions ({why})"
    return ModelServerError(
        detail,
        code=Code.UNAVAILABLE if version else Code.NOT_FOUND,
        rule="model-server/no-ready-version",
        where="GET /v2/repository/index shows each version's state and reason",
    )


def _not_in_repository(name: str) -> ModelServerError:
    return ModelServerError.of(  # Triton's words, then which
        error_rules.NOT_IN_REPOSITORY,
        f"failed to load '{shown(name)}', failed to poll from model repository: model not "
        "found in any model repository",
    )


def _still_serving(record: ModelRecord, version: int) -> str:
    """The reason a serving version shows when its model's last load failed, else ''."""
    failure = record.failures.get(version) or record.failures.get(0)
    return f"serving what loaded before; the last load failed: {failure}" if failure else ""


def _override_holds(record: ModelRecord, fingerprint: ModelFingerprint, model_dir: Path) -> bool:
    """Whether a load without a config keeps the config the last load was given: the model
    still loaded from the same directory, and its config files unchanged since."""
    previous = record.fingerprint
    return (
        record.override is not None
        and not record.unloaded
        and record.override_dir is None
        and record.model_dir == model_dir
        and previous is not None
        and _config_files(previous) == _config_files(fingerprint)
    )


def _config_files(fingerprint: ModelFingerprint) -> set[tuple[str, int, int]]:
    return {entry for entry in fingerprint.config if _is_config_file(entry[0])}


def _other_files(fingerprint: ModelFingerprint) -> set[tuple[str, int, int]]:
    """The files beside the config (labels, a python model's dependencies)."""
    return {entry for entry in fingerprint.config if not _is_config_file(entry[0])}


def _is_config_file(name: str) -> bool:
    return name == "config.pbtxt" or name.startswith("configs/")


def _same_but_versions(old: mc.ModelConfig, new: mc.ModelConfig) -> bool:
    """Whether two configs differ at most in which versions they serve."""
    old, new = copy.deepcopy(old), copy.deepcopy(new)
    old.ClearField("version_policy")
    new.ClearField("version_policy")
    return old == new


def _versions_to_load(
    record: ModelRecord,
    wanted: list[int],
    fingerprint: ModelFingerprint,
    config: mc.ModelConfig,
) -> list[int]:
    """The wanted versions not serving, or serving from files that changed; all of them
    when the config changed in more than its version policy, or a file beside it did (as
    Triton, which keeps a version whose own files and config are as they were)."""
    previous = record.fingerprint
    everything = (
        previous is None
        or record.config is None
        or _other_files(previous) != _other_files(fingerprint)
        or not _same_but_versions(record.config, config)
    )
    return [
        v
        for v in wanted
        if v not in record.versions
        or everything
        or (previous is not None and previous.versions.get(v) != fingerprint.versions.get(v))
    ]
