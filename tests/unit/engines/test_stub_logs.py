"""A stub's log records are written by the server under its log settings
(engines/stub_logs.py): each level as the settings say at the time, initialize's
before the model serves, finalize's before the unload returns; bounded in size and
rate whatever the model sends."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import textwrap
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import structlog
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import stub_logs
from modelyard.engines.base import LoadContext
from modelyard.engines.python import PythonEngine
from modelyard.logging import LogSettings

MODEL = """
import triton_python_backend_utils as pb_utils


def log_each(when):
    logger = pb_utils.Logger
    logger.log_verbose(f"{when}-Verbose Msg!")
    logger.log(f"{when}-Specific Msg!", logger.INFO)
    logger.log_info(f"{when}-Info Msg!")
    logger.log_warn(f"{when}-Warning Msg!")
    logger.log_error(f"{when}-Error Msg!")


class TritonPythonModel:
    def initialize(self, args):
        log_each("Initialize")

    def execute(self, requests):
        x = pb_utils.get_input_tensor_by_name(requests[0], "X").as_numpy()
        if x[0, 0] == -1:
            pb_utils.Logger.log_info("long " + "x" * 100000)
        log_each("Execute")
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)])]

    def finalize(self):
        log_each("Finalize")
"""

CONFIG = """
name: "chatty"
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_FP32 dims: [ 1, 2 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ 1, 2 ] }]
"""

X = np.array([[1.0, 2.0]], dtype=np.float32)


@pytest.fixture
def written() -> Iterator[tuple[LogSettings, list[tuple[str, dict[str, Any]]]]]:
    """The server's logging with settings of its own: what it writes, by level."""
    settings = LogSettings()
    lines: list[tuple[str, dict[str, Any]]] = []

    def keep(logger: Any, method: str, event_dict: Any) -> Any:
        lines.append((method, dict(event_dict)))
        raise structlog.DropEvent

    before = structlog.get_config()
    structlog.configure(
        processors=[settings, keep],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        cache_logger_on_first_use=False,
    )
    try:
        yield settings, lines
    finally:
        structlog.configure(**before)


def _messages(lines: list[tuple[str, dict[str, Any]]], when: str) -> list[tuple[str, str]]:
    return [
        (method, fields["message"]) for method, fields in lines
        if fields["event"] == "python_model_log" and fields["message"].startswith(when)
    ]  # fmt: skip


def _written(lines: list[tuple[str, dict[str, Any]]], when: str, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(_messages(lines, when)) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def _engine(tmp_path: Path) -> PythonEngine:
    version_dir = tmp_path / "chatty" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(textwrap.dedent(MODEL))
    config = text_format.Parse(CONFIG, mc.ModelConfig())
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config))
    return engine


def test_the_server_s_settings_decide_which_records_of_the_model_are_written(
    tmp_path: Path, written: tuple[LogSettings, list[tuple[str, dict[str, Any]]]]
) -> None:
    settings, lines = written
    engine = _engine(tmp_path)
    try:
        # initialize's records are written by the time the load returns (no verbose one)
        assert _messages(lines, "Initialize") == [
            ("info", "Initialize-Specific Msg!"), ("info", "Initialize-Info Msg!"),
            ("warning", "Initialize-Warning Msg!"), ("error", "Initialize-Error Msg!"),
        ]  # fmt: skip
        (_, first), *_ = (line for line in lines if line[1]["event"] == "python_model_log")
        assert first["model"] == "chatty" and first["instance"] == "chatty_0_0"
        assert first["source"] == "model.py:8"  # the model's line, as Triton's log names it

        engine.execute({"X": np.array([[-1.0, 0.0]], dtype=np.float32)}, ["Y"])
        # an execute's are written as the server takes them; the verbose one, sent first, has
        # been taken (and dropped) once the other four are written
        _written(lines, "Execute", 4)
        settings.update({"log_verbose_level": 1, "log_info": False})
        engine.execute({"X": X}, ["Y"])
        _written(lines, "Execute", 7)
        settings.update({"log_warning": False, "log_error": False})
    finally:
        engine.unload()
    # each written under the settings of its time; finalize's before the unload returned
    assert _messages(lines, "Execute") == [
        ("info", "Execute-Specific Msg!"), ("info", "Execute-Info Msg!"),
        ("warning", "Execute-Warning Msg!"), ("error", "Execute-Error Msg!"),
        ("debug", "Execute-Verbose Msg!"),
        ("warning", "Execute-Warning Msg!"), ("error", "Execute-Error Msg!"),
    ]  # fmt: skip
    assert _messages(lines, "Finalize") == [("debug", "Finalize-Verbose Msg!")]
    # a long message is cut, saying how much more it had
    (long,) = [message for _, message in _messages(lines, "long ")]
    more = len("long ") + 100000 - stub_logs.MAX_TEXT_CHARS
    assert long.endswith(f"... ({more} characters more)")
    assert len(long) < stub_logs.MAX_TEXT_CHARS + 40


def test_a_record_keeps_within_its_bounds_whatever_it_carries() -> None:
    fields: dict[str, Any] = {f"field{n}": "é" * 20000 for n in range(100)}
    data = stub_logs.encode("info", {"event": "x" * 50000, **fields, "obj": object()})
    record = json.loads(data)
    assert len(data) <= stub_logs.MAX_RECORD_BYTES
    assert 0 < len(record["fields"]) <= stub_logs.MAX_FIELDS
    assert record["event"].endswith(f"({50000 - stub_logs.MAX_TEXT_CHARS} characters more)")


def _relay(rate: int = stub_logs.RELAY_RATE) -> tuple[stub_logs.Relay, Connection]:
    read, write = os.pipe()
    return stub_logs.Relay(read, "m", "m_0_0", rate=rate), Connection(write, readable=False)


def test_what_a_model_writes_on_the_pipe_itself_is_bounded(
    written: tuple[LogSettings, list[tuple[str, dict[str, Any]]]],
) -> None:
    _, lines = written
    relay, child = _relay()
    child.send_bytes(b"[[[[not json")
    child.send_bytes(json.dumps({
        "level": ["x"], "event": 5, "fields": {"a": [1], "timestamp": "t", "model": "x", "b": 2},
    }).encode())  # fmt: skip
    with contextlib.suppress(BrokenPipeError):  # the relay reads its length, and stops
        child.send_bytes(b"{" + b" " * stub_logs.MAX_RECORD_BYTES + b"}")
    relay.join(5)
    assert relay.wait_marked(0)  # a pipe that ends releases a load waiting for its mark
    events = [(method, fields) for method, fields in lines]
    assert events[0][0] == "warning" and events[0][1]["event"] == "python_stub_log_unreadable"
    assert events[1] == ("info", {"event": "5", "b": 2, "model": "m", "instance": "m_0_0"})
    assert events[2][1]["event"] == "python_stub_log_refused"
    assert len(events) == 3
    with pytest.raises(OSError):  # the relay stopped reading: the child's writes fail
        for _ in range(100):
            child.send_bytes(b"x" * 65536)
    child.close()


def test_a_mark_waits_for_the_records_before_it() -> None:
    relay, child = _relay()
    assert not relay.wait_marked(0)
    child.send_bytes(b'{"mark":true}')
    assert relay.wait_marked(5)
    child.close()
    relay.join(5)


def test_past_its_rate_the_relay_waits_for_the_next_second() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    rate = stub_logs._Rate(3, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        rate.take()
    now[0] += 0.25
    rate.take()  # the fourth in the same second
    assert slept == [0.75]
    now[0] += 5
    for _ in range(3):
        rate.take()  # a new second: no wait
    assert slept == [0.75]
