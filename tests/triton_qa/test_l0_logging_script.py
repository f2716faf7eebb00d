"""Triton's qa/L0_logging test.sh: its checks around the Python files, each server as
test.sh starts it.

The log's settings as ``GET /v2/logging`` answers them after each start (test.sh's
``verify_correct_settings``: the JSON text grepped as it is), the records the log file
and the console hold after traffic (test.sh's ``grep -c ^[IWEV][0-9][0-9][0-9][0-9]``
counts: at least 19 in the file at the info level and none on the console while a file
is given; more than 30 console lines with none), the info switch
(``Started HTTPService at`` absent with ``--log-info=false``, ``Waiting for in-flight
requests to complete`` once after it is switched on), the verbose level (``/v2/logging``
in the file for each request at level 1, no more once 0), the format (ISO8601 from the
flag, then the default's ``I<mmdd>`` after ``{"log_format":"default"}``) and the
refused settings (``1``, ``False`` and ``"false"`` for a switch, ``-1`` and ``"1"`` for
the level). Traffic comes from tritonclient's Python ``simple_http_infer_client.py`` and
``simple_grpc_infer_client.py`` where test.sh runs their C++ builds (not built here);
the refused log file is checked for Triton's text leading its error (Differences kept:
Whole messages), and the record count test.sh wants at the verbose level, 75, is
Triton's own volume (docs/triton-qa.md: not checked).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_logging import repository

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full]

CLIENTS = ("simple_http_infer_client.py", "simple_grpc_infer_client.py")
RECORD = re.compile(r"^[IWEV][0-9]{4}", re.MULTILINE)


class Script:
    """test.sh's steps in its folder: servers, clients, curl and the failures seen."""

    def __init__(self, host: LoopbackHost, work: Path) -> None:
        self.host = host
        self.work = work
        self.failures: list[str] = []

    @contextmanager
    def server(self, *args: str, log: str = "server.log") -> Iterator[Path]:
        models = repository(self.work)
        argv = [*args, f"--model-repository={models}"]
        with harness.tritonserver(self.host, argv, self.work / log, cwd=self.work):
            yield self.work / log

    def expect(self, holds: bool, what: str) -> None:
        if not holds:
            self.failures.append(what)

    def settings(self, file: str, info: str, warn: str, error: str, verbose: str,
                 fmt: str) -> None:  # fmt: skip
        """test.sh's verify_correct_settings: each setting grepped in GET's answer."""
        code, body = harness.curl(self.host, "/v2/logging")
        expected = [f'"log_file":"{file}"', f'"log_info":{info}', f'"log_warning":{warn}',
                    f'"log_error":{error}', f'"log_verbose_level":{verbose}',
                    f'"log_format":"{fmt}"']  # fmt: skip
        for text in expected:
            self.expect(code == "200" and text in body, f"settings: {text} not in {body}")

    def post(self, settings: str) -> tuple[str, str]:
        return harness.curl_at(self.host, "localhost:8000/v2/logging", "-d", settings)

    def clients(self) -> None:
        for client in CLIENTS:
            done = harness.run_script(self.host, harness.CLIENT_EXAMPLES / client, cwd=self.work)
            self.expect(done.returncode == 0, f"{client}: {(done.stdout + done.stderr)[-800:]}")

    def file_records(self, console: Path, at_least: int) -> None:
        """test.sh's counts after traffic with a log file: its records in the file, none
        on the console."""
        written = records(self.file())
        self.expect(written >= at_least, f"log file: {written} records, test.sh wants {at_least}")
        self.expect(records(console.read_text()) == 0, "records on the console with a file")

    def file(self, name: str = "log_file.log") -> str:
        path = self.work / name
        return path.read_text(errors="replace") if path.exists() else ""


def records(text: str) -> int:
    return len(RECORD.findall(text))


