"""Triton's start-up tables, written where the server answers as ``tritonserver``.

Triton writes four tables when it starts, each an info record of its own, not escaped
(the server made every cell): the repository agents, the backends with their settings,
each model version with its state (``READY``, or ``UNAVAILABLE: <why>``) and the
server's options. Operators read them and scripts grep them (``| simple | 1 | READY |``),
so they are written as Triton lays them out: each column as wide as its widest cell,
within a fair share of the terminal (500 characters where the output is no terminal),
longer cells wrapped.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

import structlog

from modelyard.logging import SETTINGS

log = structlog.get_logger(__name__)

_NO_TERMINAL_COLUMNS = 500
# but for line breaks (a cell's lines stay inside its column), a cell's control
# characters are escaped: no line of a table starts a record
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def table_text(headers: Sequence[str], rows: Sequence[Sequence[str]], columns: int = 0) -> str:
    """The table as Triton prints it (a leading line break, dividers of ``+`` and ``-``,
    cells padded between ``| `` and `` |``), fitted to ``columns`` (0: the terminal's)."""
    count = len(headers)
    cells = [[_CONTROL.sub(_escaped, str(cell)).split("\n") for cell in row]
             for row in [headers, *rows]]  # fmt: skip
    widest = [max(len(line) for row in cells for line in row[i]) for i in range(count)]
    widths = _fair_shares(widest, columns or _terminal_columns())
    fitted = [[_wrapped(cell, widths[i]) for i, cell in enumerate(row)] for row in cells]
    divider = "+" + "".join("-" * (width + 2) + "+" for width in widths) + "\n"
    lines = ["\n", divider, *_row_lines(fitted[0], widths), divider]
    for row in fitted[1:]:
        lines += _row_lines(row, widths)
    lines.append(divider)
    return "".join(lines)


def write_table(event: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """One table as its info record (only where the log writes Triton's records)."""
    if SETTINGS.triton_records:
        log.info(event, triton_table=table_text(headers, rows))


def write_startup_tables(
    agents: Sequence[tuple[str, str]],
    backends: Sequence[tuple[str, str, str]],
    index: Sequence[dict[str, Any]],
    options: Sequence[tuple[str, str]],
) -> None:
    """Triton's four tables once the models of the start have loaded: the repository
    agents and the backends started (name, file, settings), each model version of the
    repository index a load reached with its state, and the server's options."""
    write_table("repository_agents", ("Repository Agent", "Path"), agents)
    write_table("backends", ("Backend", "Path", "Config"), backends)
    models = []
    for row in index:
        if "state" not in row:  # never asked to load (explicit mode): not in Triton's table
            continue
        state = f"{row['state']}: {row['reason']}" if row.get("reason") else row["state"]
        models.append((row["name"], row.get("version", "-"), state))
    write_table("models", ("Model", "Version", "Status"), models)
    write_table("options", ("Option", "Value"), options)


def _escaped(control: re.Match[str]) -> str:
    return json.dumps(control.group())[1:-1]


def _terminal_columns() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns or _NO_TERMINAL_COLUMNS
    except (OSError, ValueError):
        return _NO_TERMINAL_COLUMNS


def _fair_shares(widest: list[int], columns: int) -> list[int]:
    """Each column's width: an equal share of what the borders leave; a column that
    needs less gives the rest to the wider ones, the narrowest column first."""
    count = len(widest)
    room = max(columns - (3 * count + 1), count)
    shares = [float(room // count)] * count
    order = sorted(range(count), key=lambda i: widest[i])
    for place, column in enumerate(order):
        excess = shares[column] - widest[column]
        later = order[place + 1 :]
        if excess > 0:
            shares[column] = widest[column]
            for other in later:
                shares[other] += excess / len(later)
    return [max(int(share), 1) for share in shares]


def _wrapped(lines: list[str], width: int) -> list[str]:
    pieces: list[str] = []
    for line in lines:
        pieces += [line[start : start + width] for start in range(0, len(line), width)] or [""]
    return pieces


def _row_lines(row: list[list[str]], widths: list[int]) -> list[str]:
    height = max(len(cell) for cell in row)
    lines = []
    for index in range(height):
        texts = [cell[index] if index < len(cell) else "" for cell in row]
        lines.append("|" + "".join(f" {t:<{w}} |" for t, w in zip(texts, widths, strict=True)))
    return [line + "\n" for line in lines]
