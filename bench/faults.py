"""Each fault under steady load through ``platform up`` with real etcd and Redis (issue 42).

    python bench/faults.py [--seconds 60] [--fault-at 15] [--only "gateway SIGKILL" ...]

One platform (etcd, Redis with the service's cluster-wide limit counting in it,
``platform up`` with two instances serving the examples' ``iris_sklearn`` behind the
gateway's two processes) serves every run. Each run: 8 callers at 100 requests/s in
all through the gateway, each on its own kept-alive connection, for ``--seconds``;
the fault at ``--fault-at`` (a SIGSTOP held 10 s, etcd and Redis down 20 s, the
control plane started again 5 s after its SIGKILL). Per fault: calls, failed calls
(429s a limit asks for are counted apart, and are not failures), the steady p99 (the
calls before the fault), the p99 during the fault and the 2 s after its end, and the
time from its end to the first 2 s window whose p99, and the next window's, are within
twice the steady p99 again (20 ms more at least). A markdown table for
bench/RESULTS.md, and with ``--json`` the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modelyard.examples.build import build_example_repository  # noqa: E402
from tests.support.faults import FAULTS, FaultPlatform, run_fault  # noqa: E402

BODY = {
    "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}]
}
HEADER = (
    "| fault | calls | failed | 429 | steady p99 ms | p99 during ms | max during ms "
    "| back to steady s |\n|---|---|---|---|---|---|---|---|"
)
HOLD = {
    "instance SIGSTOP": 10.0,
    "etcd down": 20.0,
    "Redis down": 20.0,
    "gateway started while etcd is down": 20.0,
    "control plane SIGKILL, started again on its state": 5.0,
    "bad config.pbtxt pushed": 1.0,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--fault-at", type=float, default=15.0)
    parser.add_argument("--callers", type=int, default=8)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--only", nargs="*", default=None, choices=list(FAULTS), metavar="FAULT")
    parser.add_argument("--json", type=Path, default=None, help="write the outcomes here")
    args = parser.parse_args()
    faults = args.only or list(FAULTS)
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        repository = directory / "models"
        build_example_repository(repository, text_models=False)
        with FaultPlatform(directory, repository, "iris_sklearn").running() as platform:
            print(f"# {host.node()}: {os.cpu_count()} cores, Python {host.python_version()}; "
                  f"{args.callers} callers at {args.rate:g} req/s for {args.seconds:g} s, "
                  f"the fault at {args.fault_at:g} s", flush=True)  # fmt: skip
            print(HEADER, flush=True)
            for name in faults:
                started = time.monotonic()
                outcome = run_fault(
                    platform, name, BODY, seconds=args.seconds, fault_at=args.fault_at,
                    hold=HOLD.get(name, 0.0), callers=args.callers, rate=args.rate,
                )  # fmt: skip
                outcomes.append(outcome)
                print(outcome.row(), flush=True)
                if outcome.failures or outcome.notes:
                    print(f"  notes: {json.dumps(outcome.notes)} failures: {outcome.failures}",
                          f"({time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps([vars_of(o) for o in outcomes], indent=2))


def vars_of(outcome: object) -> dict[str, object]:
    return {name: getattr(outcome, name) for name in outcome.__slots__}  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
