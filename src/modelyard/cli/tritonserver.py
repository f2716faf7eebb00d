"""``tritonserver``: ``modelyard serve`` under Triton's name, for scripts that start it.

A Triton user's scripts run ``tritonserver --model-repository=...`` and their clients
check that the server says it is Triton (``get_server_metadata()["name"] == "triton"``).
This command takes the same flags as ``modelyard serve`` (tritonserver's among them:
docs/triton-flags.md) with Triton's defaults where they differ: the server's name is
``triton`` (``--id`` still sets it), its metadata gives the version of Triton whose
behaviour modelyard follows, and a model that fails to load at start ends the server
(``--exit-on-error=false`` keeps it serving the others, and keeps a server whose model
repository cannot be read answering, not live and not ready, as Triton's). ``modelyard serve`` keeps
modelyard's name and version; the log's ``server_ready`` line names both.
"""

from __future__ import annotations

import argparse
import sys

from modelyard.cli.main import run_command
from modelyard.cli.serve_flags import add_serve_arguments

# the Triton release whose server, clients and QA suite modelyard is checked against
TRITON_VERSION = "2.51.0"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tritonserver", description="modelyard serve, answering as Triton Inference Server"
    )
    add_serve_arguments(parser)
    parser.set_defaults(
        id="triton", server_version=TRITON_VERSION, exit_on_error=True, as_tritonserver=True,
        log_format="default",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from modelyard.cli.serve import run_serve  # once the flags are read: errors answer at once

    return run_command(run_serve, args)


if __name__ == "__main__":
    sys.exit(main())
