"""The command line answers help, argument errors and ``rules get`` without loading numpy,
the server or the clients: a command's module is imported only when it is the one asked
for, and each imports what it uses when it runs (bench/cli_startup.py times it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "modelyard.server", "modelyard.types", "aiohttp", "redis", "grpc", "uvicorn")

PROBE = """
import json, sys
from modelyard.cli.{command} import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = sorted({name.split(".")[0] if not name.startswith("modelyard") else name
                for name in sys.modules if name.startswith(HEAVY)})
print(json.dumps({"code": code, "heavy": heavy}))
"""


def loaded(*words: str, command: str = "main") -> tuple[int, list[str]]:
    probe = PROBE.replace("{command}", command)
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{probe}", *words],
        capture_output=True,
        text=True,
        timeout=60,
    )
    last = json.loads(done.stdout.strip().splitlines()[-1])
    return int(last["code"] or 0), last["heavy"]


@pytest.mark.parametrize(
    "words",
    [
        ["--help"],
        ["nope"],
        [],
        ["rules", "--help"],
        ["rules", "get"],  # missing the service: an argument error
        ["instances", "--help"],
        ["auth", "hash-key", "k"],
        ["serve", "--bogus"],
        ["serve", "--help"],
        ["serve", "--model-repository", "m", "--model-version", "m=latest"],
        ["gateway", "--bogus"],
        ["gateway", "--service", "s", "--interface-attempts", "infer"],
    ],
)
def test_help_and_argument_errors_load_nothing_heavy(words: list[str]) -> None:
    code, heavy = loaded(*words)
    assert code in (0, 2)
    assert heavy == []


def test_tritonservers_argument_errors_load_nothing_heavy() -> None:
    code, heavy = loaded("--model-repository", "m", "--allow-grpc", "maybe",
                         command="tritonserver")  # fmt: skip
    assert code == 2
    assert heavy == []


def test_rules_get_reads_a_revision_without_the_guards_or_clients(tmp_path: Path) -> None:
    (tmp_path / "registry.db").touch()
    registry = f"embedded://{tmp_path / 'registry.db'}"
    code, _ = loaded("rules", "set", "com.example.a", "limits.infer.instance_qps", "5",
                     "--registry", registry)  # fmt: skip
    assert code == 0
    code, heavy = loaded("rules", "get", "com.example.a", "--registry", registry)
    assert code == 0
    assert heavy == []
