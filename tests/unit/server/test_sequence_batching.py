"""Triton's sequence batcher, in-process: slots, control inputs, implicit state, idle release.

The model is ``sequence_accumulator`` (tests/support/models.py): an ONNX running sum whose
state the server carries from one request of a sequence to the next.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from modelyard.cli.serve import drain_as_triton
from modelyard.dataplane import CALLER_GONE, StreamResponse
from modelyard.errors import Code, ConfigError, ModelyardError
from modelyard.modelfiles.config import parse_model_config
from modelyard.server import sequence_batcher
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.server.sequence_batcher import SequenceScheduler
from modelyard.server.sequence_policy import SequencePolicy, sequence_flags
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import (
    SEQUENCE_COUNTER,
    sequence_accumulator,
    sequence_counter,
    write_python_model,
)


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
async def test_oldest_waits_its_queue_delay_for_sequences_not_yet_started(tmp_path: Path) -> None:
    """Triton's dynamic batcher over the candidate sequences: the first START waits for a
    preferred batch of four though it is alone in the slots when it comes."""
    oldest = "oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] "
    oldest += "max_queue_delay_microseconds: 5000000 }"
    sequence_accumulator(tmp_path, "acc", oldest, 4)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        first = asyncio.ensure_future(_sum(dp, "acc", 1, 1, start=True))
        await asyncio.sleep(0.2)  # the first START alone, for longer than an execution
        assert not first.done()
        others = [_sum(dp, "acc", 10 * sid, sid, start=True) for sid in (2, 3, 4)]
        assert await asyncio.gather(first, *others) == [1, 20, 30, 40]
        stats = dp.statistics("acc", None)["model_stats"][0]
        batches = [(b["batch_size"], b["compute_infer"]["count"]) for b in stats["batch_stats"]]
        assert batches == [(4, 1)]


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
async def test_once_stopping_a_start_is_refused_and_running_sequences_go_on(
    tmp_path: Path,
) -> None:
    """tritonserver's stop, as Triton's sequence batcher: no new sequence (nor a START on a
    running one), the sequences holding slots served and counted in flight until they end
    or are released idle, which the drain waits for."""
    sequence_accumulator(tmp_path, "acc", idle_us=700_000)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        assert await _sum(dp, "acc", 1, 1, start=True) == 1
        assert await _sum(dp, "acc", 1, 2, start=True) == 1
        scheduler = dp.manager.resolve("acc", None).scheduler
        assert isinstance(scheduler, SequenceScheduler)
        assert scheduler.pending == 0 and scheduler.in_flight == 2
        dp.manager.stopping = True
        for sequence_id in (3, 1):  # a new id, and a START on a running sequence
            with pytest.raises(ModelyardError) as caught:
                await dp.infer(_request("acc", 1, sequence_id, start=True))
            assert caught.value.line().startswith(
                "Server is stopping, scheduler for model has stopped accepting new inference "
                "requests; rule=model-server/stopping"
            )
            assert caught.value.code is Code.UNAVAILABLE
        assert await _sum(dp, "acc", 1, 2, end=True) == 2
        assert scheduler.in_flight == 1
        with pytest.raises(ModelyardError, match="START flag"):  # ended: not running
            await dp.infer(_request("acc", 1, 2))
        with capture_logs() as logs:  # sequence 1, idle, is released within the drain
            await asyncio.wait_for(drain_as_triton(dp.manager, None, timeout=5), 4)
        said = [entry.get("triton") for entry in logs]
        assert "Model 'acc' (version 1) has 1 in-flight inferences" in said
        # the drain ends once the sequence is released (0.2 s idle), within its first second
        assert said[-1] == "Timeout 5: Found 0 model versions that have in-flight inferences"


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
        # as Triton counts them: a batch by its slots, padding included (sequence 3's
        # first request ran alone on slot 2: a batch of 3); requests without padding
        assert 3 in {entry["batch_size"] for entry in stats["batch_stats"]}
        assert stats["inference_count"] == 6


@_in_a_loop
async def test_a_backlogged_sequence_past_its_timeout_is_refused_whole(tmp_path: Path) -> None:
    sequence_accumulator(tmp_path, "acc", max_batch_size=1)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        assert await _sum(dp, "acc", 3, 1, start=True) == 3  # holds the only slot
        waiting = []
        for value, start in ((4, True), (5, False)):
            request = _request("acc", value, 2, start=start)
            request.timeout_us = 100_000  # bounds its wait in the backlog
            waiting.append(asyncio.ensure_future(dp.infer(request)))
        for future in waiting:
            with pytest.raises(ModelyardError) as caught:
                await asyncio.wait_for(future, 5)
            assert caught.value.code is Code.UNAVAILABLE
            assert caught.value.line().startswith(
                "timeout of the corresponding sequence has been expired"
            )
        with pytest.raises(ModelyardError, match="START flag"):
            await dp.infer(_request("acc", 1, 2))  # its id is forgotten
        assert await _sum(dp, "acc", 1, 1, end=True) == 4  # the one in its slot goes on
        stats = dp.statistics("acc", None)["model_stats"][0]
        assert stats["inference_stats"]["fail"]["count"] == 2


@_in_a_loop
async def test_a_start_after_a_queued_end_begins_another_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Triton: an id is forgotten once its END is queued, so a START with it takes a slot
    of its own (here slot 1, beside the ending one on slot 0) rather than queueing behind."""
    monkeypatch.setenv("TRITONSERVER_DELAY_SCHEDULER", "3")  # nothing runs before all 3
    sequence_accumulator(tmp_path, "acc", max_batch_size=2)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        sums = await asyncio.gather(
            _sum(dp, "acc", 1, 7, start=True),
            _sum(dp, "acc", 2, 7, end=True),
            _sum(dp, "acc", 10, 7, start=True),
        )
        assert sums == [1, 3, 10]
        stats = dp.statistics("acc", None)["model_stats"][0]
        sizes = {
            entry["batch_size"]: entry["compute_infer"]["count"] for entry in stats["batch_stats"]
        }
        assert sizes == {2: 1, 1: 1}  # the first START and the new one ran together


