"""Statistics and Prometheus metrics after a known sequence, and `modelyard bench`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

from modelyard.processes import serve_command
from tests.support.models import slow_double
from tests.support.servers import metric_samples, server_in_process


def test_stats_and_metrics_after_a_known_sequence(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    with (
        server_in_process(repository, "--metrics-config", "summary_latencies=true") as server,
        httpclient.InferenceServerClient(server.http_url) as client,  # closed on this thread
    ):
        for rows in (1, 2, 3):
            x = httpclient.InferInput("x", [rows, 2], "FP32")
            x.set_data_from_numpy(np.ones((rows, 2), np.float32))
            client.infer("slow_double", [x])
        stats = client.get_inference_statistics("slow_double")["model_stats"][0]
        assert stats["inference_count"] == 6
        assert stats["execution_count"] == 3
        assert stats["inference_stats"]["success"]["count"] == 3
        assert stats["inference_stats"]["fail"]["count"] == 0
        assert {b["batch_size"] for b in stats["batch_stats"]} == {1, 2, 3}

        text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text
        samples = metric_samples(text)
        labels = (("model", "slow_double"), ("version", "1"))
        # Triton's exact names and lines, as existing dashboards query them
        tags = 'model="slow_double",version="1"'
        assert "# TYPE nv_inference_request_success counter" in text
        assert f"nv_inference_request_success{{{tags}}} 3.0" in text
        assert f"nv_inference_count{{{tags}}} 6.0" in text
        assert f"nv_inference_exec_count{{{tags}}} 3.0" in text
        assert f"nv_inference_pending_request_count{{{tags}}} 0.0" in text
        failure = 'model="slow_double",reason="BACKEND",version="1"'
        assert f"nv_inference_request_failure{{{failure}}} 0.0" in text
        assert samples[("modelyard_batch_size_count", labels)] == 3
        assert samples[("modelyard_batch_size_sum", labels)] == 6
        bucket = tuple(sorted((*labels, ("le", "2.0"))))
        assert samples[("modelyard_batch_size_bucket", bucket)] == 2
        assert samples[("modelyard_queue_duration_seconds_count", labels)] == 3
        assert samples[("modelyard_request_duration_seconds_count", labels)] == 3
        # Triton's summaries (--metrics-config summary_latencies=true): count and sum as the
        # counters' (which prometheus_client's parser names with _total), and the quantiles
        # of the last minute
        assert "# TYPE nv_inference_request_summary_us summary" in text
        assert samples[("nv_inference_request_summary_us_count", labels)] == 3
        request_us = samples[("nv_inference_request_duration_us_total", labels)]
        assert samples[("nv_inference_request_summary_us_sum", labels)] == pytest.approx(request_us)
        queue_us = samples[("nv_inference_queue_duration_us_total", labels)]
        assert samples[("nv_inference_queue_summary_us_sum", labels)] == pytest.approx(queue_us)
        median = tuple(sorted((*labels, ("quantile", "0.5"))))
        assert 0 < samples[("nv_inference_compute_infer_summary_us", median)] <= request_us
        # the host's CPU series, as Triton exports them without a GPU
        assert "# TYPE nv_cpu_utilization gauge" in text
        assert 0.0 <= samples[("nv_cpu_utilization", ())] <= 1.0
        total = samples[("nv_cpu_memory_total_bytes", ())]
        assert 0 < samples[("nv_cpu_memory_used_bytes", ())] < total


def test_bench_writes_its_report_and_plot(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    with server_in_process(repository) as server:
        out = tmp_path / "report"
        completed = subprocess.run(
            [
                sys.executable, "-m", "modelyard.cli.main", "bench",
                "--url", server.http_url, "--model", "slow_double",
                "--concurrency", "1,4", "--duration", "1", "--warmup", "0.2",
                "--out", str(out), "--name", "run", "--no-progress",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr
        report = json.loads((out / "run.json").read_text())
        assert [s["concurrency"] for s in report["steps"]] == [1, 4]
        for step in report["steps"]:
            assert step["ok"] > 0 and step["errors"] == 0
            assert step["p50_ms"] <= step["p99_ms"] <= step["p99_9_ms"]
        assert (out / "run.png").read_bytes()[:4] == b"\x89PNG"
        assert "concurrency" in completed.stdout


@pytest.mark.slow
def test_a_metrics_port_in_use_ends_serve_with_an_error_line(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = subprocess.run(
            serve_command(repository, http_port=0, metrics_port=port),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode != 0
    assert (  # Triton's words, then the rule and where to change it
        f"[config] failed to start Metrics service: Unavailable - Socket '127.0.0.1:{port}' "
        "already in use" in result.stderr
    )
    assert "rule=config/metrics-port; change: modelyard serve --metrics-port" in result.stderr
    assert "Traceback" not in result.stderr
