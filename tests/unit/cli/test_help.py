"""Every command and subcommand prints its help: a stray % in a help text broke one."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from modelyard.cli.main import build_parser


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from parsers(child)


def test_every_command_prints_its_help() -> None:
    names = []
    for parser in parsers(build_parser()):
        text = parser.format_help()
        assert text.startswith("usage: ")
        names.append(parser.prog)
    assert "modelyard platform release promote" in names
    assert len(names) > 20
