"""Plan and apply: the change between the recorded state and the spec, then making it so.

The state directory holds ``state.json`` (the launched instances with pids
and ports, a revision bumped on every change, releases in progress and the
groups' recorded versions), ``plan.json`` (the last plan: the spec's hash
and the state revision it was computed against) and ``events/``. Apply
refuses a plan whose spec or state changed since, and otherwise starts and
stops instances until the stable instances match the spec; applying a plan
with no changes does nothing.
"""

from __future__ import annotations

import asyncio
import fcntl
import getpass
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelyard import error_rules
from modelyard.control.disaster import after_loss
from modelyard.control.launcher import (
    LaunchedInstance,
    LocalLauncher,
    is_alive,
    stop_recorded_gateways,
)
from modelyard.control.ledger import (
    Finding,
    Ledger,
    PlannedInstance,
    Reservations,
    build_ledger,
    validate,
)
from modelyard.control.spec import PlatformSpec
from modelyard.discovery import Instance, open_registry
from modelyard.errors import ConfigError

Slot = tuple[str, str, str, str, int]  # service, group, template, data centre, index


@dataclass(slots=True)
class State:
    directory: Path
    revision: int = 0
    spec_hash: str = ""
    registry: str = ""
    model_repository: str = ""
    instances: list[LaunchedInstance] = field(default_factory=list)
    releases: dict[str, dict[str, Any]] = field(default_factory=dict)  # SERVICE/GROUP -> release
    versions: dict[str, dict[str, str]] = field(default_factory=dict)  # SERVICE/GROUP -> pins
    group_revisions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # SERVICE/GROUP/TEMPLATE -> replicas the autoscaler set, in place of the spec's
    replicas: dict[str, int] = field(default_factory=dict)
    # data centre or queue -> how it was declared lost: its instances are placed elsewhere
    lost: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path) -> State:
        path = directory / "state.json"
        if not path.exists():
            return cls(directory)
        doc = json.loads(path.read_text())
        return cls(
            directory,
            doc["revision"],
            doc.get("spec_hash", ""),
            doc.get("registry", ""),
            doc.get("model_repository", ""),
            [LaunchedInstance.from_json(i) for i in doc.get("instances", [])],
            doc.get("releases", {}),
            doc.get("versions", {}),
            doc.get("group_revisions", {}),
            doc.get("replicas", {}),
            doc.get("lost", {}),
        )

    def save(self) -> None:
        """Bump the revision and write atomically."""
        self.revision += 1
        self.directory.mkdir(parents=True, exist_ok=True)
        doc = {
            "revision": self.revision,
            "spec_hash": self.spec_hash,
            "registry": self.registry,
            "model_repository": self.model_repository,
            "instances": [i.to_json() for i in self.instances],
            "releases": self.releases,
            "versions": self.versions,
            "group_revisions": self.group_revisions,
            "replicas": self.replicas,
            "lost": self.lost,
        }
        tmp = self.directory / "state.json.tmp"
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(self.directory / "state.json")

    def stable(self) -> list[LaunchedInstance]:
        return [i for i in self.instances if i.role == "stable"]

    def reserved(self, skip: str | None = None) -> Reservations:
        reserved: Counter[tuple[str, str, str]] = Counter()
        for key, release in self.releases.items():
            if key != skip:
                for quota, dc, gpu, cards in release.get("reserved", []):
                    reserved[(quota, dc, gpu)] += cards
        return dict(reserved)


