"""LoopLoad: busy and idle with different thresholds, so batching does not switch it off."""

from __future__ import annotations

from modelyard.server.loop_load import BUSY_LAG_S, IDLE_LAG_S, LoopLoad


def _settle_at(load: LoopLoad, lag_s: float, readings: int = 60) -> None:
    for _ in range(readings):
        load.observe(lag_s)


def test_a_loop_is_busy_only_once_its_smoothed_lag_passes_the_busy_threshold() -> None:
    load = LoopLoad()
    _settle_at(load, BUSY_LAG_S * 0.8)
    assert not load.busy
    load.observe(BUSY_LAG_S * 20)  # one late tick moves the smoothed lag past it
    assert load.busy


def test_a_busy_loop_stays_busy_while_its_lag_sits_between_the_thresholds() -> None:
    load = LoopLoad()
    _settle_at(load, BUSY_LAG_S * 3)
    assert load.busy
    between = (BUSY_LAG_S + IDLE_LAG_S) / 2  # a loop whose requests now batch
    _settle_at(load, between)
    assert load.busy
    _settle_at(load, IDLE_LAG_S / 4)
    assert not load.busy
    _settle_at(load, between)  # from idle, the same lag does not make it busy
    assert not load.busy


def test_a_few_late_ticks_on_an_idle_loop_wear_off_within_milliseconds() -> None:
    load = LoopLoad()
    load.observe(0.002)  # a pause: one tick 2 ms late
    assert load.busy
    readings = 0
    while load.busy and readings < 100:
        load.observe(0.0)
        readings += 1
    assert readings <= 12  # ticks of 1 ms each
