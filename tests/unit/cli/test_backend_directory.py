"""tritonserver's --backend-directory: where Python-based backends are (applied, not only
accepted)."""

from __future__ import annotations

from pathlib import Path

from modelyard.cli.main import build_parser
from modelyard.cli.serve_settings import instance_settings


def test_the_backend_directory_reaches_the_model_settings(tmp_path: Path) -> None:
    def settings(*flags: str) -> object:
        args = build_parser().parse_args(["serve", "--model-repository", str(tmp_path), *flags])
        return instance_settings(args)

    given = settings(f"--backend-directory={tmp_path / 'backends'}")
    assert given.models.backend_directory == tmp_path / "backends"  # type: ignore[attr-defined]
    assert "--backend-directory" not in dict(given.not_applied)  # type: ignore[attr-defined]
    assert settings().models.backend_directory is None  # type: ignore[attr-defined]
