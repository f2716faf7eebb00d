"""YAML documents that remember the line of every key, for file:line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from modelyard.errors import Code, ConfigError

Path_ = tuple[str | int, ...]


class LocatedDocument:
    """A parsed YAML mapping plus ``line(path)`` for any key path in it."""

    def __init__(
        self, data: Any, lines: dict[Path_, int], filename: str, rule: str = "config/service-file"
    ) -> None:
        self.data = data
        self.lines = lines
        self.filename = filename
        self.rule = rule  # what kind of file: the rule its errors name

    def line(self, path: Path_) -> int:
        """The line of ``path``, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 1

    def where(self, path: Path_) -> str:
        return f"{self.filename}:{self.line(path)}"

    def error(self, path: Path_, detail: str, rule: str | None = None) -> ConfigError:
        dotted = ".".join(str(p) for p in path)
        return ConfigError(
            f"invalid {self.filename}:{self.line(path)}"
            + (f" at {dotted}" if dotted else "")
            + f": {detail}",
            code=Code.INVALID_ARGUMENT,
            rule=rule or self.rule,
            where=f"fix {self.where(path)}",
        )


def _build(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node) if key_node.tag else key_node.value
            key = str(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, (*path, key), lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    """A node's value as safe_load reads it; an empty one (``key:``) is None."""
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def read_text(path: Path, rule: str, where: str) -> str:
    """A config file's text, or its error line (``rule``; ``where`` names the flag)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read {path}: {exc}", code=Code.INVALID_ARGUMENT, rule=rule, where=where
        ) from None


def load_located(text: str, filename: str, rule: str = "config/service-file") -> LocatedDocument:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError(
            f"invalid {filename}:{line}: not valid YAML: {getattr(exc, 'problem', exc)}",
            code=Code.INVALID_ARGUMENT,
            rule=rule,
            where=f"fix {filename}:{line}",
        ) from None
    lines: dict[Path_, int] = {}
    data = _build(node, (), lines) if node is not None else {}
    return LocatedDocument(data, lines, filename, rule)
