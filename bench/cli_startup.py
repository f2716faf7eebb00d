"""How long the command line takes to answer, start to exit, for the commands people type.

    python bench/cli_startup.py [--runs 10]

Each command runs ``--runs`` times as a fresh ``python -m modelyard.cli.main`` process
(what the ``modelyard`` script does), against an embedded registry made in a temporary
directory with one central revision; the report gives the median and the slowest run,
and which of the heavy packages (numpy, the server, the client's HTTP stack) each
command imported (``python -X importtime``). Targets (issue 42, on an idle machine):
``--help`` at most 0.3 s, ``rules get`` at most 1.5 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "modelyard.server", "aiohttp", "redis", "grpc", "pydantic")
SERVICE = "com.example.bench"


def commands(registry: str) -> list[tuple[str, list[str]]]:
    return [
        ("--help", ["--help"]),
        ("unknown command", ["nope"]),
        ("rules --help", ["rules", "--help"]),
        ("rules get", ["rules", "get", SERVICE, "--registry", registry]),
        (
            "rules set",
            ["rules", "set", SERVICE, "limits.infer.instance_qps", "7", "--registry", registry],
        ),
        ("instances", ["instances", SERVICE, "--registry", registry]),
        ("serve --bogus", ["serve", "--bogus"]),
        ("gateway --bogus", ["gateway", "--bogus"]),
    ]


def run(words: list[str], env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", *words],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started, done.returncode


def imported(words: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "modelyard.cli.main", *words],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    return [h for h in HEAVY if any(n == h or n.startswith(h + ".") for n in names)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "registry.db").touch()
        registry = f"embedded://{Path(tmp) / 'registry.db'}"
        first = ["rules", "set", SERVICE, "limits.infer.instance_qps", "5", "--registry", registry]
        subprocess.run([sys.executable, "-m", "modelyard.cli.main", *first], env=env,
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        load = os.getloadavg()[0]
        print(f"# Python {platform.python_version()}, {os.cpu_count()} cores, load {load:.2f}")
        print(f"# {args.runs} runs of each")
        print(f"{'command':<18} {'median s':>9} {'max s':>7}  heavy imports")
        for name, words in commands(registry):
            times = [run(words, env)[0] for _ in range(args.runs)]
            heavy = ", ".join(imported(words, env)) or "none"
            print(f"{name:<18} {statistics.median(times):>9.3f} {max(times):>7.3f}  {heavy}")


if __name__ == "__main__":
    main()
