"""Triton's sequence batcher, in-process: slots, control inputs, implicit state, idle release.

The model is ``sequence_accumulator`` (tests/support/models.py): an ONNX running sum whose
state the server carries from one request of a sequence to the next.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.errors import Code, ConfigError, ModelyardError
from modelyard.modelfiles.config import parse_model_config
from modelyard.server.dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.server.sequence_batcher import SequenceScheduler
from modelyard.server.sequence_policy import SequencePolicy
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import sequence_accumulator


def _in_a_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def _request(
    model: str, value: int, sequence_id: Any, start: bool = False, end: bool = False, **params: Any
) -> InferRequest:
    parameters: dict[str, Any] = {"sequence_id": sequence_id, **params}
    if start:
        parameters["sequence_start"] = True
    if end:
        parameters["sequence_end"] = True
    array = np.array([value] if model.endswith("_unbatched") else [[value]], dtype=np.int32)
    return InferRequest(
        model, None, {"INPUT": array}, {"INPUT": "INT32"},
        parameters=parameters,
    )  # fmt: skip


async def _sum(dp: LocalDataPlane, model: str, value: int, sequence_id: Any, **flags: Any) -> int:
    response = await dp.infer(_request(model, value, sequence_id, **flags))
    return int(response.outputs[0].data.ravel()[0])


async def _run_sequence(
    dp: LocalDataPlane, model: str, sequence_id: Any, values: list[int]
) -> list[int]:
    sums = []
    for index, value in enumerate(values):
        await asyncio.sleep(random.random() / 1000)  # interleave with the other sequences
        sums.append(
            await _sum(
                dp, model, value, sequence_id, start=index == 0, end=index == len(values) - 1
            )
        )
    return sums


@pytest.mark.parametrize(
    ("strategy", "batch", "instances"),
    [
        ("direct { }", 8, 1),
        ("direct { }", 4, 2),
        ("oldest { max_candidate_sequences: 6 }", 4, 1),
        ("direct { }", 0, 2),  # no batching: one slot per instance
    ],
)
@_in_a_loop
async def test_many_interleaved_sequences_each_get_their_own_running_sum(
    tmp_path: Path, strategy: str, batch: int, instances: int
) -> None:
    model = "acc" if batch else "acc_unbatched"  # an unbatched model's INPUT is [1]
    sequence_accumulator(tmp_path, model, strategy, batch, instances=instances)
    rng = random.Random(7)
    plans = {sid: [rng.randint(-50, 50) for _ in range(rng.randint(1, 12))] for sid in range(1, 25)}
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        got = await asyncio.gather(
            *(_run_sequence(dp, model, sid, values) for sid, values in plans.items())
        )
        for (sid, values), sums in zip(plans.items(), got, strict=True):
            assert sums == list(np.cumsum(values)), sid
        scheduler = dp.manager.resolve(model, None).scheduler
        assert isinstance(scheduler, SequenceScheduler)
        assert scheduler.active_sequences == 0  # every END gave its slot back
        stats = dp.statistics(model, None)["model_stats"][0]
        assert stats["inference_count"] == sum(map(len, plans.values()))
        if batch:  # 24 sequences on 8 or 4 slots: executions carried several of them
            assert stats["execution_count"] < stats["inference_count"]


@_in_a_loop
async def test_string_ids_and_a_start_on_a_running_sequence_restarts_its_state(
    tmp_path: Path,
) -> None:
    sequence_accumulator(tmp_path, "acc")
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        assert await _sum(dp, "acc", 5, "user-a", start=True) == 5
        assert await _sum(dp, "acc", 2, "user-a") == 7
        assert await _sum(dp, "acc", 3, "user-b", start=True) == 3
        assert await _sum(dp, "acc", 4, "user-a", start=True) == 4
        assert await _sum(dp, "acc", 1, "user-a", end=True) == 5
        assert await _sum(dp, "acc", 1, "user-b", end=True) == 4


@_in_a_loop
async def test_requests_that_name_no_sequence_or_skip_start_get_400_lines(tmp_path: Path) -> None:
    sequence_accumulator(tmp_path, "acc")
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        cases = [
            (
                _request("acc", 1, 0, start=True),
                "must specify a non-zero or non-empty correlation ID",
            ),
            (_request("acc", 1, "", start=True), "non-empty correlation ID"),
            (_request("acc", 1, 99), "must specify the START flag on the first request"),
            (_request("acc", 1, 1.5, start=True), "unsigned integer or a string"),
            (_request("acc", 1, -3, start=True), "unsigned 64-bit integer"),
            (
                _request("acc", 1, 7, sequence_start="yes"),
                "'sequence_start' parameter must be true or false",
            ),
        ]
        for request, expected in cases:
            with pytest.raises(ModelyardError) as caught:
                await dp.infer(request)
            assert caught.value.code is Code.INVALID_ARGUMENT
            assert expected in caught.value.line()
        two_rows = _request("acc", 1, 5, start=True)
        two_rows.inputs["INPUT"] = np.array([[1], [2]], dtype=np.int32)
        with pytest.raises(ModelyardError, match="must specify batch-size 1"):
            await dp.infer(two_rows)
        # an ended sequence takes no more requests without START; others are still served
        assert await _sum(dp, "acc", 1, 8, start=True, end=True) == 1
        with pytest.raises(ModelyardError, match="START flag"):
            await dp.infer(_request("acc", 1, 8))
        assert await _sum(dp, "acc", 2, 9, start=True) == 2


@_in_a_loop
async def test_an_abandoned_sequence_gives_its_slot_back_after_the_idle_time(
    tmp_path: Path,
) -> None:
    sequence_accumulator(tmp_path, "acc", max_batch_size=1, idle_us=200_000)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        assert await _sum(dp, "acc", 3, 1, start=True) == 3  # holds the only slot
        # the next sequence waits in the backlog until the first one falls idle
        waiting = asyncio.ensure_future(_sum(dp, "acc", 4, 2, start=True))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        assert await asyncio.wait_for(waiting, 5) == 4
        with pytest.raises(ModelyardError, match="START flag"):
            await dp.infer(_request("acc", 1, 1))  # released: its state is gone


@_in_a_loop
async def test_direct_pads_the_slots_between_with_ready_false(tmp_path: Path) -> None:
    """Three sequences on slots 0-2; once the one on slot 1 has ended, a batch of slots 0
    and 2 runs with a padding row whose READY is false, and the sums stay right."""
    sequence_accumulator(tmp_path, "acc", max_batch_size=4)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        for sid in (1, 2, 3):
            assert await _sum(dp, "acc", sid, sid, start=True) == sid
        assert await _sum(dp, "acc", 10, 2, end=True) == 12
        firsts = await asyncio.gather(_sum(dp, "acc", 1, 1), _sum(dp, "acc", 1, 3))
        assert firsts == [2, 4]
        stats = dp.statistics("acc", None)["model_stats"][0]
        assert any(entry["batch_size"] == 2 for entry in stats["batch_stats"])


_START = 'control_input [{ name: "START" control [{ kind: CONTROL_SEQUENCE_START %s }] }]'


@pytest.mark.parametrize(
    ("sequence_batching", "expected"),
    [
        ("iterative_sequence: true", "sequence_batching.iterative_sequence is not served"),
        ("oldest { preserve_ordering: true }", "oldest.preserve_ordering is not served"),
        (_START % "", "needs one of int32_false_true"),
        (_START % "int32_false_true: [ 0 ]", "with two values"),
        (_START % "int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ]", "needs one of"),
        (
            'control_input [{ name: "C" control [{ kind: CONTROL_SEQUENCE_CORRID '
            "data_type: TYPE_FP32 }] }]",
            "needs data_type TYPE_UINT64",
        ),
        (
            'control_input [{ name: "x" control [{ kind: CONTROL_SEQUENCE_READY '
            "int32_false_true: [ 0, 1 ] }] }]",
            "'x' is both an input and a control",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ -1 ] }]',
            "variable-sized states are not served",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "../x" name: "i" } }]',
            "must be a plain name",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "short" name: "i" } }]',
            "holds 3 bytes; the state takes 8",
        ),
    ],
)
def test_a_sequence_config_the_server_would_misread_is_refused_with_its_line(
    tmp_path: Path, sequence_batching: str, expected: str
) -> None:
    (tmp_path / "initial_state").mkdir()
    (tmp_path / "initial_state" / "short").write_bytes(b"abc")
    config = parse_model_config(
        'backend: "python"\nmax_batch_size: 4\n'
        'input [{ name: "x" data_type: TYPE_FP32 dims: [ 1 ] }]\n'
        f"sequence_batching {{\n  {sequence_batching}\n}}\n",
        "m/config.pbtxt",
    )
    with pytest.raises(ConfigError) as refused:
        SequencePolicy.from_config(config, tmp_path, "m/config.pbtxt")
    assert expected in refused.value.line()
    assert "m/config.pbtxt" in refused.value.line()


def test_an_initial_state_file_is_read_as_the_state_s_bytes(tmp_path: Path) -> None:
    (tmp_path / "initial_state").mkdir()
    (tmp_path / "initial_state" / "init").write_bytes(np.array([3, 4], np.int32).tobytes())
    config = parse_model_config(
        'backend: "python"\nmax_batch_size: 4\nsequence_batching {\n'
        'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
        'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "init" name: "i" } }]\n}\n'
    )
    policy = SequencePolicy.from_config(config, tmp_path, "m/config.pbtxt")
    assert policy.states[0].initial.tolist() == [3, 4]
    assert policy.hidden_inputs == {"S"}
    assert policy.slots == 4 and not policy.oldest
