"""The booleans Triton reads, on its command line and in its backends' parameters (a
module of its own: the command line's startup imports nothing heavy)."""

from __future__ import annotations

_TRUE_WORDS = frozenset(("true", "on", "1", "yes"))
_FALSE_WORDS = frozenset(("false", "off", "0", "no"))


def triton_bool_value(text: str) -> bool | None:
    """A boolean as Triton reads one (true/on/1/yes, false/off/0/no); None: not one."""
    value = text.strip().lower()
    return True if value in _TRUE_WORDS else False if value in _FALSE_WORDS else None