@contextmanager
def state_lock(directory: Path) -> Iterator[None]:
    """Hold the state directory's lock: one writer at a time (the CLI, the control plane)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "state.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def control_plane_running(directory: Path) -> bool:
    """Whether a ``platform up`` holds this state directory (its control.lock)."""
    path = directory / "control.lock"
    if not path.exists():
        return False
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def default_registry(directory: Path) -> str:
    return f"embedded://{directory.resolve() / 'registry.db'}"


def spec_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# who acts, when not the user at this terminal: the control plane's API sets it per request
ACTOR: ContextVar[str | None] = ContextVar("modelyard_actor", default=None)


def actor() -> str:
    return ACTOR.get() or os.environ.get("MODELYARD_ACTOR") or _login_name()


def _login_name() -> str:
    """The user at this terminal: $USER is often unset in containers and under sudo -i."""
    try:
        return getpass.getuser()  # LOGNAME, USER, ..., then the password database
    except (KeyError, OSError):  # a uid with no passwd entry
        return f"uid {os.getuid()}"


def slot_of(instance: LaunchedInstance) -> Slot:
    return (
        instance.service,
        instance.group,
        instance.template,
        instance.data_center,
        instance.index,
    )


def planned_slot(planned: PlannedInstance) -> Slot:
    return (planned.service, planned.group, planned.template, planned.data_center, planned.index)


@dataclass(slots=True)
class Plan:
    spec_hash: str
    state_revision: int
    start: list[Slot]
    stop: list[str]  # instance names
    changes: list[dict[str, Any]]  # per quota, data centre, GPU model: before / after
    findings: list[Finding]

    @property
    def changed(self) -> bool:
        return bool(self.start or self.stop)

    def to_json(self) -> dict[str, Any]:
        return {
            "spec_hash": self.spec_hash,
            "state_revision": self.state_revision,
            "start": ["/".join(map(str, s)) for s in self.start],
            "stop": self.stop,
            "changes": self.changes,
        }


def make_plan(spec: PlatformSpec, spec_file: Path, state: State) -> Plan:
    replicas = effective_replicas(spec, state)
    placed = after_loss(spec, state.lost, replicas, state.reserved())[0]
    findings = validate(spec, reserved=state.reserved(), replicas=replicas, planned=placed)
    desired = {planned_slot(p): p for p in placed}
    # an instance whose template changed (spec, loads, queue) is replaced, not kept
    current = {
        slot_of(i): i
        for i in state.stable()
        if slot_of(i) not in desired or _launched_as(spec, desired[slot_of(i)], i)
    }
    replaced = sorted(i.name for i in state.stable() if slot_of(i) not in current)
    start = sorted(s for s in desired if s not in current)
    stop = sorted(replaced + [i.name for s, i in current.items() if s not in desired])
    counts: dict[tuple[str, str, str], list[int]] = {}

    def add(quota: str, dc: str, gpu: str | None, cards: int, column: int) -> None:
        row = counts.setdefault((quota, dc, gpu or "-"), [0, 0, 0, 0])
        row[column] += 1
        row[column + 2] += cards

    for instance in state.stable():
        quota = spec.services[instance.service].quota if instance.service in spec.services else "?"
        gpu = instance.spec.split("/")[2].split("*")[0] if instance.spec.count("/") == 2 else None
        add(quota, instance.data_center, gpu, instance.cards, 0)
    for planned in desired.values():
        gpu = planned.spec.gpu_model if planned.spec else None
        add(spec.services[planned.service].quota, planned.data_center, gpu, planned.cards, 1)
    changes = [
        {
            "quota": quota,
            "data_center": dc,
            "gpu_model": gpu,
            "instances_before": row[0],
            "instances_after": row[1],
            "cards_before": row[2],
            "cards_after": row[3],
        }
        for (quota, dc, gpu), row in sorted(counts.items())
    ]
    return Plan(spec_hash(spec_file), state.revision, start, stop, changes, findings)


def missing_models(spec: PlatformSpec, repository: Path) -> list[str]:
    """Models some template loads that the repository has no directory for."""
    loads = {m for s in spec.services.values() for g in s.groups.values()
             for t in g.templates.values() for m in t.loads}  # fmt: skip
    return sorted(m for m in loads if not (repository / m).is_dir())


def ledger_of(spec: PlatformSpec, state: State) -> Ledger:
    """The ledger as the state has it: the autoscaler's replicas, where a lost place's
    instances run now, and the cards releases in progress reserve."""
    replicas = effective_replicas(spec, state)
    placed = after_loss(spec, state.lost, replicas, state.reserved())[0]
    return build_ledger(spec, state.reserved(), placed)


def effective_replicas(spec: PlatformSpec, state: State) -> dict[str, int]:
    """The autoscaler's replicas for templates of groups that still autoscale, within bounds."""
    replicas = {}
    for key, count in state.replicas.items():
        service, group, template = key.split("/")
        found = spec.services.get(service)
        owner = found.groups.get(group) if found else None
        if owner is None or template not in owner.templates or not owner.autoscaling:
            continue
        low = int(owner.autoscaling.get("min", 0))
        high = int(owner.autoscaling.get("max", count))
        replicas[key] = min(max(count, low), high)
    return replicas


