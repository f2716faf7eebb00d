"""Triton's log settings: independent switches, validated all or none, applied live."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import structlog

from modelyard.errors import ProtocolError
from modelyard.logging import SETTINGS, LogSettings, configure_logging


def logged(settings: LogSettings, method: str) -> bool:
    try:
        settings(None, method, {"event": "x"})
    except structlog.DropEvent:
        return False
    return True


def test_a_level_turns_on_itself_and_every_level_above() -> None:
    settings = LogSettings()
    settings.from_level("warning")
    assert [logged(settings, m) for m in ("debug", "info", "warning", "error")] == [
        False, False, True, True,
    ]  # fmt: skip
    assert settings.as_triton()["log_verbose_level"] == 0
    settings.from_level("debug")
    assert logged(settings, "debug") and settings.as_triton()["log_verbose_level"] == 1


def test_triton_switches_are_independent_and_apply_at_once() -> None:
    settings = LogSettings()
    after = settings.update({"log_info": False, "log_verbose_level": 2, "log_format": "ISO8601"})
    assert after == {
        "log_file": "",
        "log_info": False,
        "log_warning": True,
        "log_error": True,
        "log_verbose_level": 2,
        "log_format": "ISO8601",
    }
    assert not logged(settings, "info") and logged(settings, "debug")
    assert logged(settings, "warning")
    settings.update({"log_error": False})
    assert not logged(settings, "error") and logged(settings, "critical")


def test_the_documentation_s_plural_names_are_triton_s_singular_ones() -> None:
    """Triton's server reads log_warning and log_error; its documentation's example
    answers log_warnings and log_errors: either name changes the one switch."""
    settings = LogSettings()
    after = settings.update({"log_warnings": False, "log_errors": False})
    assert after["log_warning"] is False and after["log_error"] is False
    assert "log_warnings" not in after and not logged(settings, "warning")


@pytest.mark.parametrize(
    "change",
    [
        {"log_info": "yes"},
        {"log_verbose_level": -1},
        {"log_verbose_level": True},
        {"log_format": "xml"},
        {"log_colour": True},
        {"log_info": False, "log_file": "/etc/passwd"},  # no path from a request
        {"log_file": None},  # as Triton: a request that names it at all
    ],
)
def test_a_bad_setting_is_refused_and_nothing_changes(change: dict[str, object]) -> None:
    settings = LogSettings()
    before = settings.as_triton()
    with pytest.raises(ProtocolError) as refused:
        settings.update(change)
    assert "rule=protocol/log-settings" in refused.value.line()
    assert settings.as_triton() == before


def test_the_log_file_given_at_start_is_reported_and_a_request_naming_it_refused(
    tmp_path: Path,
) -> None:
    settings = LogSettings()
    settings.file = tmp_path / "server.log"
    assert settings.as_triton()["log_file"] == str(tmp_path / "server.log")
    with pytest.raises(ProtocolError):  # as Triton: even the file it writes
        settings.update({"log_file": str(tmp_path / "server.log")})


def test_a_log_file_from_a_request_is_refused_in_tritons_words_first() -> None:
    with pytest.raises(ProtocolError) as refused:
        LogSettings().update({"log_file": "other_log.log"})
    line = refused.value.line()
    assert line.startswith("log file location can not be updated through network protocol")
    assert "rule=protocol/log-settings" in line and "change: " in line


def _records(
    capsys: pytest.CaptureFixture[str], fmt: str, monkeypatch: pytest.MonkeyPatch,
    escape: str = "1",
) -> list[str]:
    monkeypatch.setenv("TRITON_SERVER_ESCAPE_LOG_MESSAGES", escape)
    before = structlog.get_config()
    settings = vars(SETTINGS).copy()
    configure_logging(fmt, "debug")  # to stderr, as captured
    try:
        log = structlog.get_logger("test")
        log.info("model_loaded", model="simple", triton="successfully loaded 'simple'")
        log.debug("config", triton='backend configuration:\n{"cmdline":{}}')
        log.warning("refused", detail="unexpected inference input '\nI0205 18:34:18.707423 1 "
                    'file.cc:123] "THIS ENTRY WAS INJECTED"\x1b[31m\'')  # fmt: skip
        log.error("input_refused", triton="unknown input '\nI0205 forged\x07'")
        log.info("python_model_log", triton="from a model", source="model.py:12")
        log.info("python_model_log", triton="forged site", source="../x] I0205:1")
    finally:  # the other tests' logging as it was (this stream closes with the test)
        structlog.reset_defaults()
        structlog.configure(**before)
        vars(SETTINGS).update(settings)
    return capsys.readouterr().err.splitlines()


DEFAULT_RECORD = re.compile(r"^[IWE]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} \d+ [\w.]+:\d+\] (.*)$")
ISO8601_RECORD = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z [IWE] \d+ [\w.]+:\d+\] (.*)$")


def test_tritons_formats_write_tritons_records_one_line_each(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for fmt, record in (("default", DEFAULT_RECORD), ("ISO8601", ISO8601_RECORD)):
        lines = _records(capsys, fmt, monkeypatch)
        assert len(lines) == 6, lines  # a caller's line break starts no record
        messages = [json.loads(record.fullmatch(line)[1]) for line in lines]  # type: ignore[index]
        assert messages[0] == "successfully loaded 'simple'"  # the event's Triton text
        assert messages[1] == 'backend configuration:\n{"cmdline":{}}'
        assert messages[2].startswith("refused detail=")  # else the event and its fields
        letters = [line.split(" ")[1] if fmt == "ISO8601" else line[0] for line in lines]
        assert letters == ["I", "I", "W", "E", "I", "I"]
        assert "model.py:12] " in lines[4]  # a model's record at its own line
        assert "test_logging.py:" in lines[5]  # a source that is no file:line is not taken
        assert "test_logging.py:" in lines[0]  # the call site


def test_unescaped_messages_are_written_as_they_came_after_a_warning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _records(capsys, "default", monkeypatch, escape="0")
    assert "TRITON_SERVER_ESCAPE_LOG_MESSAGES is off" in lines[0]  # the operator is told
    assert lines[0].startswith("W")
    assert DEFAULT_RECORD.fullmatch(lines[1])[1] == "successfully loaded 'simple'"  # type: ignore[index]
    # as Triton writes it: the caller's line break starts a line the record did not
    assert "I0205 forged\x07'" in lines
    assert 'I0205 18:34:18.707423 1 file.cc:123] "THIS ENTRY WAS INJECTED"\x1b[31m\'' in lines
