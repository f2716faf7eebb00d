"""What ``platform up`` does with the processes it starts: reap, record, restart.

Every process the control plane starts is watched (``Supervisor.check``, five
times a second): a child that exits is reaped at once (no zombie outlives a
fifth of a second), logged as an event with its exit status, counted, and
started again after its backoff:

- a service's gateway runs as ``processes`` processes sharing the service's port
  (``gateway --reuse-port``): one that exits is started again on the same port
  while the others serve; each has a port of its own (``--status-port``) where
  its health and counters are read. With ``standby``, one more process per
  service is started and kept ready without the port (``gateway --standby``):
  when a serving one exits, the standby takes its place at once (SIGUSR1: it
  binds the port in milliseconds, where a fresh process needs its start-up) and
  a new standby is started;
- an instance that exits is replaced in its slot by the control plane's healing
  (``ControlPlane.heal``), which the supervisor wakes at once and which waits out
  the slot's backoff.

Backoff: the first restart is immediate; a process that exits again within
``STABLE_RUN_S`` of its start waits twice as long as the last time (from
``FIRST_DELAY_S`` to ``MAX_DELAY_S``), so a crash loop cannot spin; one that ran
longer starts the count afresh.

A control plane started on a state directory whose gateways still run (it was
killed) adopts them: each gateway recorded in ``gateways.json`` that is alive,
serves the same service and listens on the port this control plane would use
keeps serving; those on another port are handed over (new processes first, then
the old ones stopped). Adopted processes are not this process's children: their
exit is seen, but not its status.

``supervision.json`` in the state directory holds what ``platform status`` shows
without the API: the control plane's pid, each gateway process (state, restarts,
last exit) and each instance slot's restarts and last exit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from modelyard.control.launcher import is_alive, safe_name
from modelyard.processes import free_port

log = structlog.get_logger("modelyard.control")

FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0
STABLE_RUN_S = 10.0
SUCCESSOR_WAIT_S = 10.0  # a gateway told to stop (SIGTERM) waits this long for a successor
GATEWAY_DRAIN_GRACE_S = 1.0


def exit_status(returncode: int | None) -> dict[str, Any]:
    """An exit as an event records it: the code, or the signal that ended the process."""
    if returncode is None:
        return {"at": time.time(), "code": None, "signal": None, "known": False}
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return {"at": time.time(), "code": None, "signal": name, "known": True}
    return {"at": time.time(), "code": returncode, "signal": None, "known": True}


def describe_exit(last: dict[str, Any] | None) -> str:
    if not last:
        return "-"
    when = time.strftime("%H:%M:%S", time.localtime(last["at"]))
    if not last.get("known", True):
        return f"exited at {when} (not this control plane's child: status unknown)"
    if last.get("signal"):
        return f"killed by {last['signal']} at {when}"
    return f"exit code {last['code']} at {when}"


@dataclass(slots=True)
class Backoff:
    """When a process that exited may start again."""

    restarts: int = 0
    delay: float = 0.0  # the wait before the next start
    not_before: float = 0.0  # monotonic time
    last_exit: dict[str, Any] | None = None
    quick_exits: int = 0  # exits in a row, each within STABLE_RUN_S of its start

    def exited(self, status: dict[str, Any], ran_for: float, now: float) -> float:
        """Record an exit after ``ran_for`` seconds of running; the wait before a restart."""
        self.last_exit = status
        if ran_for >= STABLE_RUN_S:
            self.quick_exits = 0
        self.delay = (
            0.0
            if self.quick_exits == 0
            else min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** (self.quick_exits - 1))
        )
        self.quick_exits += 1
        self.not_before = now + self.delay
        return self.delay

    def to_json(self) -> dict[str, Any]:
        return {"restarts": self.restarts, "backoff_s": self.delay, "last_exit": self.last_exit}


@dataclass(slots=True)
class GatewayProcess:
    """One of a service's gateway processes: its slot on the port, and what ran there."""

    service: str
    slot: int
    http_port: int
    grpc_port: int | None
    log: str
    pid: int = 0
    status_port: int = 0
    started_at: float = 0.0  # wall time
    started_mono: float = 0.0
    # starting | standby (ready, without the port) | promoting | running | backoff | stopped
    state: str = "starting"
    process: subprocess.Popen[bytes] | None = None  # None: adopted, or not started
    backoff: Backoff = field(default_factory=Backoff)

    @property
    def adopted(self) -> bool:
        return self.process is None and self.pid > 0

    def logger(self) -> Any:
        """The supervisor's log, with this process's service, slot and pid."""
        return log.bind(service=self.service, slot=self.slot, pid=self.pid)

    def to_json(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "slot": self.slot,
            "pid": self.pid,
            "http_port": self.http_port,
            "grpc_port": self.grpc_port,
            "status_port": self.status_port,
            "state": self.state,
            "started_at": self.started_at,
            "adopted": self.adopted,
            "log": self.log,
            **self.backoff.to_json(),
        }


