"""The launcher's overlay repository: the base repository with one model pinned to a version."""

from __future__ import annotations

from pathlib import Path

from modelyard.control.launcher import LocalLauncher
from modelyard.modelfiles.config import parse_model_config


def test_a_pinned_model_serves_only_that_version_with_or_without_a_config(tmp_path: Path) -> None:
    base = tmp_path / "models"
    for version in ("1", "2"):
        (base / "with_config" / version).mkdir(parents=True)
        (base / "with_config" / version / "model.onnx").write_bytes(b"onnx")
        (base / "bare" / version).mkdir(parents=True)  # an ONNX model needs no config.pbtxt
        (base / "bare" / version / "model.onnx").write_bytes(b"onnx")
    (base / "with_config" / "config.pbtxt").write_text(
        'platform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
        "version_policy { latest { num_versions: 2 } }\n"
    )
    (base / "other").mkdir()
    launcher = LocalLauncher(tmp_path / "state", "embedded", base)

    assert launcher.repository_for({}) == base
    overlay = launcher.repository_for({"with_config": "1", "bare": "2"})
    pinned = parse_model_config((overlay / "with_config" / "config.pbtxt").read_text())
    assert pinned.max_batch_size == 8
    assert list(pinned.version_policy.specific.versions) == [1]
    bare = parse_model_config((overlay / "bare" / "config.pbtxt").read_text())
    assert list(bare.version_policy.specific.versions) == [2]
    assert (overlay / "bare" / "2" / "model.onnx").read_bytes() == b"onnx"
    assert (overlay / "other").resolve() == (base / "other").resolve()
    assert not (base / "bare" / "config.pbtxt").exists()  # the base repository is untouched
