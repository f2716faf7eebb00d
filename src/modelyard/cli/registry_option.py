"""The ``--registry`` flag of the commands that read or write the registry."""

from __future__ import annotations

import argparse

from modelyard.discovery import DEFAULT_REGISTRY_URL, REGISTRY_URL_FORMS


def add_registry_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry", default=DEFAULT_REGISTRY_URL, metavar="URL", help=REGISTRY_URL_FORMS
    )
