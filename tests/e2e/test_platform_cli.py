"""`modelyard platform` as an operator runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "platform.yaml"


def modelyard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_validate_and_ledger_on_the_example_spec(tmp_path: Path) -> None:
    valid = modelyard("platform", "validate", "-f", str(EXAMPLE))
    assert valid.returncode == 0 and "spec is valid" in valid.stdout
    ledger = json.loads(modelyard("platform", "ledger", "-f", str(EXAMPLE), "--json").stdout)
    assert (ledger["total_cards"], ledger["instances"], ledger["gpu_instances"]) == (6, 8, 6)
    broken = tmp_path / "platform.yaml"
    broken.write_text(EXAMPLE.read_text().replace("replicas: 3,", "replicas: 5,"))
    result = modelyard("platform", "validate", "-f", str(broken))
    assert result.returncode == 1
    assert "QUOTA_EXCEEDED" in result.stdout and "platform.yaml:6 (expand the quota first)" in (
        result.stdout
    )


def test_render_refuses_a_spec_that_fails_validate_with_the_same_codes(tmp_path: Path) -> None:
    rendered = modelyard(
        "platform", "render", "kubernetes", "-f", str(EXAMPLE), "--models-claim", "models"
    )
    assert rendered.returncode == 0 and "kind: Deployment" in rendered.stdout
    broken = tmp_path / "platform.yaml"
    broken.write_text(EXAMPLE.read_text().replace("replicas: 3,", "replicas: 5,"))
    result = modelyard("platform", "render", "kubernetes", "-f", str(broken))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "QUOTA_EXCEEDED" in result.stderr and "nothing rendered" in result.stderr


def test_autoscale_explain_names_the_bound(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("".join(f"{t},{40 if t < 30 else 400}\n" for t in range(1, 61)))
    result = modelyard(
        "platform",
        "autoscale",
        "explain",
        "com.example.search.ranker/preprocess",
        "-f",
        str(EXAMPLE),
        "--trace",
        str(trace),
        "--current",
        "2",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == "bounds: autoscaling max 4 replicas, which the quota and the group's card share hold"
    )
    assert any("bound by max_replicas" in line for line in lines)
    assert "panic" in lines[-1]


def test_autoscale_explain_clamps_by_what_the_quota_holds(tmp_path: Path) -> None:
    # the gpu group runs 3 replicas in each of 2 data centres: its 6 cards are its whole share
    trace = tmp_path / "trace.csv"
    trace.write_text("".join(f"{t},400\n" for t in range(1, 21)))
    result = modelyard(
        "platform", "autoscale", "explain", "com.example.search.ranker/gpu",
        "-f", str(EXAMPLE), "--trace", str(trace), "--current", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "set 3 (from 3; bound by quota)" in lines[-1], result.stdout
    # which bound held, with its numbers: the group's card share, not the quota's cards
    assert lines[0] == (
        "bounds: autoscaling max 10 replicas; the quotas hold 3: one more breaks "
        "GROUP_CARDS_EXCEEDED: group com.example.search.ranker/gpu runs instances with 8 cards "
        "over its share of 6"
    ), lines[0]
