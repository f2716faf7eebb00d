"""`modelyard serve --id`: the server's name in its metadata, as tritonserver's --id."""

from __future__ import annotations

from pathlib import Path

from modelyard.cli.main import build_parser
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ModelManager


def test_id_names_the_server_in_its_metadata(tmp_path: Path) -> None:
    manager = ModelManager(ModelRepository(tmp_path))
    args = build_parser().parse_args(["serve", "--model-repository", "models", "--id", "edge-7"])
    assert args.id == "edge-7"
    assert LocalDataPlane(manager, server_id=args.id).server_metadata()["name"] == "edge-7"
    default = build_parser().parse_args(["serve", "--model-repository", "models"])
    assert LocalDataPlane(manager, server_id=default.id).server_metadata()["name"] == "modelyard"


def test_tritonserver_answers_as_triton_with_tritons_defaults(tmp_path: Path) -> None:
    from modelyard import __version__
    from modelyard.cli.tritonserver import TRITON_VERSION
    from modelyard.cli.tritonserver import build_parser as tritonserver_parser

    manager = ModelManager(ModelRepository(tmp_path))
    args = tritonserver_parser().parse_args(["--model-repository", "models"])
    assert (args.id, args.server_version, args.exit_on_error) == ("triton", TRITON_VERSION, True)
    metadata = LocalDataPlane(
        manager, server_id=args.id, server_version=args.server_version
    ).server_metadata()
    assert (metadata["name"], metadata["version"]) == ("triton", TRITON_VERSION)
    own = tritonserver_parser().parse_args(
        ["--model-repository", "m", "--id=edge", "--exit-on-error=false"]
    )
    assert (own.id, own.exit_on_error) == ("edge", False)
    serve = build_parser().parse_args(["serve", "--model-repository", "models"])
    assert (serve.server_version, serve.exit_on_error) == (__version__, False)
