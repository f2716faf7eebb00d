"""A command that reads or changes a registry refuses an embedded file that is not there,
instead of making a new, empty registry where no instance reads, and names the registries
it found nearby (the demo's)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from modelyard.discovery import require_registry
from modelyard.errors import ConfigError


def make_registry(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE t (x)")
    return path


def test_a_missing_embedded_file_is_refused_with_the_registries_nearby(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = make_registry(tmp_path / "modelyard-demo" / "registry.db")
    (tmp_path / "notes.db").write_text("not sqlite")  # a file named .db is not a registry
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "elsewhere" / "modelyard-demo" / "registry.db"
    with pytest.raises(ConfigError) as refused:
        require_registry(f"embedded://{missing}")
    line = refused.value.line()
    assert f"no registry at {missing}" in line
    assert f"embedded://{demo}" in line and "notes.db" not in line
    assert "rule=discovery/registry-missing" in line and "platform up" in line
    assert not missing.exists() and not missing.parent.exists()


def test_an_existing_file_and_etcd_pass(tmp_path: Path) -> None:
    require_registry(f"embedded://{make_registry(tmp_path / 'registry.db')}")
    require_registry("etcd://127.0.0.1:2379")  # a server: whether it answers is the call's


@pytest.mark.parametrize(
    "words",
    [
        ["rules", "set", "com.example.a", "limits.infer.instance_qps", "500"],
        ["rules", "get", "com.example.a"],
        ["instances", "com.example.a"],
    ],
)
def test_the_commands_exit_1_with_the_line_and_make_no_file(
    words: list[str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo" / "registry.db"
    done = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", *words, "--registry", f"embedded://{missing}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done
    assert f"no registry at {missing}" in done.stderr and "Traceback" not in done.stderr
    assert not missing.parent.exists()
