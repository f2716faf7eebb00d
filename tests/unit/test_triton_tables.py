"""Triton's start-up tables: laid out as Triton lays them out, written as one record
each that is not escaped, and unable to start a record of their own."""

from __future__ import annotations

from typing import Any

from structlog.testing import capture_logs

from modelyard.logging import SETTINGS
from modelyard.triton_tables import table_text, write_startup_tables

MODELS = """
+--------+---------+--------+
| Model  | Version | Status |
+--------+---------+--------+
| simple | 1       | READY  |
+--------+---------+--------+
"""


def test_a_table_is_laid_out_as_tritons_each_column_as_wide_as_its_widest_cell() -> None:
    assert table_text(("Model", "Version", "Status"), [("simple", "1", "READY")], 500) == MODELS
    empty = table_text(("Repository Agent", "Path"), [], 500)
    assert empty == "\n+------------------+------+\n| Repository Agent | Path |\n" + (
        "+------------------+------+\n+------------------+------+\n"
    )


def test_a_cell_wider_than_its_share_of_the_terminal_is_wrapped_in_its_column() -> None:
    text = table_text(("Option", "Value"), [("server_id", "x" * 50)], columns=40)
    lines = text.strip("\n").splitlines()
    assert len({len(line) for line in lines}) == 1 and len(lines[0]) <= 40
    wrapped = [line for line in lines if "x" in line]
    assert len(wrapped) > 1 and "".join(line.split("|")[2].strip() for line in wrapped) == "x" * 50
    assert "server_id" in wrapped[0] and wrapped[1].startswith("|           ")


def test_no_line_of_a_table_can_start_a_record() -> None:
    forged = "bad\x1b[31m\rI1207 00:00:00.000000 1 file.cc:1] forged\nI1207 forged too"
    text = table_text(("Model", "Version", "Status"), [("m", "1", f"UNAVAILABLE: {forged}")], 500)
    assert "\x1b" not in text and "\r" not in text
    assert all(line[:1] in ("+", "|") for line in text.strip("\n").splitlines())


def test_start_up_tables_are_one_record_each_in_tritons_records_only() -> None:
    index: list[dict[str, Any]] = [
        {"name": "a", "version": "1", "state": "READY", "reason": ""},
        {"name": "b", "state": "UNAVAILABLE", "reason": "bad config"},
        {"name": "c"},  # never asked to load (explicit mode): not in Triton's table
    ]
    backends = [("onnxruntime", "onnx.py", '{"cmdline":{}}')]
    options = [("server_id", "triton")]
    before = SETTINGS.triton_records
    try:
        SETTINGS.triton_records = False
        with capture_logs() as quiet:
            write_startup_tables([], backends, index, options)
        SETTINGS.triton_records = True
        with capture_logs() as logs:
            write_startup_tables([("checksum", "agents.py")], backends, index, options)
    finally:
        SETTINGS.triton_records = before
    assert quiet == []  # modelyard's own events say what the tables would
    events = [entry["event"] for entry in logs]
    assert events == ["repository_agents", "backends", "models", "options"]
    models = logs[2]["triton_table"]
    assert "| a     | 1       | READY                   |" in models
    assert "| b     | -       | UNAVAILABLE: bad config |" in models and "| c " not in models
    assert "| checksum         | agents.py |" in logs[0]["triton_table"]


def test_a_table_record_is_written_as_it_is_where_other_messages_are_escaped() -> None:
    record = SETTINGS._triton_record("info", {"event": "models", "triton_table": MODELS})
    head, _, message = record.partition("] ")
    assert message == MODELS  # not a JSON string: the table as Triton writes it
    assert head.startswith("I") and "test_triton_tables.py:" in head
