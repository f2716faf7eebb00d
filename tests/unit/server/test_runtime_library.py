"""A config's ``runtime`` (the backend library Triton would load): modelyard's engines
stand in for a backend's own library; any other is refused, never opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelyard.errors import ModelyardError
from modelyard.server.model_version import _check_runtime


def test_runtime_libraries_are_looked_for_as_triton_looks_and_never_loaded(
    tmp_path: Path,
) -> None:
    version_dir = tmp_path / "m" / "1"
    version_dir.mkdir(parents=True)
    for standing_in in ("", "libtriton_identity.so", "model.py"):
        _check_runtime("m", standing_in, "identity", version_dir)  # the engine stands in
    (tmp_path / "m" / "libcustom.so").write_bytes(b"\x7fELF")
    (tmp_path / "outside.so").write_bytes(b"\x7fELF")
    for runtime, said in (
        ("libmissing.so", "unable to find backend library 'libmissing.so' for model 'm'"),
        ("../../outside.so", "backend library name '../../outside.so' escapes backend "
                             "directory"),
        ("libcustom.so", "backend library 'libcustom.so' for model 'm' is a C++ backend "
                         "library, which modelyard does not load"),
    ):  # fmt: skip
        with pytest.raises(ModelyardError) as refused:
            _check_runtime("m", runtime, "identity", version_dir)
        assert said in refused.value.line()
        assert "rule=config/backend; change: runtime in m/config.pbtxt" in refused.value.line()
