"""`modelyard serve --id`: the server's name in its metadata, as tritonserver's --id."""

from __future__ import annotations

from modelyard.cli.main import build_parser
from modelyard.server.dataplane import LocalDataPlane


def test_id_names_the_server_in_its_metadata() -> None:
    args = build_parser().parse_args(["serve", "--model-repository", "models", "--id", "edge-7"])
    assert args.id == "edge-7"
    assert LocalDataPlane(None, server_id=args.id).server_metadata()["name"] == "edge-7"  # type: ignore[arg-type]
    default = build_parser().parse_args(["serve", "--model-repository", "models"])
    assert LocalDataPlane(None, server_id=default.id).server_metadata()["name"] == "modelyard"  # type: ignore[arg-type]
