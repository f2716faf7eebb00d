"""Durations observed as nanosecond differences land in the same buckets as seconds do."""

from __future__ import annotations

import pytest

from modelyard.server.stats import TIME_BUCKETS, Histogram


def test_observing_durations_since_starts_matches_observing_seconds() -> None:
    end_ns = 50_000_000_000
    # on each bound, a nanosecond either side of it, and far past the last one
    durations_ns = [round(b * 1e9) + d for b in TIME_BUCKETS for d in (-1, 0, 1)] + [10**11, 0]
    starts = [end_ns - d for d in durations_ns]
    by_seconds = Histogram(TIME_BUCKETS)
    for d in durations_ns:
        by_seconds.observe(d / 1e9)
    since = Histogram(TIME_BUCKETS)
    since.observe_since(starts, end_ns, sum(starts))
    assert since.counts == by_seconds.counts
    assert since.total == pytest.approx(by_seconds.total)
    assert since.counts[0] == 3  # 0, and 100 µs less or exactly: the first bucket is "<= 100 µs"