def _launched_as(spec: PlatformSpec, planned: PlannedInstance, instance: LaunchedInstance) -> bool:
    template = spec.services[planned.service].groups[planned.group].templates[planned.template]
    return (
        instance.spec == template.spec_text
        and instance.loads == list(template.loads)
        and instance.memory_budget == template.memory_budget
        and instance.residency == template.residency
        and instance.queue == planned.queue
    )


def stale_reason(plan_doc: dict[str, Any], spec_file: Path, state: State) -> str | None:
    if plan_doc.get("spec_hash") != spec_hash(spec_file):
        return f"the spec {spec_file} changed since the plan"
    if plan_doc.get("state_revision") != state.revision:
        return (
            f"the state changed since the plan (revision {plan_doc.get('state_revision')} "
            f"planned, now {state.revision})"
        )
    return None


def registered(registry_url: str, service: str) -> list[Instance]:
    async def read() -> list[Instance]:
        registry = open_registry(registry_url)
        try:
            return (await registry.resolve(service)).instances
        finally:
            await registry.aclose()

    return asyncio.run(read())


def _wait_for_registry(
    done: Callable[[], bool], timeout: float, interval: float, detail: Callable[[], str], where: str
) -> None:
    """Call ``done`` until it is true; refused as unavailable, with ``detail()`` as it stands
    then, when ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise ConfigError.of(error_rules.PLATFORM_REGISTRY, detail(), where=where)
        time.sleep(interval)


def wait_registered(
    registry_url: str, expected: dict[str, dict[str, float | None]], timeout: float = 30.0
) -> None:
    """Wait until each service shows exactly the expected instance ids (with weights, if set)."""
    missing: list[str] = []

    def settled() -> bool:
        missing.clear()
        for service, ids in expected.items():
            seen = {i.instance_id: i.weight for i in registered(registry_url, service)}
            if set(seen) != set(ids) or any(
                w is not None and abs(seen[n] - w) > 1e-6 for n, w in ids.items()
            ):
                missing.append(service)
        return not missing

    _wait_for_registry(
        settled,
        timeout,
        0.1,
        lambda: f"the registry does not show the launched instances of {', '.join(missing)}",
        f"the instance logs under {registry_url}",
    )


def wait_listed(registry_url: str, instance: LaunchedInstance, timeout: float = 30.0) -> None:
    """Wait until ``instance`` is in the registry: callers can find it before an old one stops."""

    def listed() -> bool:
        return instance.name in {i.instance_id for i in registered(registry_url, instance.service)}

    _wait_for_registry(
        listed,
        timeout,
        0.05,
        lambda: f"instance {instance.name} is not in the registry after {timeout:g}s",
        f"its log, {instance.log}",
    )


def expected_registry(state: State) -> dict[str, dict[str, float | None]]:
    expected: dict[str, dict[str, float | None]] = {}
    for instance in state.instances:
        expected.setdefault(instance.service, {})[instance.name] = instance.weight
    return expected


def new_instance(
    spec: PlatformSpec, slot: Slot, state: State, role: str, pins: dict[str, str]
) -> LaunchedInstance:
    service, group, template_name, dc, index = slot
    template = spec.services[service].groups[group].templates[template_name]
    return LaunchedInstance(
        name=f"{service}/{group}/{template_name}/{dc}/{index}@r{state.revision + 1}",
        service=service,
        group=group,
        template=template_name,
        data_center=dc,
        index=index,
        queue=template.queues[dc],
        spec=template.spec_text,
        cards=template.spec.cards if template.spec else 0,
        loads=list(template.loads),
        pins={m: v for m, v in pins.items() if m in template.loads},
        role=role,
        memory_budget=template.memory_budget,
        residency=template.residency,
    )


def launcher_for(state: State) -> LocalLauncher:
    return LocalLauncher(state.directory, state.registry, Path(state.model_repository))


def apply_plan(
    spec: PlatformSpec, state: State, plan: Plan, stop_timeout: float = 15.0
) -> list[str]:
    """Start and stop instances as planned, then record the state; returns what was done
    (a stopping instance gets ``stop_timeout`` to drain before it is killed)."""
    launcher = launcher_for(state)
    done = []
    started = []
    try:
        for slot in plan.start:
            pins = state.versions.get(f"{slot[0]}/{slot[1]}", {})
            instance = new_instance(spec, slot, state, "stable", pins)
            launcher.start(instance)
            state.instances.append(instance)
            started.append(instance)
            done.append(f"started {instance.name} pid {instance.pid} port {instance.http_port}")
        for instance in started:
            launcher.wait_ready(instance)
            wait_listed(state.registry, instance)
        stopping = [i for i in state.instances if i.name in plan.stop]
        launcher.stop_all(stopping, stop_timeout)
        for instance in stopping:
            state.instances.remove(instance)
            done.append(f"stopped {instance.name} pid {instance.pid}")
        state.spec_hash = plan.spec_hash
    finally:
        state.save()  # what started is recorded even when a later step fails
    expected = expected_registry(state)
    for name in plan.stop:
        expected.setdefault(name.split("/")[0], {})
    wait_registered(state.registry, expected)
    return done


def replace_dead(
    spec: PlatformSpec,
    spec_file: Path,
    state: State,
    due: Callable[[LaunchedInstance], bool] = lambda _: True,
) -> list[str]:
    """Start a fresh instance in the slot of every stable instance whose process died (and
    that ``due`` says may be replaced now: a slot whose instance keeps dying waits).

    Only the dead slots change; anything else the spec asks for waits for
    ``plan`` / ``apply``. Canaries that died are dropped from the state (a
    release step or abort decides what follows).
    """
    dead = [i for i in state.instances if not is_alive(i.pid, i.name) and due(i)]
    if not dead:
        return []
    slots = {slot_of(i) for i in dead if i.role == "stable"}
    for instance in dead:
        state.instances.remove(instance)
    done = [f"{instance.name} pid {instance.pid} died" for instance in dead]
    plan = make_plan(spec, spec_file, state)
    plan.start = [slot for slot in plan.start if slot in slots]
    plan.stop = []
    spec_before = state.spec_hash
    done += apply_plan(spec, state, plan)
    state.spec_hash = spec_before
    state.save()
    return done


def down(state: State) -> list[str]:
    launcher = launcher_for(state)
    done = stop_recorded_gateways(state.directory)
    launcher.stop_all(state.instances)
    done += [f"stopped {instance.name} pid {instance.pid}" for instance in state.instances]
    state.instances.clear()
    state.releases.clear()
    state.spec_hash = ""
    state.save()
    return done


def status_rows(
    state: State, slots: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Each launched instance; ``slots``: what supervision recorded per slot (restarts, last
    exit), from the running control plane or its ``supervision.json``."""
    rows = []
    for i in state.instances:
        slot = "/".join(map(str, slot_of(i)))
        record = (slots or {}).get(slot, {})
        rows.append(
            {
                "name": i.name,
                "alive": is_alive(i.pid, i.name),
                "pid": i.pid,
                "http": f"127.0.0.1:{i.http_port}",
                "group": f"{i.service}/{i.group}",
                "template": i.template,
                "role": i.role,
                "weight": i.weight,
                "pins": i.pins,
                "slot": slot,
                "restarts": record.get("restarts", 0),
                "last_exit": record.get("last_exit"),
            }
        )
    return rows