def test_logging_script(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_logging")
    script = Script(host, work)

    with script.server() as console:  # default
        script.settings("", "true", "true", "true", "0", "default")
        script.clients()
        lines = len(console.read_text().splitlines())
        script.expect(lines > 30, f"console holds {lines} lines, test.sh wants more than 30")

    with script.server("--log-file=log_file.log", log="server_log_file.log") as console:
        script.settings("log_file.log", "true", "true", "true", "0", "default")
        script.clients()
        script.file_records(console, at_least=19)

    (work / "log_file.log").unlink()
    with script.server("--log-file=log_file.log", "--log-verbose=1", log="dynamic.log") as console:
        _, body = script.post('{"log_file":"other_log.log"}')
        refusal = '"error":"log file location can not be updated through network protocol'
        script.expect(refusal in body, f"log_file refusal: {body}")
        script.settings("log_file.log", "true", "true", "true", "1", "default")
        script.clients()
        script.file_records(console, at_least=31)

    (work / "log_file.log").unlink()
    with script.server("--log-file=log_file.log", "--log-info=false", "--log-verbose=1",
                       log="info.log"):  # fmt: skip
        script.settings("log_file.log", "false", "true", "true", "1", "default")
        script.clients()
        script.expect("Started HTTPService at" not in script.file(), "info record with info off")
        script.post('{"log_info":true}')
        script.settings("log_file.log", "true", "true", "true", "1", "default")
        script.clients()
    waiting = script.file().count("Waiting for in-flight requests to complete")
    script.expect(waiting == 1, f"'Waiting for in-flight requests' {waiting} times, not 1")

    with script.server("--log-warning=false", log="warning.log"):
        script.settings("", "true", "false", "true", "0", "default")
        script.clients()
    with script.server("--log-error=false", log="error.log"):
        script.settings("", "true", "true", "false", "0", "default")
        script.clients()

    (work / "log_file.log").unlink()
    with script.server("--log-file=log_file.log", "--log-verbose=1", log="verbose.log"):
        harness.curl(host, "/v2/logging")
        script.settings("log_file.log", "true", "true", "true", "1", "default")
        script.clients()
        requests = _settled(lambda: script.file().count("/v2/logging"), 2)
        script.expect(requests == 2, f"/v2/logging in {requests} records, test.sh wants 2")
        infer = "HTTP request: 2 /v2/models/simple/infer"  # the clients' own, on the fast path
        script.expect(infer in script.file(), f"no {infer!r} record at verbose level 1")
        script.post('{"log_verbose_level":0}')
        script.settings("log_file.log", "true", "true", "true", "0", "default")
        harness.curl(host, "/v2/logging")
        requests = script.file().count("/v2/logging")
        script.expect(requests <= 3, f"/v2/logging in {requests} records, test.sh wants 3 at most")

    (work / "log_file.log").unlink()
    today = time.strftime("I%m%d")
    with script.server("--log-file=log_file.log", "--log-verbose=1", "--log-format=ISO8601",
                       log="format.log"):  # fmt: skip
        script.settings("log_file.log", "true", "true", "true", "1", "ISO8601")
        script.clients()
        first = script.file().splitlines()[0].split(" ")[0]
        script.expect(first != today, f"first record {first!r} in the default format")
        script.post('{"log_format":"default"}')
        script.settings("log_file.log", "true", "true", "true", "1", "default")
        last = script.file().splitlines()[-1].split(" ")[0]
        script.expect(last == today, f"last record starts {last!r}, not {today!r}")

    with script.server("--log-warn=false", log="negative.log"):
        for switch in ("log_info", "log_warning", "log_error"):
            for value in ("1", "False", '"false"'):
                code, _ = script.post(f'{{"{switch}":{value}}}')
                script.expect(code != "200", f"{switch}={value} answered {code}")
            code, _ = script.post(json.dumps({switch: True}))
            script.expect(code == "200", f"{switch}=true answered {code}")
        for value, taken in (("-1", False), ('"1"', False), ("0", True)):
            code, _ = script.post(f'{{"log_verbose_level":{value}}}')
            script.expect((code == "200") == taken, f"log_verbose_level={value} answered {code}")

    assert not script.failures, "\n".join(script.failures)


def _settled(count: object, expected: int, wait: float = 2.0) -> int:
    """A count of the log file once it reaches ``expected`` (the file is written as the
    requests are answered), or as it is after ``wait`` seconds."""
    assert callable(count)
    deadline = time.monotonic() + wait
    seen = count()
    while seen < expected and time.monotonic() < deadline:
        time.sleep(0.05)
        seen = count()
    return int(seen)
