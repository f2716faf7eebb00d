"""A request body (or part of one) that must be a JSON object, refused in its layer's words."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson


def json_object(text: bytes | str, what: str, refuse: Callable[[str], Exception]) -> dict[str, Any]:
    """``text`` parsed, when it is a JSON object; else the error ``refuse`` makes of the detail."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise refuse(f"malformed JSON in {what}: {exc}") from None
    if not isinstance(doc, dict):
        raise refuse(f"{what} must be a JSON object")
    return doc
