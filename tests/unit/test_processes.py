"""``serve_command`` and ``serve_arguments``: the one builder of ``modelyard serve``'s flags."""

from __future__ import annotations

import sys
from pathlib import Path

from modelyard.cli.main import build_parser
from modelyard.cli.serve_settings import serve_settings
from modelyard.processes import serve_arguments, serve_command


def test_a_serve_command_parses_as_the_cli_reads_it(tmp_path: Path) -> None:
    command = serve_command(
        tmp_path,
        http_port=8123,
        grpc_port=8124,
        model_control_mode="explicit",
        load_model=["a", "b"],
        weight=2.5,
        weight_file=tmp_path / "weight",
        trusted_repository=True,
    )
    assert command[:4] == [sys.executable, "-m", "modelyard.cli.main", "serve"]
    args = build_parser().parse_args(command[3:])
    assert args.model_repository == [tmp_path]
    assert (args.http_port, args.grpc_port, args.metrics_port) == (8123, 8124, -1)
    assert args.model_control_mode == "explicit" and args.load_model == ["a", "b"]
    assert args.weight == 2.5 and args.weight_file == tmp_path / "weight"
    assert args.trusted_repository is True


def test_a_serve_command_may_run_another_installation(tmp_path: Path) -> None:
    """An A/B of two installations starts each one's own interpreter, never a flag of it."""
    other = tmp_path / "venv-b" / "bin" / "python"
    command = serve_command(tmp_path, http_port=8123, python=other, model_version=["m=2"])
    assert command[:4] == [str(other), "-m", "modelyard.cli.main", "serve"]
    assert "--python" not in command
    assert build_parser().parse_args(command[3:]).model_version == [("m", 2)]


def test_the_serve_flags_are_the_command_s_for_a_server_in_this_process(tmp_path: Path) -> None:
    """One builder: a server started in process reads the same flags as the child."""
    flags = serve_arguments(tmp_path, http_port=8123, metrics_port=8125, load_model=["a"])
    assert serve_command(tmp_path, http_port=8123, metrics_port=8125, load_model=["a"])[4:] == flags
    settings = serve_settings(flags)
    assert (settings.http.port, settings.grpc.port, settings.metrics.port) == (8123, -1, 8125)
    assert settings.models.repositories == (tmp_path,)
    assert settings.models.startup_models == ("a",)
