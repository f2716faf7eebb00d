"""`modelyard serve --id`: the server's name in its metadata, as tritonserver's --id."""

from __future__ import annotations

from pathlib import Path

from modelyard.cli.main import build_parser
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.dataplane import LocalDataPlane
from modelyard.server.manager import ModelManager


def test_id_names_the_server_in_its_metadata(tmp_path: Path) -> None:
    manager = ModelManager(ModelRepository(tmp_path))
    args = build_parser().parse_args(["serve", "--model-repository", "models", "--id", "edge-7"])
    assert args.id == "edge-7"
    assert LocalDataPlane(manager, server_id=args.id).server_metadata()["name"] == "edge-7"
    default = build_parser().parse_args(["serve", "--model-repository", "models"])
    assert LocalDataPlane(manager, server_id=default.id).server_metadata()["name"] == "modelyard"
