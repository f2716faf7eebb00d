"""The control plane as one process: apply the spec, front it with gateways, watch, autoscale.

``modelyard platform up`` runs this. At start it applies the spec on this
machine (the same plan / apply as the CLI), starts one gateway per service
so callers name only the service, then loops: every second the collector
polls each instance's live statistics, and every ``autoscale_every``
seconds each autoscaling group gets a decision, which in ``on`` mode
changes its replicas through the local launcher. The HTTP API and the
console (``control/api.py``) read what this object holds. Every change to
the state directory holds its lock, so the CLI can act on the same state
while the control plane runs.

With ``target="kubernetes"`` it runs beside a rendered platform
(``platform render kubernetes``): the cluster runs, heals and fronts the
instances, so it starts nothing; it finds the instances in the registry, and
its autoscaling patches the group's Deployments' scale
(``control/kubernetes_scaler.py``), and its releases run canary Deployments
beside the group's (``control/kubernetes_release.py``); its poll ends a
promotion once the registry shows the promoted pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from modelyard import error_rules
from modelyard.control.apply import (
    State,
    apply_plan,
    default_registry,
    down,
    make_plan,
    missing_models,
    replace_dead,
    slot_of,
    state_lock,
)
from modelyard.control.autoscale import Autoscaler, Decision
from modelyard.control.collector import Collector, Target
from modelyard.control.failover import (
    fail_over,
    fail_over_on_cluster,
    restore,
    restore_on_cluster,
)
from modelyard.control.launcher import exited_children, is_alive
from modelyard.control.placement import (
    RequestWindow,
    ResidentInstance,
    by_group,
    copies_to_drop,
    copies_to_make,
    group_hot_models,
    renewals_due,
)
from modelyard.control.scaling import (
    GroupScaler,
    checked_rule,
    current_replicas,
    instances_per_replica,
    quota_bound,
    record_replicas,
    scale_group,
    scale_on_cluster,
)
from modelyard.control.spec import InstanceSpec, PlatformSpec, read_platform_spec
from modelyard.control.supervisor import GatewayPlan, GatewayProcess, Supervisor
from modelyard.discovery.registry import Instance
from modelyard.errors import ConfigError, ModelyardError
from modelyard.processes import free_port
from modelyard.web_client import WebError, WebSession

if TYPE_CHECKING:
    from modelyard.control.kubernetes_release import Cluster

log = structlog.get_logger("modelyard.control")

AUTOSCALE_MODES = ("on", "dry-run", "off")
RELEASE_ACTIONS = ("start", "move", "step", "pause", "abort", "promote", "rollback")
TARGETS = ("local", "kubernetes")
# a load or unload the plane asks of an instance for placement may take this long (a load
# waits for the loads before it, and for room to be made)
PLACEMENT_CALL_S = 10.0


@dataclass(slots=True)
class PlaneConfig:
    spec_file: Path
    state_dir: Path
    model_repository: Path | None = None
    registry: str | None = None
    host: str = "127.0.0.1"
    gateway_port: int = 8000  # the first service's; others get free ports; -1: no gateways
    supervise_every: float = 0.2  # how often exited children are reaped and restarted
    gateway_grpc_port: int = -1
    autoscale: str = "on"
    autoscale_every: float = 2.0
    poll_every: float = 1.0
    keep_instances: bool = False  # leave the instances running when the control plane exits
    # a data centre none of whose instances answered this long is declared lost and its
    # instances placed in the others (0: never on its own; ``platform dr fail-over`` still)
    data_center_lost_after: float = 60.0
    target: str = "local"  # or "kubernetes": the cluster runs the instances
    namespace: str = "modelyard"  # kubernetes: the render's shared namespace (--namespace)
    kubeconfig: str | None = None  # kubernetes, outside a pod: the cluster's kubeconfig


@dataclass(slots=True)
class TemplateScaling:
    """One template's autoscaler, under its group's rule (keyed SERVICE/GROUP/TEMPLATE)."""

    service: str
    group: str
    template: str
    scaler: Autoscaler
    actions: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=200))

    @property
    def group_key(self) -> str:
        return f"{self.service}/{self.group}"


class ControlPlane:
    def __init__(self, config: PlaneConfig) -> None:
        self.config = config
        self._spec: PlatformSpec = read_platform_spec(config.spec_file)
        self._spec_stamp = _stamp(config.spec_file)
        self.collector = Collector()
        self.supervisor = Supervisor(config.state_dir, config.host, lambda: self.state().registry)
        self._heal_now = asyncio.Event()  # an instance exited: heal without waiting for the poll
        self._gateway_checks = WebSession(0.5)
        # (instance, model) -> when the plane last loaded that hot copy (renewed while hot)
        self._placed_at: dict[tuple[str, str], float] = {}
        # per (service, group) with residency: its request rates, and its hot models now
        self._request_windows: dict[tuple[str, str], RequestWindow] = {}
        self._hot: dict[tuple[str, str], list[str]] = {}
        self.scaling: dict[str, TemplateScaling] = {}
        self.started_at = time.time()
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()  # one state change at a time inside this process
        self._claim: Any = None
        self.scaler: GroupScaler | None = None  # kubernetes: the Deployments' scale
        self.cluster: Cluster | None = None  # kubernetes: a release's Deployments and weights
        self._registry: Any = None  # kubernetes: where the instances are found
        self._cluster_instances: list[Instance] = []
        self._seen_dead: set[str] = set()  # instances whose exit was recorded

    @property
    def on_cluster(self) -> bool:
        return self.config.target == "kubernetes"

    # ---- state -------------------------------------------------------------

    @property
    def spec(self) -> PlatformSpec:
        """The spec file as it is now: healing, scaling and releases all act on the same one.

        An edit that does not parse is logged and the last good spec stays in use.
        """
        stamp = _stamp(self.config.spec_file)
        if stamp != self._spec_stamp:
            self._spec_stamp = stamp
            try:
                self._spec = read_platform_spec(self.config.spec_file)
            except ModelyardError as error:
                log.warning("spec_unreadable", hint="keeping the last good spec", **error.fields())
        return self._spec

    @property
    def state_dir(self) -> Path:
        return self.config.state_dir

    def state(self) -> State:
        return State.load(self.state_dir)

    async def locked(self, work: Any, *args: Any) -> Any:
        """Run blocking ``work(*args)`` in a thread, holding both locks on the state."""

        def run() -> Any:
            with state_lock(self.state_dir):
                return work(*args)

        async with self._lock:
            return await asyncio.to_thread(run)

    # ---- start and stop ------------------------------------------------------

    def claim(self) -> None:
        """One control plane per state directory: hold its lock file while running."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        handle = (self.state_dir / "control.lock").open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ConfigError.of(
                error_rules.CONTROL_LOCK, f"another control plane runs on {self.state_dir}"
            ) from None
        self._claim = handle  # released when this process exits

    async def start(self) -> list[str]:
        if self.on_cluster:
            done = await self.locked(self._check_for_cluster)
            if self.scaler is None:  # a kubeconfig's exec plugin may take its time
                self.scaler, self.cluster = await asyncio.to_thread(_cluster_hands, self.config)
        else:
            done = await self.locked(self._apply)
        self.follow_rules()
        if self.on_cluster:
            done += await self.locked(self._adopt_cluster_replicas)
        if self.config.gateway_port >= 0 and not self.on_cluster:
            done += await asyncio.to_thread(self.supervisor.start_gateways, self._gateway_plans())
            await self._wait_gateways_live()
            done += await asyncio.to_thread(self.supervisor.stop_leftovers)
        if not self.on_cluster:
            self._tasks.append(asyncio.create_task(self._supervise_loop()))
        self._tasks.append(asyncio.create_task(self._poll_loop()))
        if self.config.autoscale != "off":  # also for rules the spec gains later
            self._tasks.append(asyncio.create_task(self._autoscale_loop()))
        return done

    def _apply(self) -> list[str]:
        state = State.load(self.state_dir)
        state.instances = [i for i in state.instances if is_alive(i.pid, i.name)]
        if self.config.model_repository is not None:
            state.model_repository = str(self.config.model_repository.resolve())
        state.registry = self.config.registry or state.registry or default_registry(self.state_dir)
        plan = make_plan(self.spec, self.config.spec_file, state)
        self._refuse_findings(plan.findings)
        if not state.model_repository and plan.start:
            raise ConfigError.of(
                error_rules.NO_PLATFORM_REPOSITORY, "no model repository to launch instances from"
            )
        missing = missing_models(self.spec, Path(state.model_repository))
        if state.model_repository and missing:
            raise ConfigError.of(
                error_rules.PLATFORM_MODELS_MISSING,
                f"the spec loads {', '.join(missing)}, which {state.model_repository} lacks",
                where=f"add the model directories, or remove them from the templates' loads in "
                f"{self.config.spec_file}",
            )
        if not plan.changed:
            state.save()  # records the registry and repository
            return []
        return apply_plan(self.spec, state, plan)

    def _refuse_findings(self, findings: list[Any]) -> None:
        """A spec that breaks a ledger rule is not run, here or on a cluster."""
        if findings:
            first = findings[0]
            raise ConfigError.of(
                error_rules.SPEC_INVALID,
                f"the spec breaks {len(findings)} ledger rule(s), first {first.code}: "
                f"{first.message} at {first.where}",
                where=f"modelyard platform validate -f {self.config.spec_file}",
            )

    def _check_for_cluster(self) -> list[str]:
        """On a cluster: the spec must pass validate, and the registry is the cluster's."""
        if not self.config.registry:
            raise ConfigError.of(
                error_rules.KUBERNETES_REGISTRY,
                "on Kubernetes the control plane finds the instances in the cluster's registry",
            )
        state = State.load(self.state_dir)
        state.registry = self.config.registry
        plan = make_plan(self.spec, self.config.spec_file, state)
        self._refuse_findings(plan.findings)
        state.save()
        return []

    def _adopt_cluster_replicas(self, keys: list[str] | None = None) -> list[str]:
        """On a cluster: the render leaves an autoscaling template's replicas to this
        process, whose state may not hold them (a first start, a claim replaced). At start
        (and when a group gains a rule) it adopts the most any of the template's
        Deployments holds, bounded as a decision is (max, quota, then min), and patches
        every Deployment that holds something else."""
        assert self.scaler is not None
        spec, state, done = self.spec, State.load(self.state_dir), []
        if state.lost:  # the Deployments hold a fail-over's counts: taking the most undoes it
            log.warning("adoption_held", lost=sorted(state.lost), hint="platform dr restore")
            return []
        for key in self.scaling if keys is None else keys:
            scaling = self.scaling[key]
            rule, service, template = scaling.scaler.rule, scaling.service, scaling.template
            group = spec.services[service].groups[scaling.group]
            held = self.scaler.replicas(spec, service, group, template)
            known = [count for count in held if count is not None]
            wanted = (
                max(known) if known else current_replicas(spec, state, service, group, template)
            )
            wanted = min(wanted, rule.max_replicas)
            ceiling = quota_bound(spec, state, service, group, rule.max_replicas, template)[0]
            if ceiling is not None:
                wanted = min(wanted, ceiling)
            wanted = max(wanted, rule.min_replicas)
            if any(count != wanted for count in known):
                numbers = {"at": "adopting the cluster's replicas", "cluster_held": held}
                done += scale_on_cluster(
                    spec, state, service, group, wanted, numbers, self.scaler, template
                )
            else:
                record_replicas(state, service, group, wanted, template)
        return done

    @property
    def gateways(self) -> list[GatewayProcess]:
        """Every gateway process, a service's several sharing its port."""
        return self.supervisor.gateways

    def _gateway_plans(self) -> list[GatewayPlan]:
        """Each service's gateway: the first service on ``gateway_port``, the others on the
        port a gateway of theirs held before (kept across restarts) or a free one."""
        from modelyard.client.attempts import rules_from_sections

        recorded = self.supervisor.recorded_ports()
        plans = []
        for index, name in enumerate(sorted(self.spec.services)):
            service = self.spec.services[name]
            held = recorded.get(name)
            http_port = self.config.gateway_port if index == 0 else (
                held[0] if held else free_port())  # fmt: skip
            grpc_port = None
            if self.config.gateway_grpc_port >= 0:
                grpc_port = self.config.gateway_grpc_port if index == 0 else (
                    held[1] if held and held[1] else free_port())  # fmt: skip
            extra = []
            for interface, rule in rules_from_sections(service.attempts).items():
                timeout = "off" if rule.timeout is None else rule.timeout
                value = f"{interface}={timeout}" + (",hedge" if rule.hedge else "")
                extra += ["--interface-attempts", value]
            processes, standby = service.gateway_processes, service.gateway_standby
            plans.append(GatewayPlan(name, http_port, grpc_port, processes, extra, standby))
        return plans

    async def _wait_gateways_live(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            await self._check_gateways()
            waiting = [g for g in self.gateways if g.state not in ("running", "standby")]
            waiting = [g for g in waiting if g.slot >= 0]  # a standby may come after
            if not waiting:
                return
            gone = [g for g in waiting if g.state == "backoff"]
            if gone or time.monotonic() > deadline:
                gateway = (gone or waiting)[0]
                happened = "exited" if gone else f"is not live after {timeout:g}s"
                raise ConfigError.of(
                    error_rules.PLATFORM_GATEWAY,
                    f"the gateway of {gateway.service} on port {gateway.http_port} {happened}",
                    where=f"its log {gateway.log}; a port in use is changed with --gateway-port",
                )
            await asyncio.sleep(0.1)

    async def _check_gateways(self) -> None:
        """Reap and restart gateway processes; note what those being started say."""
        starting = [
            g for g in self.gateways if g.state in ("starting", "promoting") and g.status_port
        ]
        answers = await asyncio.gather(*(self._standing(g) for g in starting))
        seen = {g.pid: said for g, said in zip(starting, answers, strict=True) if said}
        self.supervisor.check_gateways(seen)

    async def _standing(self, gateway: GatewayProcess) -> str | None:
        """What a gateway process says on its status port: "serving", "standby", or None
        (no answer yet)."""
        url = f"http://127.0.0.1:{gateway.status_port}/v2/modelyard/stats"
        try:
            reply = await self._gateway_checks.get(url)
            if reply.status != 200:
                return None
            return "standby" if reply.json()["gateway"].get("standby") else "serving"
        except (WebError, ValueError, KeyError, TypeError):
            return None

    async def _supervise_loop(self) -> None:
        """Five times a second: reap the children that exited, record each exit, restart
        gateways whose backoff is over and wake healing for instances."""
        while True:
            try:
                await self._check_gateways()
                self._reap_instances()
                self.supervisor.record()
            except Exception as exc:  # one bad round must not end supervision
                log.warning("supervise_failed", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(self.config.supervise_every)

    def _reap_instances(self) -> None:
        exited = exited_children()
        if not exited:
            return
        by_pid = {i.pid: i for i in self.state().instances}
        for pid, code, ran_for in exited:
            instance = by_pid.get(pid)
            if instance is None:  # stopped meanwhile, or not an instance of this state
                continue
            if instance.name in self._seen_dead:  # healing saw it gone first: its status only
                self.supervisor.exit_status_known(_slot_key(instance), code)
                continue
            self.supervisor.instance_exited(_slot_key(instance), instance.name, pid, code, ran_for)
            self._seen_dead.add(instance.name)
        self._heal_now.set()

    async def stop(self) -> list[str]:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await asyncio.to_thread(self.supervisor.stop_gateways)
        await self._gateway_checks.aclose()
        await self.collector.aclose()
        if self._registry is not None:
            await self._registry.aclose()
            self._registry = None
        if self.config.keep_instances or self.on_cluster:
            return []
        return list(await self.locked(lambda: down(State.load(self.state_dir))))

    # ---- loops ---------------------------------------------------------------

    def targets(self) -> list[Target]:
        if self.on_cluster:
            return [
                Target(i.instance_id, i.service, i.group, i.http, i.labels.get("template", ""))
                for i in self._cluster_instances
                if i.http
            ]
        return [
            Target(i.name, i.service, i.group, f"127.0.0.1:{i.http_port}", i.template)
            for i in self.state().instances
        ]

    def resident_instances(self) -> list[ResidentInstance]:
        """The instances with residency (a template's memory_budget), as last polled."""
        found = []
        for view in self.collector.views.values():
            target = view.target
            if view.up and view.stats is not None:
                instance = ResidentInstance.from_stats(
                    target.name, target.service, target.group, target.http, view.stats
                )
                if instance is not None:
                    found.append(instance)
        return found

    def model_rates(self, service: str, group: str) -> dict[str, float]:
        """Requests a second per model over the group's instances, in the window its last
        placement round read (control/placement.py)."""
        window = self._request_windows.get((service, group))
        return window.rates() if window is not None else {}

    def hot_models(self, service: str, group: str) -> list[str]:
        """The group's hot models as its last placement round found them."""
        return list(self._hot.get((service, group), []))

    async def place_hot_models(self) -> list[str]:
        """Each group's hot models on each of its instances, their copies renewed while
        hot, and one copy of every other model the plane placed (control/placement.py)."""
        now = time.monotonic()
        work: dict[str, list[tuple[ResidentInstance, str, str]]] = {}
        for key, members in by_group(self.resident_instances()).items():
            window = self._request_windows.setdefault(key, RequestWindow())
            window.observe(members, now)
            hot = self._hot[key] = group_hot_models(members, window.rates(), self._hot.get(key, []))
            for instance in members:  # a copy its instance unloaded is the plane's no more
                for model in [m for n, m in self._placed_at if n == instance.name]:
                    if not instance.holds(model):
                        del self._placed_at[(instance.name, model)]
            # the copies no longer wanted go first: the hot ones take their room
            actions = [
                (i, m, "dropped") for i, m in copies_to_drop(members, hot, self._placed_at, window)
            ]
            actions += [(i, m, "copied") for i, m in copies_to_make(members, hot)]
            actions += [
                (i, m, "renewed") for i, m in renewals_due(members, hot, self._placed_at, now)
            ]
            for instance, model, action in actions:
                work.setdefault(instance.name, []).append((instance, model, action))
        # each instance's in turn (its loads run one at a time), the instances at once
        done = await asyncio.gather(*(self._place(steps, now) for steps in work.values()))
        return [line for lines in done for line in lines]

    async def _place(self, steps: list[tuple[ResidentInstance, str, str]], now: float) -> list[str]:
        done = []
        for instance, model, action in steps:
            verb = "unload" if action == "dropped" else "load"
            url = f"http://{instance.http}/v2/repository/models/{model}/{verb}"
            try:
                reply = await self._gateway_checks.request(
                    "POST", url, json={}, timeout=PLACEMENT_CALL_S
                )
            except WebError as exc:
                log.warning("hot_model_not_placed", model=model, instance=instance.name,
                            action=action, error=str(exc))  # fmt: skip
                continue
            if reply.status != 200:
                log.warning("hot_model_not_placed", model=model, instance=instance.name,
                            action=action, status=reply.status, error=reply.text[:300])  # fmt: skip
                continue
            if action == "dropped":
                self._placed_at.pop((instance.name, model), None)
            else:
                self._placed_at[(instance.name, model)] = now
            if action == "copied":
                log.info("hot_model_copied", model=model, instance=instance.name)
            elif action == "dropped":
                log.info("cold_model_copy_unloaded", model=model, instance=instance.name)
            if action != "renewed":
                done.append(f"{model} {action} on {instance.name}")
        return done

    def cluster_instances(self) -> list[Instance]:
        """On a cluster: the spec's services' instances, as the registry last listed them."""
        return list(self._cluster_instances)

    def running(self) -> list[tuple[str, int]]:
        """Each running instance's group key and cards: launched here, or on a cluster as
        the registry lists them."""
        if self.on_cluster:
            return [(f"{i.service}/{i.group}", _cards(i.spec)) for i in self._cluster_instances]
        return [(f"{i.service}/{i.group}", i.cards) for i in self.state().instances]

    async def _find_cluster_instances(self) -> None:
        """On a cluster: the spec's services' instances, as the registry lists them."""
        if self._registry is None:
            from modelyard.discovery import open_registry

            self._registry = open_registry(self.state().registry)
        found: list[Instance] = []
        for service in sorted(self.spec.services):
            found += (await self._registry.resolve(service)).instances
        self._cluster_instances = found

    async def _poll_loop(self) -> None:
        while True:
            try:
                if self.on_cluster:
                    await self._find_cluster_instances()
                    await self._finish_promotions_logged()
                await self.collector.poll(self.targets())
                await self.collector.poll_gateways(
                    [(g.service, g.pid, f"127.0.0.1:{g.status_port}")
                     for g in self.gateways if g.pid and g.status_port]
                )  # fmt: skip
                await self.heal()
                await self.declare_unanswered_lost()
                await self.place_hot_models()
            except Exception as exc:  # one bad poll must not end the loop
                log.warning("poll_failed", error=f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(TimeoutError):  # an exit wakes healing at once
                await asyncio.wait_for(self._heal_now.wait(), self.config.poll_every)
            self._heal_now.clear()

    async def heal(self) -> list[str]:
        """Replace instances whose process died (a crash, an OOM kill, a lost machine) once
        their slot's backoff is over; on a cluster its Deployments do."""
        if self.on_cluster:
            return []
        dead = [i for i in self.state().instances if not is_alive(i.pid, i.name)]
        for instance in dead:
            if instance.name not in self._seen_dead:  # not a child of this process: no status
                self._seen_dead.add(instance.name)
                self.supervisor.instance_exited(
                    _slot_key(instance), instance.name, instance.pid, None, float("inf")
                )
        due = {_slot_key(i) for i in dead if self.supervisor.may_replace(_slot_key(i))}
        if not due:
            return []

        def replace() -> list[str]:
            return replace_dead(
                self.spec, self.config.spec_file, State.load(self.state_dir),
                lambda instance: _slot_key(instance) in due,
            )  # fmt: skip

        done: list[str] = await self.locked(replace)
        for slot in due if done else ():  # a round that found them replaced counts none
            self.supervisor.replaced(slot)
        for line in done:
            log.warning("instance_replaced", what=line)
        return done

    def unanswered_data_centers(self, state: State | None = None) -> list[str]:
        """Data centres none of whose instances answered for ``data_center_lost_after``
        seconds while another data centre's did: lost, as far as this control plane sees.
        One hung instance alone in its data centre counts: it is replaced elsewhere, and
        the place waits for ``platform dr restore``."""
        after = self.config.data_center_lost_after
        if after <= 0 or self.on_cluster:
            return []
        now, state = time.monotonic(), state or self.state()
        views: dict[str, list[Any]] = {}
        for instance in state.stable():
            views.setdefault(instance.data_center, []).append(
                self.collector.views.get(instance.name)
            )
        answering = {dc for dc, seen in views.items() if any(v is not None and v.up for v in seen)}
        return [
            dc
            for dc, seen in sorted(views.items())
            if dc not in state.lost
            and answering - {dc}
            and all(
                v is not None and v.down_since is not None and now - v.down_since >= after
                for v in seen
            )
        ]

    async def declare_unanswered_lost(self) -> list[str]:
        done = []
        for dc in self.unanswered_data_centers():
            how = f"no instance answered for {self.config.data_center_lost_after:g}s"
            done += await self.locked(self._fail_over_if_unanswered, dc, how)
        return done

    def _fail_over_if_unanswered(self, dc: str, how: str) -> list[str]:
        """Under the state's lock, the state as it is now (an apply may have changed the
        data centre's instances meanwhile) must still show ``dc`` unanswered."""
        state = self.state()
        if dc not in self.unanswered_data_centers(state):
            return []
        log.warning("data_center_lost", data_center=dc, how=how)
        return fail_over(self.spec, self.config.spec_file, state, dc, how)

    async def fail_over(self, place: str) -> list[str]:
        """Declare a data centre or queue lost (``failover.fail_over``; on a cluster, its
        Deployments scaled to none and the replacements' up)."""
        return await self._dr_change(place, lost=True)

    async def restore(self, place: str) -> list[str]:
        """A lost place is back: its instances start again and the replacements stop."""
        return await self._dr_change(place, lost=False)

    async def _dr_change(self, place: str, lost: bool) -> list[str]:
        def run() -> list[str]:
            spec, state = self.spec, self.state()
            if self.on_cluster:
                scaler = self._connected(self.scaler)
                if lost:
                    return fail_over_on_cluster(spec, state, scaler, place)
                return restore_on_cluster(spec, state, scaler, place)
            if lost:
                return fail_over(spec, self.config.spec_file, state, place)
            return restore(spec, self.config.spec_file, state, place)

        return list(await self.locked(run))

    def _connected(self, hands: Any) -> Any:
        """The cluster's client, once the start made it (a kubeconfig's exec plugin may take
        its time while the API already answers)."""
        if hands is None:
            raise ConfigError.of(
                error_rules.KUBERNETES_CONNECTING,
                "the control plane is still connecting to the cluster",
            )
        return hands

    def _autoscaling_templates(self) -> dict[str, tuple[str, Any, str]]:
        """SERVICE/GROUP/TEMPLATE → (service, group, template) for each template of each
        group with an autoscaling rule."""
        return {
            f"{service.name}/{group.name}/{template}": (service.name, group, template)
            for service in self.spec.services.values()
            for group in service.groups.values()
            if group.autoscaling
            for template in group.templates
        }

    def follow_rules(self) -> list[str]:
        """The spec's autoscaling rules as the file says now: a rule edited, added or removed
        holds from the next decision on (an edited rule keeps the observations so far); each
        template of the group gets its own decisions under the group's rule."""
        changes = []
        wanted = self._autoscaling_templates()
        for key in [k for k in self.scaling if k not in wanted]:
            del self.scaling[key]
            changes.append(f"{key}: autoscaling removed")
        refused: set[str] = set()  # groups whose edited rule cannot make decisions
        for key, (service, group, template) in wanted.items():
            group_key = f"{service}/{group.name}"
            try:
                rule = checked_rule(group)
            except (ValueError, TypeError) as exc:  # the rule in force stays
                if group_key not in refused:
                    refused.add(group_key)
                    log.warning(
                        "autoscale_rule_refused",
                        group=group_key,
                        error=str(exc),
                        rule="platform/autoscaling",
                        where=f"the autoscaling of {group_key} in {self.config.spec_file}",
                    )
                continue
            scaling = self.scaling.get(key)
            if scaling is None:
                self.scaling[key] = TemplateScaling(service, group.name, template, Autoscaler(rule))
                changes.append(f"{key}: autoscaling {rule}")
            elif scaling.scaler.rule != rule:
                scaling.scaler.rule = rule
                changes.append(f"{key}: autoscaling {rule}")
        for change in changes:
            log.info("autoscale_rule", change=change)
        return changes

    async def _autoscale_loop(self) -> None:
        next_decision = time.monotonic() + self.config.autoscale_every
        while True:
            await asyncio.sleep(self.config.poll_every)
            before = set(self.scaling)
            self.follow_rules()
            added = [key for key in self.scaling if key not in before]
            if added and self.on_cluster:
                try:
                    await self.locked(self._adopt_cluster_replicas, added)
                except Exception as exc:  # the next decision scales it
                    log.warning("autoscale_adopt_failed", groups=added, error=str(exc))
            self.observe_load()
            if time.monotonic() < next_decision:
                continue
            next_decision = time.monotonic() + self.config.autoscale_every
            for key in list(self.scaling):
                try:
                    await self.autoscale_once(key)
                except Exception as exc:  # the next decision tries again
                    log.warning("autoscale_failed", group=key, error=f"{type(exc).__name__}: {exc}")

    def observe_load(self) -> None:
        """Each autoscaling template's observation: the requests in flight on its instances,
        per instance of a replica."""
        for scaling in self.scaling.values():
            group = self._group(scaling)
            if group is None or scaling.template not in group.templates:
                continue
            template = scaling.template if self._templates_told_apart(scaling, group) else None
            load = self.collector.in_flight(scaling.service, scaling.group, template)
            scaling.scaler.observe(load / instances_per_replica(group, scaling.template))

    def _templates_told_apart(self, scaling: TemplateScaling, group: Any) -> bool:
        """Whether the template's own load can be read: the group has more than one
        template and its instances name theirs (instances started before they registered
        a template, e.g. pods of an older render, count for every template)."""
        if len(group.templates) < 2:
            return False
        return any(
            v.target.template
            for v in self.collector.views.values()
            if v.target.service == scaling.service and v.target.group == scaling.group
        )

    def _group(self, scaling: TemplateScaling) -> Any:
        service = self.spec.services.get(scaling.service)
        return service.groups.get(scaling.group) if service else None

    async def autoscale_once(self, key: str) -> Decision:
        """Decide for one template and, in ``on`` mode, make the decision so."""
        scaling = self.scaling[key]
        spec = self.spec
        group = self._group(scaling)
        state = self.state()
        template = scaling.template
        if group is None or not group.autoscaling or template not in group.templates:
            return scaling.scaler.decide(0, 0)
        current = current_replicas(spec, state, scaling.service, group, template)
        ceiling, _ = quota_bound(
            spec, state, scaling.service, group, scaling.scaler.rule.max_replicas, template
        )
        decision = scaling.scaler.decide(current, ceiling if ceiling is not None else 0)
        if decision.replicas == current:
            return decision
        action: dict[str, Any] = {
            "at": time.time(),
            "template": template,
            "from": current,
            "to": decision.replicas,
            "bound_by": decision.bound_by,
            "explain": decision.explain(at=False),
        }
        group_key = scaling.group_key
        held = _held(state, group_key)
        if held:
            action["outcome"] = held
        elif self.config.autoscale == "dry-run":
            action["outcome"] = "recommended (dry run)"
        else:
            numbers = {
                "bound_by": decision.bound_by,
                "mode": decision.mode,
                "stable_average": round(decision.stable_average, 3),
                "panic_average": round(decision.panic_average, 3),
            }

            def scale() -> list[str] | str:
                fresh = State.load(self.state_dir)
                held = _held(fresh, group_key)  # a release or a loss since the decision
                if held:
                    return held
                if self.scaler is not None:
                    return scale_on_cluster(
                        spec, fresh, scaling.service, group, decision.replicas, numbers,
                        self.scaler, template,
                    )  # fmt: skip
                return scale_group(
                    spec,
                    self.config.spec_file,
                    fresh,
                    scaling.service,
                    group,
                    decision.replicas,
                    numbers,
                    template,
                )

            done = await self.locked(scale)
            if isinstance(done, str):
                action["outcome"] = done
            else:
                action["done"], action["outcome"] = done, "applied"
        scaling.actions.append(action)
        log.info("autoscale", group=key, **{k: v for k, v in action.items() if k != "explain"})
        return decision

    # ---- releases through the API -------------------------------------------------

    async def _finish_promotions_logged(self) -> None:
        """A cluster that refuses (a canary's delete) must not stop the poll's other work."""
        try:
            await self.finish_promotions()
        except Exception as exc:
            log.warning("release_finish_failed", error=f"{type(exc).__name__}: {exc}")

    async def finish_promotions(self) -> list[str]:
        """On a cluster: end each promotion whose pods the registry shows all promoted."""
        if self.cluster is None or not any(
            r.get("promoting") for r in self.state().releases.values()
        ):
            return []
        from modelyard.control import kubernetes_release

        cluster, instances = self.cluster, self.cluster_instances()

        def run() -> list[str]:
            state, spec = self.state(), self.spec
            return [
                f"{key}: promoted"
                for key, release in list(state.releases.items())
                if release.get("promoting")
                and kubernetes_release.finish(spec, state, cluster, instances, key)
            ]

        done: list[str] = await self.locked(run)
        for line in done:
            log.info("release_promoted", what=line)
        return done

    async def release(self, key: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        from modelyard.control import release

        def field(name: str, kind: type, required: bool = False) -> Any:
            value = body.get(name)
            if value is None and not required:
                return None
            if isinstance(value, int) and kind is str and not isinstance(value, bool):
                value = str(value)  # a version may come as a number
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise release.ReleaseError(
                    f"release {action} needs '{name}' as a {kind.__name__}, got {value!r}"
                )
            return value

        if action not in RELEASE_ACTIONS:
            raise ConfigError.of(
                error_rules.RELEASE_ACTION,
                f"no release action '{action}'",
                where=", ".join(RELEASE_ACTIONS[:-1]) + " or " + RELEASE_ACTIONS[-1],
            )
        if self.on_cluster:
            return await self._release_on_cluster(key, action, body, field)

        def run() -> dict[str, Any]:
            state = State.load(self.state_dir)
            spec = self.spec
            if action == "start":
                pins = {field("model", str, True): field("version", str, True)}
                return release.start(spec, state, key, pins, body.get("percent"))
            if action == "move":
                return release.move(
                    spec, state, key, field("model", str, True), body.get("percent")
                )
            if action == "step":
                resume = bool(field("resume", bool))
                return release.step(state, key, body.get("percent"), resume=resume)
            if action == "pause":
                release.pause(state, key)
                return {}
            if action == "abort":
                release.abort(state, key)
                return {}
            if action == "promote":
                return {"group_revision": release.promote(spec, state, key)}
            revision = field("revision", int)
            return {"group_revision": release.rollback(spec, state, key, revision)}

        return dict(await self.locked(run))

    async def _release_on_cluster(
        self, key: str, action: str, body: dict[str, Any], field: Any
    ) -> dict[str, Any]:
        from modelyard.control import kubernetes_release as on_cluster
        from modelyard.control import release
        from modelyard.control.kubernetes import ClusterOptions

        cluster = self._connected(self.cluster)
        await self._find_cluster_instances()  # the registry now: which pods a step counts
        instances = self.cluster_instances()
        on = on_cluster.OnCluster(
            cluster,
            ClusterOptions(namespace=self.config.namespace, registry_url=self.config.registry),
            instances,
            sum(cards for group_key, cards in self.running() if group_key == key),
        )

        def run() -> dict[str, Any]:
            state, spec = State.load(self.state_dir), self.spec
            if action == "start":
                pins = {field("model", str, True): field("version", str, True)}
                return on_cluster.start(spec, state, on, key, pins, body.get("percent"))
            if action == "move":
                model = field("model", str, True)
                return on_cluster.move(spec, state, on, key, model, body.get("percent"))
            if action == "step":
                resume = bool(field("resume", bool))
                return on_cluster.step(state, cluster, instances, key, body.get("percent"),
                                       resume=resume)  # fmt: skip
            if action == "pause":
                release.pause(state, key)
                return {}
            if action == "abort":
                on_cluster.abort(state, cluster, key)
                return {}
            if action == "promote":
                return {"group_revision": on_cluster.promote(state, cluster, key),
                        "promoting": True}  # fmt: skip
            revision = on_cluster.rollback(spec, state, on, key, field("revision", int))
            return {"group_revision": revision, "promoting": True}

        return dict(await self.locked(run))


def _held(state: State, group_key: str) -> str | None:
    """Why a scaling decision for the group must wait, if it must."""
    moving_out = any(r.get("from_group") == group_key for r in state.releases.values())
    if group_key in state.releases or moving_out:
        return "held: a release of the group is in progress"
    if state.lost:  # replacements hold quota the trial replicas would not count
        lost = ", ".join(sorted(state.lost))
        return f"held: {lost} declared lost (until platform dr restore)"
    return None


def _cards(spec: str) -> int:
    parsed = InstanceSpec.parse(spec)
    return parsed.cards if parsed is not None else 0


def _cluster_hands(config: PlaneConfig) -> tuple[GroupScaler, Cluster]:
    """The Deployments' scale, and a release's Deployments and weights, through one client."""
    from modelyard.control.kubernetes import ClusterOptions
    from modelyard.control.kubernetes_apply import api_client
    from modelyard.control.kubernetes_release import ClusterReleases
    from modelyard.control.kubernetes_scaler import DeploymentScaler

    options = ClusterOptions(namespace=config.namespace, registry_url=config.registry)
    client = api_client(config.kubeconfig)
    return DeploymentScaler(options, client), ClusterReleases(client)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def _slot_key(instance: Any) -> str:
    """An instance's slot, as supervision records it: SERVICE/GROUP/TEMPLATE/DC/INDEX."""
    return "/".join(map(str, slot_of(instance)))