_START = 'control_input [{ name: "START" control [{ kind: CONTROL_SEQUENCE_START %s }] }]'


@pytest.mark.parametrize(
    ("sequence_batching", "expected"),
    [
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
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 0 ] }]',
            "dims [0]: each above 0, or -1",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 4, -1 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 3, 1 ] zero_data: true name: "i" } }]',
            "must have the state's data_type and dims (a size for each -1)",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 '
            "dims: [ 100000, 100000 ] }]",
            "is over 67108864 bytes",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "../x" name: "i" } }]',
            "must be a plain name",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "a\\000b" name: "i" } }]',
            "must be a plain name",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "short" name: "i" } }]',
            "holds 3 bytes; the state takes 8",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_BF16 dims: [ 2 ] }]',
            "needs a numeric or STRING data_type (not BF16)",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_STRING dims: [ 2 ] '
            'initial_state { data_type: TYPE_STRING dims: [ 2 ] data_file: "short" name: "i" } }]',
            "data_file 'short' of the STRING state 'S' holds 3 bytes; a STRING state starts "
            "as empty strings whatever its file holds, and the file must be 4 bytes for each "
            "of its 2 elements (8 bytes), or use zero_data",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_STRING dims: [ 1 ] '
            'initial_state { data_type: TYPE_STRING dims: [ 1 ] data_file: "eight" name: "i" } }]',
            "holds 8 bytes; a STRING state starts as empty strings",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
            'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "fifo" name: "i" } }]',
            "initial_state data_file 'fifo' is not a regular file",
        ),
        (
            'state [{ input_name: "S" output_name: "T" data_type: TYPE_STRING dims: [ 1 ] '
            'initial_state { data_type: TYPE_STRING dims: [ 1 ] data_file: "none" name: "i" } }]',
            "initial_state data_file 'none': No such file or directory",
        ),
    ],
)
def test_a_sequence_config_the_server_would_misread_is_refused_with_its_line(
    tmp_path: Path, sequence_batching: str, expected: str
) -> None:
    (tmp_path / "initial_state").mkdir()
    (tmp_path / "initial_state" / "short").write_bytes(b"abc")
    # a well-formed string of 4 bytes: two elements' size, where the state has one
    (tmp_path / "initial_state" / "eight").write_bytes(b"\x04\x00\x00\x00abcd")
    os.mkfifo(tmp_path / "initial_state" / "fifo")  # would hold the load if it were opened
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
    # as Triton, the state takes the file's first bytes: a longer file is not refused
    (tmp_path / "initial_state" / "init").write_bytes(np.array([3, 4, 5], np.int32).tobytes())
    config = parse_model_config(
        'backend: "python"\nmax_batch_size: 4\nsequence_batching {\n'
        'state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] '
        'initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "init" name: "i" } }]\n}\n'
    )
    policy = SequencePolicy.from_config(config, tmp_path, "m/config.pbtxt")
    assert policy.states[0].initial.tolist() == [3, 4]
    assert policy.hidden_inputs == {"S"}
    assert policy.slots == 4 and not policy.oldest


