"""Running Triton's own QA files against modelyard, as their ``test.sh`` runs them.

A QA file (``vendor/server/qa/L0_*/*.py``) is copied with ``qa/common`` into a work
directory (it writes its logs and result files beside itself, and imports
``../common``), and run unchanged by pytest in a network namespace of its own
(``LoopbackHost``), where ``tritonserver`` (modelyard's command of that name) listens on
localhost:8000, 8001 and 8002 as the file expects. Each test's outcome comes back from
pytest's JUnit XML; a test module of ours compares them with what it expects.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support import netns
from tests.support.netns import HostProcess, LoopbackHost

VENDOR = Path(__file__).resolve().parent / "vendor"
QA = VENDOR / "server" / "qa"
CLIENT_EXAMPLES = VENDOR / "client" / "src" / "python" / "examples"
ROOT = Path(__file__).resolve().parents[2]

# the command a test.sh names as $SERVER: modelyard answering as tritonserver
TRITONSERVER = [sys.executable, "-m", "modelyard.cli.tritonserver"]


def unavailable() -> str | None:
    """Why the QA files cannot run here, or None."""
    return netns.unavailable()


def skip_unless_namespaces() -> pytest.MarkDecorator:
    reason = unavailable()
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a QA file's processes run in: this checkout importable, ``extra``
    exported."""
    env = dict(os.environ)
    path = [str(ROOT / "src"), str(ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    env.update(extra or {})
    return env


def work_directory(tmp: Path, qa_dir: str) -> Path:
    """``qa/common``, ``qa/python_models`` and ``qa/<qa_dir>`` copied under ``tmp``;
    returns the latter."""
    (tmp / "qa").mkdir(parents=True, exist_ok=True)
    for shared in ("common", "python_models"):
        if not (tmp / "qa" / shared).exists():
            shutil.copytree(QA / shared, tmp / "qa" / shared)
    target = tmp / "qa" / qa_dir
    shutil.copytree(QA / qa_dir, target, dirs_exist_ok=True)
    # pytest stops at this file when it looks for a configuration: the project's own
    # settings (warnings as errors, import mode) are not the QA files'
    (tmp / "qa" / "pytest.ini").write_text("[pytest]\n")
    return target


def generate(script: str, *args: str, cwd: Path) -> None:
    """Run one of Triton's model generators (``qa/common/gen_*.py``) in ``cwd``."""
    subprocess.run(
        [sys.executable, script, *args],
        cwd=cwd,
        env=environment(),
        check=True,
        capture_output=True,
        timeout=300,
    )


class Server:
    """A ``tritonserver`` started in a namespace, with its log."""

    def __init__(self, process: HostProcess) -> None:
        self.process = process

    def log(self) -> str:
        return self.process.log()

    def stop(self) -> None:
        self.process.stop()


_WAIT_SCRIPT = """
import os, sys, time, urllib.request
pid, path, deadline = int(sys.argv[1]), sys.argv[2], time.monotonic() + float(sys.argv[3])
port = sys.argv[4]
while time.monotonic() < deadline:
    try:  # gone, or exited and not yet reaped by the test (a zombie)
        if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
            sys.exit(2)
    except OSError:
        sys.exit(2)
    try:
        if urllib.request.urlopen(f"http://localhost:{port}" + path, timeout=1).status == 200:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit(3)
"""


def in_opt_ml(**links: Path) -> list[str]:
    """The command prefix that runs a command in a mount namespace of its own whose
    ``/opt`` is an empty tmpfs holding ``/opt/ml/<name>`` links to ``links``' folders, as
    Triton's SageMaker tests make them (nothing of the host's ``/opt`` changes); the
    command keeps the prefix's process."""
    steps = ["mount -t tmpfs tmpfs /opt", "mkdir -p /opt/ml"]
    steps += [f"ln -s {shlex.quote(str(target))} /opt/ml/{name}" for name, target in links.items()]
    script = " && ".join([*steps, 'exec "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]


@contextmanager
def tritonserver(
    host: LoopbackHost,
    args: Sequence[str],
    log_path: Path,
    wait: str = "ready",
    timeout: float = 90.0,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    http_port: int = 8000,
    prefix: Sequence[str] = (),
) -> Iterator[Server]:
    """``tritonserver ARGS`` in ``host``, waited for as test.sh's run_server waits (ready),
    or only until live, or until it answers its metadata (``wait="metadata"``: a server
    that is neither), or until ``http_port`` answers 200 on ``wait`` where it is a path;
    stopped on exit. ``env``: what test.sh exports for it; ``prefix``: a command it runs
    under (``in_opt_ml``)."""
    argv = [*prefix, *TRITONSERVER, *args]
    process = host.start(argv, log_path, cwd=cwd, env=environment(env))
    server = Server(process)
    path = {"ready": "/v2/health/ready", "live": "/v2/health/live", "metadata": "/v2"}.get(
        wait, wait
    )
    try:
        waited = subprocess.run(  # one poller in the namespace (its localhost is the server's)
            host.command(
                [
                    sys.executable,
                    "-c",
                    _WAIT_SCRIPT,
                    str(process.process.pid),
                    path,
                    str(timeout),
                    str(http_port),
                ]
            ),
            capture_output=True,
            timeout=timeout + 30,
        )
        if waited.returncode != 0:
            state = "exited" if waited.returncode == 2 else f"not {wait} in {timeout}s"
            raise RuntimeError(f"tritonserver {state}:\n{server.log()[-6000:]}")
        yield server
    finally:
        server.stop()


_PORT_SCRIPT = """
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("localhost", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
"""


def wait_for_port(host: LoopbackHost, port: int, timeout: float = 30) -> None:
    """Until something in ``host`` takes connections on localhost:``port``."""
    argv = [sys.executable, "-c", _PORT_SCRIPT, str(port), str(timeout)]
    if subprocess.run(host.command(argv), timeout=timeout + 30).returncode != 0:
        raise RuntimeError(f"nothing listens on localhost:{port} after {timeout}s")


def start_fails(
    host: LoopbackHost,
    args: Sequence[str],
    log_path: Path,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> str:
    """Start ``tritonserver ARGS`` expecting it to end by itself; its log. ``env``: what
    test.sh exports for it."""
    process = host.start([*TRITONSERVER, *args], log_path, cwd=cwd, env=environment(env))
    try:
        process.process.wait(timeout)
    finally:
        process.stop()
    return process.log()


@dataclass(frozen=True)
class Outcome:
    status: str  # passed, failed, error, skipped
    message: str = ""


@dataclass
class QaRun:
    """The outcomes of one run of a QA file, by test id (``Class::test``)."""

    outcomes: dict[str, Outcome]
    output: str

    def passed(self) -> set[str]:
        return {name for name, o in self.outcomes.items() if o.status == "passed"}

    def not_passed(self) -> dict[str, Outcome]:
        return {name: o for name, o in self.outcomes.items() if o.status != "passed"}

    def check(self, count: int | None = None, out_of_reach: dict[str, str] | None = None) -> None:
        """Every test passed but those ``out_of_reach`` names (``Class::test``, each with
        why it cannot pass here, and each must indeed fail: one that passes comes off the
        list); ``count``: how many tests ran (test.sh's EXPECTED_NUM_TESTS)."""
        out_of_reach = out_of_reach or {}
        lines = [
            f"{name}: {o.status}: {o.message[-1500:]}"
            for name, o in sorted(self.not_passed().items())
            if name not in out_of_reach
        ]
        lines += [
            f"{name}: passes now; take it off the out-of-reach list"
            for name in sorted(self.passed() & set(out_of_reach))
        ]
        lines += [f"{name}: did not run" for name in sorted(set(out_of_reach) - set(self.outcomes))]
        if count is not None and len(self.outcomes) != count:
            lines.append(f"{len(self.outcomes)} tests ran, test.sh expects {count}")
        if not self.outcomes:
            lines.append(f"no test ran:\n{self.output[-4000:]}")
        assert not lines, "\n".join(lines)


def run_qa_file(
    host: LoopbackHost,
    work: Path,
    test_file: str,
    *selection: str,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    pytest_style: bool = False,
    runner: str = "tests.triton_qa.unittest_report",
    python: str = sys.executable,
) -> QaRun:
    """``test_file`` (in ``work``) in ``host`` as its test.sh runs it: ``python FILE``
    (unittest), or pytest where test.sh uses pytest; ``selection``: ``Class.test`` names
    (unittest) or pytest node ids relative to the file. ``runner``: the module that runs
    a unittest file and writes its report (unittest_report's arguments); ``python``: the
    interpreter (a client's environment of its own)."""
    stem = Path(test_file).stem
    if pytest_style:
        report = work / f"{stem}.junit.xml"
        targets = [f"{test_file}::{s}" for s in selection] or [test_file]
        argv = [
            python, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            f"--junitxml={report}", "-o", "junit_family=xunit1", *targets,
        ]  # fmt: skip
    else:
        report = work / f"{stem}.outcomes.json"
        argv = [python, "-m", runner, str(report), test_file]
        argv += list(selection)
    report.unlink(missing_ok=True)
    done = subprocess.run(
        host.command(argv),
        cwd=work,
        env=environment(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = done.stdout + done.stderr
    if not report.exists():
        return QaRun({}, output)
    if pytest_style:
        return QaRun(_read_report(report), output)
    outcomes = json.loads(report.read_text())
    return QaRun({k: Outcome(v["status"], v["message"]) for k, v in outcomes.items()}, output)


def _read_report(report: Path) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        status, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            element = case.find(kind)
            if element is not None:
                status = {"failure": "failed"}.get(kind, kind)
                message = (element.get("message") or "") + "\n" + (element.text or "")
                break
        outcomes[name] = Outcome(status, message.strip())
    return outcomes


def curl(host: LoopbackHost, path: str) -> tuple[str, str]:
    """test.sh's ``curl -s -w %{http_code} localhost:8000PATH`` in ``host``: the status
    code and the body."""
    return curl_at(host, f"localhost:8000{path}")


def curl_at(host: LoopbackHost, url: str, *options: str) -> tuple[str, str]:
    """``curl -s -w %{http_code} OPTIONS URL`` in ``host``: the status code and the body."""
    done = subprocess.run(
        host.command(["curl", "-s", "-w", "\n%{http_code}", *options, url]),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    body, _, code = done.stdout.rpartition("\n")
    return code, body


def run_script(
    host: LoopbackHost, script: Path, *args: str, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """A client script (one of tritonclient's examples), unchanged, in ``host``."""
    return subprocess.run(
        host.command([sys.executable, str(script), *args]),
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


Item = TypeVar("Item")
Result = TypeVar("Result")


def in_lanes(
    hosts: Sequence[LoopbackHost],
    items: Sequence[Item],
    run: Callable[[int, Item], Result],
) -> list[tuple[Item, Result]]:
    """``run(lane, item)`` for every item, one lane per host at a time (a lane takes the
    next item when it is done with one); the results in the items' order."""
    waiting: queue.Queue[int] = queue.Queue()
    for index in range(len(items)):
        waiting.put(index)
    results: dict[int, Result] = {}

    def lane(number: int) -> None:
        while True:
            try:
                index = waiting.get_nowait()
            except queue.Empty:
                return
            results[index] = run(number, items[index])

    with ThreadPoolExecutor(len(hosts)) as pool:
        for done in [pool.submit(lane, number) for number in range(len(hosts))]:
            done.result()
    return [(item, results[index]) for index, item in enumerate(items)]
