"""Structured logging: one event per line, console, JSON or Triton's records; Triton's
log settings, live.

``SETTINGS`` holds what is logged, as Triton's logging extension names it: info,
warnings and errors are switched on and off each on its own, debug events follow
``log_verbose_level`` > 0, and the format is modelyard's console line, JSON, or, where
the server was started with Triton's formats (``--log-format default`` or ``ISO8601``,
``tritonserver``'s default), Triton's record lines::

    I1207 18:06:30.834780 1234 manager.py:123] "successfully loaded 'simple'"
    2026-12-07T18:06:30Z I 1234 manager.py:123] "successfully loaded 'simple'"

whose message is an event's Triton text (else the event and its fields) as a JSON
string; with ``TRITON_SERVER_ESCAPE_LOG_MESSAGES=0`` as written, as Triton writes it
(the operator's choice, warned at start: a caller's line breaks then start records).
It is a processor of every logger, so a change through ``GET``/``POST /v2/logging`` or
gRPC ``LogSettings`` applies at once, also to loggers already in use. The file is
chosen at start (``--log-file``): a request never names a path.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from modelyard import error_rules
from modelyard.errors import ProtocolError

_ORDER = ("debug", "info", "warning", "error", "critical")
TRITON_FORMATS = ("default", "ISO8601")
_LETTERS = {"warning": "W", "error": "E", "critical": "E", "exception": "E"}  # else I
_SOURCE = re.compile(r"[\w.\-]{1,200}:\d{1,9}")  # file:line
# the frames of the logging machinery, passed over for the call site a record names
_MACHINERY = ("structlog", f"{os.sep}logging{os.sep}", f"modelyard{os.sep}logging.py")
_FORMATS = ("default", "ISO8601", "json")
# the names Triton's logging documentation answers with; its server reads the singular ones
_ALIASES = {"log_warnings": "log_warning", "log_errors": "log_error"}


def _bad_setting(detail: str) -> ProtocolError:
    return ProtocolError.of(error_rules.LOG_SETTINGS, detail)


class LogSettings:
    """What is logged and how; a structlog processor that drops the events switched off."""

    def __init__(self) -> None:
        self.info = True
        self.warnings = True
        self.errors = True
        self.verbose = 0
        self.format = "default"
        # started with Triton's formats: default and ISO8601 are Triton's record lines
        self.triton_records = False
        self.escape = True  # TRITON_SERVER_ESCAPE_LOG_MESSAGES
        self.file: Path | None = None
        self._console = structlog.dev.ConsoleRenderer(colors=False)
        self._json = structlog.processors.JSONRenderer()

    def from_level(self, level: str) -> None:
        """Every level from ``level`` up on, as ``--log-level`` says it."""
        name = level.lower()
        if name == "warn":
            name = "warning"
        if name not in _ORDER:
            raise ValueError(f"unknown log level {level!r} (one of {', '.join(_ORDER)})")
        on = set(_ORDER[_ORDER.index(name) :])
        self.verbose = 1 if "debug" in on else 0
        self.info, self.warnings, self.errors = "info" in on, "warning" in on, "error" in on

    def as_triton(self) -> dict[str, Any]:
        """The settings as Triton's logging extension answers them."""
        return {
            "log_file": str(self.file) if self.file is not None else "",
            "log_info": self.info,
            "log_warning": self.warnings,
            "log_error": self.errors,
            "log_verbose_level": self.verbose,
            "log_format": self.format,
        }

    def update(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Apply the settings given (Triton's names; ``log_warnings`` and ``log_errors``,
        the names of Triton's documentation, too), all or none; the settings after."""
        changes: dict[str, Any] = {}
        for given, value in settings.items():
            name = _ALIASES.get(given, given)
            if name in ("log_info", "log_warning", "log_error"):
                if not isinstance(value, bool):
                    raise _bad_setting(f"{name} must be true or false, got {value!r:.40}")
            elif name == "log_verbose_level":
                if type(value) is not int or value < 0:
                    raise _bad_setting(
                        f"log_verbose_level must be an integer >= 0, got {value!r:.40}"
                    )
            elif name == "log_format":
                if value not in _FORMATS:
                    raise _bad_setting(
                        f"log_format must be default, ISO8601 or json, got {value!r:.40}"
                    )
            elif name == "log_file":  # as Triton: any request that names it, even as it is
                raise ProtocolError.of(  # Triton's words lead: its clients match them
                    error_rules.LOG_FILE,
                    "log file location can not be updated through network protocol "
                    "(a request never names a path)",
                    triton=True,
                )
            else:
                raise _bad_setting(f"unknown log setting {name!r:.60}")
            changes[name] = value
        self.info = changes.get("log_info", self.info)
        self.warnings = changes.get("log_warning", self.warnings)
        self.errors = changes.get("log_error", self.errors)
        self.verbose = changes.get("log_verbose_level", self.verbose)
        self.format = changes.get("log_format", self.format)
        return self.as_triton()

    def __call__(
        self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if method_name in ("error", "exception", "critical"):
            on = self.errors or method_name == "critical"
        elif method_name in ("warning", "warn"):
            on = self.warnings
        elif method_name == "info":
            on = self.info
        else:
            on = self.verbose > 0
        if not on:
            raise structlog.DropEvent
        return event_dict

    def render(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> str:
        if self.format == "json":
            return str(self._json(logger, method_name, event_dict))
        if self.triton_records:
            return self._triton_record(method_name, event_dict)
        return str(self._console(logger, method_name, event_dict))

    def _field(self, key: str, value: object) -> str:
        """``key=value`` of a record's message: a text as it came where messages are not
        escaped, else its repr."""
        shown = value if isinstance(value, str) and not self.escape else repr(value)
        return f"{key}={shown}"

    def _triton_record(self, method_name: str, event_dict: MutableMapping[str, Any]) -> str:
        """The event as Triton's log writes a record (its format, level, pid, call site)."""
        fields = dict(event_dict)
        level = str(fields.pop("level", method_name))
        fields.pop("timestamp", None)
        now = datetime.now(UTC)
        event = str(fields.pop("event", ""))
        triton = fields.pop("triton", None)
        trace = fields.pop("exception", None)
        table = fields.pop("triton_table", None)  # the server's own cells: not escaped
        if table is not None:
            message = str(table)
        elif triton is not None:
            message = str(triton)
        else:
            message = " ".join([event, *(self._field(k, v) for k, v in fields.items())])
        if trace:
            message = f"{message}\n{trace}"
        if self.escape and table is None:
            message = json.dumps(message, ensure_ascii=False)
        letter = _LETTERS.get(level, "I")
        if self.format == "ISO8601":
            head = now.strftime(f"%Y-%m-%dT%H:%M:%SZ {letter}")
        else:
            head = now.strftime(f"{letter}%m%d %H:%M:%S.%f")
        source = fields.get("source")  # a model's record: the model's own call site
        where = source if isinstance(source, str) and _SOURCE.fullmatch(source) else None
        return f"{head} {os.getpid()} {where or _call_site()}] {message}"


SETTINGS = LogSettings()


def _call_site() -> str:
    """``file:line`` of the code that logged (the first frame outside logging)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and any(
        part in frame.f_code.co_filename for part in _MACHINERY
    ):
        frame = frame.f_back
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _escaping_from_environment() -> bool:
    """Triton's ``TRITON_SERVER_ESCAPE_LOG_MESSAGES`` (on unless 0 or false)."""
    value = os.environ.get("TRITON_SERVER_ESCAPE_LOG_MESSAGES", "1").strip().lower()
    return value not in ("0", "false", "off", "no")


def configure_logging(fmt: str = "console", level: str = "info", file: Path | None = None) -> None:
    """Where and how events are written: stderr, or appended to ``file``."""
    SETTINGS.from_level(level)
    SETTINGS.triton_records = fmt in TRITON_FORMATS
    SETTINGS.format = fmt if fmt in TRITON_FORMATS else "json" if fmt == "json" else "default"
    SETTINGS.escape = _escaping_from_environment()
    SETTINGS.file = file
    sink: TextIO = sys.stderr if file is None else file.open("a", buffering=1)
    structlog.configure(
        processors=[
            SETTINGS,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            SETTINGS.render,
        ],
        # every level reaches SETTINGS, which decides: its switches change while serving
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=structlog.PrintLoggerFactory(sink),
        cache_logger_on_first_use=True,
    )
    if SETTINGS.triton_records and not SETTINGS.escape:
        structlog.get_logger("modelyard.logging").warning(
            "log_messages_unescaped",
            triton="TRITON_SERVER_ESCAPE_LOG_MESSAGES is off: messages are written as they "
            "came, so a caller's line breaks in a name or value start records of their own",
        )
