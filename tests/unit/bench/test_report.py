"""The load generator's own arithmetic: what an error counts as, the inputs it sends, and the
summary and table a run reports."""

from __future__ import annotations

import numpy as np
import pytest

from modelyard.bench.loadgen import StepResult, error_key, example_tensors
from modelyard.bench.report import format_table, summarize
from modelyard.errors import Code, ModelyardError


def test_an_error_counts_under_its_rule_else_its_type_and_status() -> None:
    refused = ModelyardError("too many", code=Code.RESOURCE_EXHAUSTED, rule="ratelimit/instance")
    assert error_key(refused) == "ratelimit/instance"

    class Answered(Exception):
        def status(self) -> str:
            return "503"

    assert error_key(Answered("no rule here")) == "Answered:503"
    assert error_key(TimeoutError()) == "TimeoutError"


def test_example_inputs_follow_the_declared_shapes_and_the_batch() -> None:
    metadata = {
        "inputs": [
            {"name": "x", "shape": [-1, 4], "datatype": "FP32"},
            {"name": "text", "shape": [-1, -1], "datatype": "BYTES"},
            {"name": "mask", "shape": [-1, 2], "datatype": "BOOL"},
        ]
    }
    arrays = example_tensors(metadata, rows=3, seed=7)
    assert arrays["x"].shape == (3, 4) and arrays["x"].dtype == np.float32
    assert arrays["text"].shape == (3, 1) and arrays["text"][0, 0] == b"modelyard"
    assert arrays["mask"].dtype == np.bool_
    again = example_tensors(metadata, rows=3, seed=7)
    np.testing.assert_array_equal(arrays["x"], again["x"])  # the seed decides
    unbatched = example_tensors(
        {"inputs": [{"name": "y", "shape": [2, 5], "datatype": "INT32"}]}, 9
    )
    assert unbatched["y"].shape == (2, 5)  # no batch dimension: the rows do not apply


def test_a_step_s_summary_and_its_table_line() -> None:
    result = StepResult(
        latencies=[0.001 * n for n in range(1, 101)],
        errors={"ratelimit/instance": 3},
        sent=103,
        elapsed=2.0,
    )
    row = summarize("closed", 8, result)
    assert row["concurrency"] == 8 and row["throughput_rps"] == 50.0
    assert (row["ok"], row["errors"], row["sent"]) == (100, 3, 103)
    assert row["p50_ms"] == pytest.approx(50.5) and row["p99_ms"] == pytest.approx(99.01)
    empty = summarize("open", 100, StepResult(errors={"TimeoutError": 5}, sent=5, elapsed=1.0))
    assert empty["offered_rps"] == 100 and empty["p99_ms"] is None
    assert "generator_max_lag_ms" in empty
    table = format_table({"mode": "closed", "steps": [row]}).splitlines()
    assert table[0].split()[:2] == ["concurrency", "req/s"]
    assert table[1].split()[:3] == ["8", "50", "50.50"]
    assert table[2].split() == ["3", "x", "ratelimit/instance"]
    open_table = format_table({"mode": "open", "steps": [empty]}).splitlines()
    assert open_table[1].split()[2:6] == ["-", "-", "-", "-"]  # no success, no latency
