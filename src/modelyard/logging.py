"""Structured logging: one event per line, console or JSON."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import structlog


def configure_logging(fmt: str = "console", level: str = "info", file: Path | None = None) -> None:
    """Where and how events are written: stderr, or appended to ``file``."""
    renderer: structlog.types.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(
            sys.stderr if file is None else file.open("a", buffering=1)
        ),
        cache_logger_on_first_use=True,
    )