def test_a_string_state_starts_as_empty_strings() -> None:
    config = parse_model_config(
        'backend: "python"\nmax_batch_size: 4\nsequence_batching {\n'
        'state [{ input_name: "S" output_name: "T" data_type: TYPE_STRING dims: [ 2 ] '
        "initial_state { data_type: TYPE_STRING dims: [ 2 ] zero_data: true name: \"i\" } }]\n}\n"
    )
    state = SequencePolicy.from_config(config, Path("."), "m/config.pbtxt").states[0]
    assert state.dtype == np.object_ and state.initial.tolist() == [b"", b""]


@pytest.mark.parametrize(
    ("dims", "data"),
    [
        # Triton's L0_sequence_batcher file: the length 100 with no string after it
        ("[ 1 ]", b"\x64\x00\x00\x00"),
        ("[ 3 ]", b"\x01\x00\x00\x00a\xff\xff\xff\xff\x00\x00\x00"),
    ],
)
def test_a_string_state_s_initial_file_starts_it_as_empty_strings_whatever_it_holds(
    tmp_path: Path, dims: str, data: bytes
) -> None:
    """As Triton: it copies the file into the state and sets its bytes to zero, so only the
    file's size (4 bytes an element) counts."""
    (tmp_path / "initial_state").mkdir()
    (tmp_path / "initial_state" / "input_state_data").write_bytes(data)
    config = parse_model_config(
        'backend: "python"\nmax_batch_size: 4\nsequence_batching {\n'
        f'state [{{ input_name: "S" output_name: "T" data_type: TYPE_STRING dims: {dims} '
        f"initial_state {{ data_type: TYPE_STRING dims: {dims} "
        'data_file: "input_state_data" name: "i" } }]\n}\n'
    )
    state = SequencePolicy.from_config(config, tmp_path, "m/config.pbtxt").states[0]
    assert state.initial.dtype == np.object_
    assert state.initial.tolist() == [b""] * (len(data) // 4)


def test_a_correlation_id_must_fit_the_corrid_control_s_type() -> None:
    config = parse_model_config(
        'backend: "python"\nmax_batch_size: 4\nsequence_batching {\n'
        'control_input [{ name: "C" control [{ kind: CONTROL_SEQUENCE_CORRID '
        "data_type: TYPE_INT32 }] }]\n}\n"
    )
    policy = SequencePolicy.from_config(config, Path("."), "m/config.pbtxt")
    assert sequence_flags("m", {"sequence_id": 2**31 - 1}, policy).id == 2**31 - 1
    with pytest.raises(ModelyardError, match="does not fit sequence batching control 'C'"):
        sequence_flags("m", {"sequence_id": 2**40}, policy)
    with pytest.raises(ModelyardError, match="cannot be longer than 128 characters"):
        sequence_flags("m", {"sequence_id": "é" * 65}, _policy_without_corrid())


def _policy_without_corrid() -> SequencePolicy:
    config = parse_model_config('backend: "python"\nsequence_batching { }\n')
    return SequencePolicy.from_config(config, Path("."), "m/config.pbtxt")


WRONG_STATE = """
import numpy as np


class Model:
    def execute(self, inputs):
        rows = len(inputs["INPUT"])
        return {"OUTPUT": inputs["INPUT"], "OUTPUT_STATE": np.zeros((rows, 3), np.int32)}
"""


@_in_a_loop
async def test_a_state_returned_in_another_shape_fails_that_execution_only(
    tmp_path: Path,
) -> None:
    write_python_model(
        tmp_path,
        "wrong_state",
        WRONG_STATE,
        """
        backend: "python"
        max_batch_size: 4
        input [{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        sequence_batching {
          state [{ input_name: "INPUT_STATE" output_name: "OUTPUT_STATE"
                   data_type: TYPE_INT32 dims: [ 1 ] }]
        }
        """,
    )
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        for step in range(2):  # the state kept stays the last good one: never a wrong shape
            with pytest.raises(ModelyardError) as caught:
                await dp.infer(_request("wrong_state", 1, 5, start=step == 0))
            assert caught.value.code is Code.INTERNAL
            assert "returned state 'OUTPUT_STATE' in shape [3]" in caught.value.line()


GROWING_STATE = """
import numpy as np


class Model:
    def execute(self, inputs):
        # the state keeps every value of the sequence, one more each request; a value of
        # 99 asks for a state past the server's bound
        state, value = inputs["INPUT_STATE"], inputs["INPUT"]
        if (value == 99).any():
            return {"OUTPUT": value, "OUTPUT_STATE": np.zeros((len(value), 20_000_000), np.int32)}
        grown = np.concatenate([state, value], axis=1)
        return {"OUTPUT": grown.sum(axis=1, keepdims=True).astype(np.int32),
                "OUTPUT_STATE": grown}
"""


@_in_a_loop
async def test_a_variable_sized_state_takes_the_shape_the_model_returns(tmp_path: Path) -> None:
    """As Triton's: the first state has 1 for each -1; sequences whose states differ in shape
    run in executions of their own; a state past the bound fails that execution alone."""
    write_python_model(
        tmp_path,
        "growing",
        GROWING_STATE,
        """
        backend: "python"
        max_batch_size: 4
        input [{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        sequence_batching {
          state [{ input_name: "INPUT_STATE" output_name: "OUTPUT_STATE"
                   data_type: TYPE_INT32 dims: [ -1 ] }]
        }
        """,
    )
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        assert await _sum(dp, "growing", 5, 1, start=True) == 5  # the first state: [0]
        assert await _sum(dp, "growing", 7, 1) == 12
        # sequence 2 starts while 1's state is three long: both answered, each its own sum
        sums = await asyncio.gather(
            _sum(dp, "growing", 1, 1), _sum(dp, "growing", 2, 2, start=True)
        )
        assert sums == [13, 2]
        with pytest.raises(ModelyardError) as caught:
            await dp.infer(_request("growing", 99, 2))
        assert caught.value.code is Code.INTERNAL
        assert "within 67108864 bytes" in caught.value.line()
        assert await _sum(dp, "growing", 3, 2, end=True) == 5  # the last good state kept
        assert await _sum(dp, "growing", 0, 1, end=True) == 13


STRING_STATE = """
import numpy as np


class Model:
    def execute(self, inputs):
        # the state keeps every value of the sequence as text, one more each request
        state, value = inputs["INPUT_STATE"], inputs["INPUT"]
        kept = np.array([[s + str(int(v)).encode() * 10] for s, v in
                         zip(state[:, 0], value[:, 0])], dtype=object)
        lengths = np.array([[len(k[0])] for k in kept], np.int32)
        return {"OUTPUT": lengths, "OUTPUT_STATE": kept}
"""


@_in_a_loop
async def test_a_string_state_is_bounded_by_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sequence_batcher, "STATE_MAX_BYTES", 25)
    write_python_model(
        tmp_path,
        "texts",
        STRING_STATE,
        """
        backend: "python"
        max_batch_size: 4
        input [{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        sequence_batching {
          state [{ input_name: "INPUT_STATE" output_name: "OUTPUT_STATE"
                   data_type: TYPE_STRING dims: [ 1 ] }]
        }
        """,
    )
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        assert await _sum(dp, "texts", 1, 1, start=True) == 10  # from empty bytes
        assert await _sum(dp, "texts", 2, 1) == 20
        with pytest.raises(ModelyardError) as caught:  # 30 bytes: past the bound
            await dp.infer(_request("texts", 3, 1))
        assert caught.value.code is Code.INTERNAL
        assert "within 25 bytes" in caught.value.line()
        # the sequence starts again and is served (its last good state was 20 bytes, and
        # any next one 30)
        assert await _sum(dp, "texts", 4, 1, start=True, end=True) == 10