STANDBY = -1  # the slot of a service's standby process


@dataclass(slots=True)
class GatewayPlan:
    """What a service's gateway processes run with."""

    service: str
    http_port: int
    grpc_port: int | None
    processes: int
    extra: list[str]  # attempt flags from the spec
    standby: bool = True


class Supervisor:
    def __init__(self, state_dir: Path, host: str, registry: Callable[[], str]) -> None:
        self.state_dir = state_dir
        self.host = host
        self._registry = registry
        self.gateways: list[GatewayProcess] = []
        self.plans: dict[str, GatewayPlan] = {}
        self.slots: dict[str, Backoff] = {}  # instance slot -> its restarts and last exit
        self.started_at = time.time()
        self._dirty = True
        self._leftover: list[dict[str, Any]] = []  # recorded gateways not adopted

    # ---- gateways ------------------------------------------------------------

    def recorded_ports(self) -> dict[str, tuple[int, int | None]]:
        """Service -> (HTTP, gRPC) port its gateways held, as ``gateways.json`` records."""
        ports: dict[str, tuple[int, int | None]] = {}
        for entry in read_gateways(self.state_dir):
            if "http_port" in entry:
                ports.setdefault(entry["service"], (entry["http_port"], entry.get("grpc_port")))
        return ports

    def start_gateways(self, plans: list[GatewayPlan]) -> list[str]:
        """Adopt the recorded gateways that fit ``plans``, start the rest; the recorded ones
        that do not fit are stopped later (``stop_leftovers``, once the new ones listen).
        What was done."""
        self.plans = {plan.service: plan for plan in plans}
        fitting, leftover = self._sort_recorded()
        done = _stop_blocking(plans, leftover)
        for plan in plans:
            for slot in [*range(plan.processes), *([STANDBY] if plan.standby else [])]:
                gateway = self._new(plan, slot)
                mine = fitting.get((plan.service, slot == STANDBY), [])
                if mine:
                    done.append(_adopt(gateway, mine.pop(0)))
                else:
                    self._launch(gateway)
                self.gateways.append(gateway)
        self.record()
        self._leftover = leftover
        return done

    def _sort_recorded(
        self,
    ) -> tuple[dict[tuple[str, bool], list[dict[str, Any]]], list[dict[str, Any]]]:
        """The recorded gateways still alive: those that fit the plans, per service and
        whether they stand by (no more than a plan wants), and the others."""
        fitting: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        leftover: list[dict[str, Any]] = []
        for entry in read_gateways(self.state_dir):
            pid, service = int(entry.get("pid", 0)), str(entry.get("service", ""))
            if not is_alive(pid, service):
                continue
            plan = self.plans.get(service)
            standby = entry.get("slot") == STANDBY
            wanted = 0 if plan is None else (int(plan.standby) if standby else plan.processes)
            fits = (
                plan is not None
                and entry.get("http_port") == plan.http_port
                and entry.get("grpc_port") == plan.grpc_port
                and len(fitting.get((service, standby), [])) < wanted
            )
            (fitting.setdefault((service, standby), []) if fits else leftover).append(entry)
        return fitting, leftover

    def stop_leftovers(self) -> list[str]:
        """The recorded gateways this control plane did not adopt: handed over to the new
        ones (on their own port they wait for no successor)."""
        done = []
        for entry in self._leftover:
            pid, service = int(entry["pid"]), str(entry["service"])
            if stop_process(pid, service, signal.SIGINT):
                done.append(
                    f"stopped the gateway of {service} pid {pid}, left by an earlier "
                    f"control plane on port {entry.get('http_port')}"
                )
        self._leftover = []
        return done

    def _new(self, plan: GatewayPlan, slot: int) -> GatewayProcess:
        logs = self.state_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        which = "standby" if slot == STANDBY else str(slot)
        name = f"gateway-{safe_name(plan.service)}-{which}.log"
        return GatewayProcess(plan.service, slot, plan.http_port, plan.grpc_port, str(logs / name))

    def command(self, gateway: GatewayProcess) -> list[str]:
        plan = self.plans[gateway.service]
        cache = self.state_dir / "cache" / f"{safe_name(gateway.service)}.json"
        return [
            sys.executable,
            "-m",
            "modelyard.cli.main",
            "gateway",
            "--service",
            gateway.service,
            "--registry",
            self._registry(),
            "--host",
            self.host,
            "--http-port",
            str(gateway.http_port),
            "--grpc-port",
            str(-1 if gateway.grpc_port is None else gateway.grpc_port),
            "--reuse-port",
            "--status-port",
            str(gateway.status_port),
            "--successor-wait",
            f"{SUCCESSOR_WAIT_S:g}",
            "--drain-grace",
            f"{GATEWAY_DRAIN_GRACE_S:g}",
            "--instances-cache",
            str(cache),
            *plan.extra,
            *(["--standby"] if gateway.slot == STANDBY else []),
        ]

    def _launch(self, gateway: GatewayProcess) -> None:
        gateway.status_port = free_port()
        with open(gateway.log, "ab") as handle:
            gateway.process = subprocess.Popen(
                self.command(gateway),
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                start_new_session=True,  # a terminal's Ctrl-C is the control plane's to pass on
            )
        gateway.pid = gateway.process.pid
        gateway.started_at, gateway.started_mono = time.time(), time.monotonic()
        gateway.state = "starting"
        self._dirty = True
        gateway.logger().info(
            "gateway_started",
            port=gateway.http_port,
            status_port=gateway.status_port,
            restarts=gateway.backoff.restarts,
        )

    def check_gateways(self, seen: dict[int, str]) -> list[GatewayProcess]:
        """Reap and record the gateway processes that exited; put the service's standby in
        the place of a serving one that exited, or start it again after its backoff; note
        what the processes being started say of themselves (``seen``: pid -> "serving" or
        "standby", from their status ports). The processes that exited now."""
        now = time.monotonic()
        exited = []
        for gateway in self.gateways:
            if gateway.state in ("starting", "standby", "promoting", "running"):
                status = self._exit_of(gateway)
                if status is not None:
                    exited.append(gateway)
                    self._exited(gateway, status, now)
                    continue
                said = seen.get(gateway.pid)
                if gateway.state == "starting" and said == "standby":
                    self._now(gateway, "standby", now)
                elif gateway.state in ("starting", "promoting") and said == "serving":
                    self._now(gateway, "running", now)
        for gateway in self.gateways:
            if (
                gateway.state == "backoff"
                and not self._promote_standby(gateway)
                and now >= gateway.backoff.not_before
            ):
                gateway.backoff.restarts += 1
                self._launch(gateway)
        return exited

    def _exited(self, gateway: GatewayProcess, status: dict[str, Any], now: float) -> None:
        ran = now - gateway.started_mono
        wait = gateway.backoff.exited(status, ran, now)
        gateway.state, gateway.process = "backoff", None
        self._dirty = True
        gateway.logger().warning(
            "gateway_exited",
            exit=describe_exit(status),
            ran_s=round(ran, 1),
            restart_in_s=wait,
            **_status_fields(status),
        )

    def _now(self, gateway: GatewayProcess, state: str, now: float) -> None:
        gateway.state = state
        self._dirty = True
        gateway.logger().info(
            "gateway_serving" if state == "running" else "gateway_standing_by",
            after_s=round(now - gateway.started_mono, 2),
        )

    def _promote_standby(self, gateway: GatewayProcess) -> bool:
        """A serving slot that exited: its service's standby, if ready, takes its place at
        once, and a new standby starts."""
        if gateway.slot == STANDBY:
            return False
        standby = next(
            (g for g in self.gateways if g.service == gateway.service and g.slot == STANDBY),
            None,
        )
        if standby is None or standby.state != "standby":
            return False
        try:
            os.kill(standby.pid, signal.SIGUSR1)
        except ProcessLookupError:
            return False
        gateway.pid, gateway.process = standby.pid, standby.process
        gateway.status_port = standby.status_port
        gateway.started_at, gateway.started_mono = standby.started_at, standby.started_mono
        gateway.state = "promoting"
        gateway.backoff.restarts += 1
        gateway.logger().info(
            "gateway_standby_promoted",
            restarts=gateway.backoff.restarts,
        )
        standby.process, standby.pid = None, 0
        self._launch(standby)  # the next standby
        return True

    def _exit_of(self, gateway: GatewayProcess) -> dict[str, Any] | None:
        if gateway.process is not None:
            code = gateway.process.poll()  # reaps it
            return None if code is None else exit_status(code)
        if gateway.pid and not is_alive(gateway.pid, gateway.service):
            return exit_status(None)  # adopted: its parent was the earlier control plane
        return None

    def stop_gateways(self, timeout: float = 15.0) -> None:
        """Stop every gateway process: SIGINT (no successor is coming), then SIGKILL."""
        for gateway in self.gateways:
            gateway.state = "stopped"
            if gateway.process is not None and gateway.process.poll() is None:
                gateway.process.send_signal(signal.SIGINT)
            elif gateway.adopted and is_alive(gateway.pid, gateway.service):
                os.kill(gateway.pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        for gateway in self.gateways:
            if gateway.process is not None:
                try:
                    gateway.process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    gateway.process.kill()
                    gateway.process.wait(5)
            elif gateway.adopted:
                while is_alive(gateway.pid, gateway.service) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if is_alive(gateway.pid, gateway.service):
                    os.kill(gateway.pid, signal.SIGKILL)
        (self.state_dir / "gateways.json").unlink(missing_ok=True)
        self._dirty = True

    # ---- instances -----------------------------------------------------------

    def instance_exited(
        self, slot: str, name: str, pid: int, returncode: int | None, ran_for: float
    ) -> float:
        """Record an instance's exit in its slot; the wait before healing may replace it."""
        status = exit_status(returncode)
        backoff = self.slots.setdefault(slot, Backoff())
        wait = backoff.exited(status, ran_for, time.monotonic())
        self._dirty = True
        log.warning(
            "instance_exited",
            instance=name,
            pid=pid,
            exit=describe_exit(status),
            ran_s=round(ran_for, 1),
            replace_in_s=wait,
            **_status_fields(status),
        )
        return wait

    def exit_status_known(self, slot: str, returncode: int | None) -> None:
        """The status of an exit already recorded without one (healing found the process
        gone before it was reaped): the slot's last exit says it, and nothing else changes."""
        backoff = self.slots.setdefault(slot, Backoff())
        backoff.last_exit = exit_status(returncode)
        self._dirty = True

    def may_replace(self, slot: str) -> bool:
        backoff = self.slots.get(slot)
        return backoff is None or time.monotonic() >= backoff.not_before

    def replaced(self, slot: str) -> None:
        self.slots.setdefault(slot, Backoff()).restarts += 1
        self._dirty = True

    # ---- records ---------------------------------------------------------------

    def record(self) -> None:
        """``gateways.json`` (what a later control plane adopts or stops) and
        ``supervision.json`` (what ``platform status`` shows), when something changed."""
        if not self._dirty:
            return
        self._dirty = False
        live = [g for g in self.gateways if g.pid and g.state != "backoff" and g.state != "stopped"]
        _write_json(self.state_dir / "gateways.json", [g.to_json() for g in live])
        _write_json(
            self.state_dir / "supervision.json",
            {
                "control_plane": {"pid": os.getpid(), "started_at": self.started_at},
                "gateways": [g.to_json() for g in self.gateways],
                "slots": {slot: b.to_json() for slot, b in self.slots.items()},
            },
        )

    def mark_changed(self) -> None:
        self._dirty = True


def _status_fields(status: dict[str, Any]) -> dict[str, Any]:
    return {"exit_code": status.get("code"), "exit_signal": status.get("signal")}


def _write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def read_gateways(state_dir: Path) -> list[dict[str, Any]]:
    path = state_dir / "gateways.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [entry for entry in doc if isinstance(entry, dict)] if isinstance(doc, list) else []


def read_supervision(state_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads((state_dir / "supervision.json").read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def stop_process(pid: int, name: str, how: int = signal.SIGTERM, timeout: float = 15.0) -> bool:
    """Signal the process ``pid`` (if it is still ``name``'s), SIGKILL it after
    ``timeout``; whether it was running."""
    if not is_alive(pid, name):
        return False
    os.kill(pid, how)
    deadline = time.monotonic() + timeout
    while is_alive(pid, name) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_alive(pid, name):
        os.kill(pid, signal.SIGKILL)
    return True


def _stop_blocking(plans: list[GatewayPlan], leftover: list[dict[str, Any]]) -> list[str]:
    """Stop the leftover gateways on a port wanted now, or recorded without their port (an
    older control plane's, which did not share it): a new one could not bind beside them.
    They leave ``leftover``."""
    done = []
    wanted_ports = {plan.http_port for plan in plans}
    for entry in [e for e in leftover if e.get("http_port") in (*wanted_ports, None)]:
        leftover.remove(entry)
        if stop_process(int(entry["pid"]), str(entry["service"]), signal.SIGINT):
            done.append(f"stopped the gateway of {entry['service']} pid {entry['pid']}, "
                        "left by an earlier control plane")  # fmt: skip
    return done


def _adopt(gateway: GatewayProcess, entry: dict[str, Any]) -> str:
    """Take over a recorded gateway that fits: what was done."""
    standby = gateway.slot == STANDBY
    gateway.pid = int(entry["pid"])
    gateway.status_port = int(entry.get("status_port") or 0)
    gateway.started_at = float(entry.get("started_at") or time.time())
    gateway.started_mono = time.monotonic()
    gateway.state = "standby" if standby else "running"
    return (
        f"adopted the gateway of {gateway.service} pid {gateway.pid} "
        f"({'standby' if standby else 'on port ' + str(gateway.http_port)}), "
        "left running by an earlier control plane"
    )
