"""Triton's latency summaries: quantiles over the last minute, count and sum for all time."""

from __future__ import annotations

import math

from modelyard.server.stats import SUMMARY_WINDOW_S, LatencySummaries, SlidingSummary

SECOND = 1_000_000_000


def test_quantiles_cover_the_window_and_count_and_sum_everything() -> None:
    summary = SlidingSummary()
    assert all(math.isnan(v) for v in summary.quantiles(0, (0.5, 0.99)))
    for value in range(1, 101):  # 1 .. 100 µs, all at t = 1 s
        summary.observe(SECOND, float(value))
    assert summary.quantiles(2 * SECOND, (0.5, 0.9, 0.99)) == [51.0, 91.0, 100.0]
    later = SECOND + int(SUMMARY_WINDOW_S * SECOND) + 1
    summary.observe(later, 7.0, times=3)
    assert summary.quantiles(later, (0.5, 0.999)) == [7.0, 7.0]  # the old values aged out
    assert summary.count == 103 and summary.sum == 5050.0 + 21.0


def test_a_batch_records_each_request_and_its_shared_compute_times() -> None:
    summaries = LatencySummaries((0.5,))
    start, end = 10 * SECOND, 10 * SECOND + 4000
    summaries.record([start - 1000, start - 3000], start, end, 100, 2000, 300)
    request, queue = summaries.series["request"], summaries.series["queue"]
    assert request.count == queue.count == 2
    assert request.sum == (5000 + 7000) / 1000 and queue.sum == (1000 + 3000) / 1000
    infer = summaries.series["compute_infer"]
    assert infer.count == 2 and infer.sum == 4.0