@_in_a_loop
async def test_callers_cannot_queue_without_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sequence's queue and the backlog of sequences waiting for a slot are bounded:
    past them a request gets 503 with its line, and what was taken is answered right."""
    monkeypatch.setattr(sequence_batcher, "MAX_BACKLOG", 2)
    sequence_accumulator(tmp_path, "acc", max_batch_size=1)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        requests = [_request("acc", 1, 1, start=True)] + [_request("acc", 1, 1) for _ in range(99)]
        outcomes = await asyncio.gather(*(dp.infer(r) for r in requests), return_exceptions=True)
        refused = [o for o in outcomes if isinstance(o, ModelyardError)]
        answered = [
            int(o.outputs[0].data.ravel()[0]) for o in outcomes if not isinstance(o, BaseException)
        ]
        assert refused and all("requests queued" in e.line() for e in refused)
        assert all(e.code is Code.UNAVAILABLE for e in refused)
        assert answered == list(range(1, len(answered) + 1))  # in order, none lost
        # sequence 1 holds the only slot: two more wait in the backlog, a third is refused
        waiting = [
            asyncio.ensure_future(_sum(dp, "acc", 1, sid, start=True, end=True)) for sid in (2, 3)
        ]
        await asyncio.sleep(0.01)
        with pytest.raises(ModelyardError, match="2 sequences wait for a slot"):
            await dp.infer(_request("acc", 1, 4, start=True))
        assert await _sum(dp, "acc", 1, 1, end=True) == len(answered) + 1
        assert await asyncio.gather(*waiting) == [1, 1]


# answers its DELAY input after sleeping that many milliseconds
SLEEPING = """
import time


class Model:
    def execute(self, inputs):
        time.sleep(int(inputs["DELAY"].max()) / 1000)
        return {"OUT": inputs["DELAY"]}
"""


def _sleeping(repository: Path, oldest: str) -> None:
    write_python_model(repository, "sleeping", SLEEPING, f"""
        backend: "python"
        max_batch_size: 1
        instance_group [{{ kind: KIND_CPU count: 2 }}]
        input [{{ name: "DELAY" data_type: TYPE_INT32 dims: [ 1 ] }}]
        output [{{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
        sequence_batching {{ oldest {{ max_candidate_sequences: 1 {oldest} }} }}
        """)  # fmt: skip


async def _answered_in_order(dp: LocalDataPlane, sent: list[tuple[int, int, bool]]) -> list[int]:
    """The sequences of ``sent`` (id, delay ms, start), sent 50 ms apart, as answered."""
    answered: list[int] = []

    async def one(sid: int, delay: int, start: bool) -> None:
        request = InferRequest(
            "sleeping", None, {"DELAY": np.array([[delay]], dtype=np.int32)}, {"DELAY": "INT32"},
            parameters={"sequence_id": sid, "sequence_start": start},
        )  # fmt: skip
        await dp.infer(request)
        answered.append(sid)

    tasks = []
    for each in sent:
        tasks.append(asyncio.ensure_future(one(*each)))
        await asyncio.sleep(0.05)
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    return answered


@pytest.mark.parametrize("preserve", [True, False])
@_in_a_loop
async def test_oldest_preserve_ordering_answers_in_the_order_requests_were_taken(
    tmp_path: Path, preserve: bool
) -> None:
    """Two instances: sequence 1's slow request is taken first, sequence 2's quick one
    after; with preserve_ordering the quick answer waits for the slow one, as Triton's."""
    _sleeping(tmp_path, f"preserve_ordering: {str(preserve).lower()}")
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        scheduler = dp.manager.resolve("sleeping", None).scheduler
        assert isinstance(scheduler, SequenceScheduler)
        assert scheduler.policy.preserve_ordering is preserve
        answered = await _answered_in_order(dp, [(1, 400, True), (2, 0, True)])
        assert answered == ([1, 2] if preserve else [2, 1])


@_in_a_loop
async def test_with_preserve_ordering_a_sequence_waiting_for_a_slot_holds_nobody_back(
    tmp_path: Path,
) -> None:
    """Two slots, both held: sequence 3's START waits in the backlog, and the later
    requests of the sequences in the slots are answered meanwhile (their callers may be
    waiting for them before they end their sequences and free a slot)."""
    _sleeping(tmp_path, "preserve_ordering: true")
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        answered = await _answered_in_order(dp, [(1, 0, True), (2, 0, True)])
        assert sorted(answered) == [1, 2]
        backlogged = asyncio.ensure_future(_answered_in_order(dp, [(3, 0, True)]))
        await asyncio.sleep(0.1)
        assert await _answered_in_order(dp, [(1, 0, False), (2, 0, False)]) == [1, 2]
        assert not backlogged.done()
        end = InferRequest(
            "sleeping", None, {"DELAY": np.array([[0]], dtype=np.int32)}, {"DELAY": "INT32"},
            parameters={"sequence_id": 1, "sequence_end": True},
        )  # fmt: skip
        await dp.infer(end)
        assert await asyncio.wait_for(backlogged, 5) == [3]


def _counter_request(
    sid: int, count: int, delay: int = 0, start: bool = False, end: bool = False
) -> InferRequest:
    inputs = {
        "IN": np.array([[count]], dtype=np.int32),
        "DELAY": np.array([[delay]], dtype=np.int32),
    }
    parameters = {"sequence_id": sid, "sequence_start": start, "sequence_end": end}
    return InferRequest(
        "sequence_counter", None, inputs, {"IN": "INT32", "DELAY": "INT32"}, parameters=parameters
    )


def _out(item: StreamResponse) -> list[int]:
    assert item.error is None and item.response is not None
    return [int(v) for v in item.response.outputs[0].data.ravel()]


@_in_a_loop
async def test_a_decoupled_sequence_model_streams_each_request_s_responses_in_order(
    tmp_path: Path,
) -> None:
    """Each request of a sequence reaches the model with its correlation id, flags and
    CORRID input, after the one before it; its responses come as the model sends them,
    then its FINAL; a plain call is refused as for any decoupled model."""
    sequence_counter(tmp_path)
    write_python_model(tmp_path, "with_state", SEQUENCE_COUNTER, """
        backend: "python"
        max_batch_size: 4
        model_transaction_policy { decoupled: true }
        input [{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        sequence_batching {
          state [{ input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 1 ] }]
        }
        """)  # fmt: skip
    plans = {sid: [sid % 3 + 1, 0, 2] for sid in range(1, 7)}  # responses per request

    async def run(sid: int, counts: list[int]) -> list[list[int]]:
        outs = []
        for index, count in enumerate(counts):
            await asyncio.sleep(random.random() / 100)
            request = _counter_request(sid, count, start=index == 0, end=index == len(counts) - 1)
            items = [item async for item in dp.infer_stream(request)]
            assert items[-1].final and items[-1].response is None
            outs += [_out(item) for item in items[:-1]]
            assert not any(item.final for item in items[:-1])
        return outs

    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        got = await asyncio.gather(*(run(sid, counts) for sid, counts in plans.items()))
        for (sid, counts), outs in zip(plans.items(), got, strict=True):
            flags = [1] * counts[0] + [0] * counts[1] + [2] * counts[2]
            assert outs == [[n + 1, flag, sid] for n, flag in enumerate(flags)], sid
        with pytest.raises(ModelyardError) as plain:
            await dp.infer(_counter_request(99, 1, start=True))
        assert plain.value.code is Code.UNIMPLEMENTED
        assert "is decoupled" in plain.value.line() and "ModelStreamInfer" in plain.value.line()
        with pytest.raises(ModelyardError, match="must specify the START flag"):
            [item async for item in dp.infer_stream(_counter_request(98, 1))]
        scheduler = dp.manager.resolve("sequence_counter", None).scheduler
        assert isinstance(scheduler, SequenceScheduler)
        assert scheduler.pending == 0  # every request reached its FINAL
        for _ in range(100):  # an END's slot is free once its execute has returned
            if scheduler.active_sequences == 0:
                break
            await asyncio.sleep(0.01)
        assert scheduler.active_sequences == 0
        stats = dp.statistics("sequence_counter", None)["model_stats"][0]
        assert stats["inference_count"] == 3 * len(plans)
        refused = {entry["name"]: entry for entry in dp.manager.index()}["with_state"]
        assert refused["state"] == "UNAVAILABLE"
        assert "implicit state (sequence_batching.state) is not served for a decoupled model" in (
            refused["reason"]
        )


@pytest.mark.parametrize("preserve", [True, False])
@_in_a_loop
async def test_a_decoupled_sequence_model_s_responses_keep_their_turn_with_preserve_ordering(
    tmp_path: Path, preserve: bool
) -> None:
    """Sequence 1's request, taken first on one instance, sends three responses 100 ms apart;
    sequence 2's, taken after on the other, sends two at once: with preserve_ordering they
    wait until sequence 1's request has sent its FINAL."""
    sequence_counter(
        tmp_path, oldest=f"preserve_ordering: {str(preserve).lower()}", instances=2
    )
    seen: list[tuple[int, bool]] = []

    async def stream(sid: int, count: int, delay: int) -> None:
        request = _counter_request(sid, count, delay, start=True, end=True)
        async for item in dp.infer_stream(request):
            seen.append((sid, item.final))

    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        first = asyncio.ensure_future(stream(1, 3, 100))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(asyncio.gather(first, stream(2, 2, 0)), 10)
    assert sorted(seen) == sorted([(1, False)] * 3 + [(1, True), (2, False), (2, False), (2, True)])
    if preserve:
        assert seen[:4] == [(1, False)] * 3 + [(1, True)]
    else:
        assert seen.index((2, True)) < seen.index((1, True))  # sent while 1 was sending


def _sleeping_direct(repository: Path) -> None:
    write_python_model(repository, "sleeping", SLEEPING, """
        backend: "python"
        max_batch_size: 1
        instance_group [{ kind: KIND_CPU count: 1 }]
        input [{ name: "DELAY" data_type: TYPE_INT32 dims: [ 1 ] }]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }]
        sequence_batching { direct { } }
        """)  # fmt: skip


@_in_a_loop
async def test_a_cancelled_queued_request_cancels_its_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Triton (qa/L0_request_cancellation): a queued request whose caller cancels it
    cancels its sequence: it and the requests after it are answered CANCELLED, each a
    CANCELED failure, the sequence's id is forgotten and its slot given back; a sequence in
    the backlog is cancelled whole. The request executing is answered."""
    monkeypatch.setattr(sequence_batcher, "CANCELLED_CHECK_S", 0.05)
    _sleeping_direct(tmp_path)
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        gone = asyncio.Event()

        async def send(sid: int, delay: int, start: bool, cancelled: bool = False) -> Any:
            if cancelled:
                CALLER_GONE.set(gone.is_set)
            request = InferRequest(
                "sleeping", None, {"DELAY": np.array([[delay]], dtype=np.int32)},
                {"DELAY": "INT32"}, parameters={"sequence_id": sid, "sequence_start": start},
            )  # fmt: skip
            return await dp.infer(request)

        running = asyncio.ensure_future(send(1, 400, True))
        await asyncio.sleep(0.1)
        queued = [
            asyncio.ensure_future(send(1, 1, False, cancelled=True)),
            asyncio.ensure_future(send(1, 1, False)),
            asyncio.ensure_future(send(2, 1, True)),  # the backlog: the only slot is held
            asyncio.ensure_future(send(2, 1, False, cancelled=True)),
        ]
        await asyncio.sleep(0.1)
        assert not any(task.done() for task in queued)
        gone.set()
        for task in queued:
            with pytest.raises(ModelyardError) as caught:
                await asyncio.wait_for(task, 2)
            assert caught.value.code is Code.CANCELLED
            assert "rule=model-server/sequence-cancelled" in caught.value.line()
        assert not running.done()  # the executing request is answered after them
        await asyncio.wait_for(running, 2)
        with pytest.raises(ModelyardError, match="START flag"):
            await send(1, 1, False)  # its id is forgotten
        assert await send(3, 1, True) is not None  # the slot was given back
        scheduler = dp.manager.resolve("sleeping", None).scheduler
        assert scheduler.stats.fail_by_reason["CANCELED"] == 4
