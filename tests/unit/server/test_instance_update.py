"""Triton's instance update: a reload that changes only instance groups adds and removes
instances of the version that serves (server/instance_update.py).

The model is ``sequence_accumulator`` (tests/support/models.py): an ONNX running sum whose
state the server carries between a sequence's requests, so a sequence that goes on across
an update shows the version was not loaded again.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import ModelyardError
from modelyard.modelfiles.config import parse_json_config, parse_model_config
from modelyard.modelfiles.repository import ModelRepository
from modelyard.modelfiles.served_config import served_config
from modelyard.server.instance_update import kept_instances, only_instances_differ
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.server.model_version import InstanceMaker, ModelVersion
from modelyard.server.resource_limiter import InstanceNeeds, ResourceLimiter
from modelyard.types import InferRequest
from tests.support.models import sequence_accumulator, slow_double

MODEL = "accumulator"


def _group(text: str) -> mc.ModelInstanceGroup:
    return parse_model_config(f"instance_group [{{ {text} }}]").instance_group[0]


def test_an_instance_is_kept_where_the_new_config_has_one_of_its_signature() -> None:
    cpu = _group('name: "a" kind: KIND_CPU count: 2')
    renamed = _group('name: "b" kind: KIND_CPU count: 3')
    auto = _group("kind: KIND_AUTO count: 1")
    limited = _group('kind: KIND_CPU rate_limiter { resources [{ name: "R" count: 1 }] }')
    old = [("cpu", cpu), ("cpu", cpu)]
    # a group's name and count are not what an instance is: the two are kept, one added
    assert kept_instances(old, [("cpu", renamed)] * 3) == [0, 1, None]
    assert kept_instances(old, [("cpu", renamed)]) == [0]
    assert kept_instances(old, [("cpu", auto)]) == [0]  # KIND_AUTO on a CPU is KIND_CPU
    # groups listed in another order keep theirs
    other = _group('kind: KIND_CPU profile: ["other"]')
    assert kept_instances([("cpu", cpu), ("cpu", other)], [("cpu", other), ("cpu", cpu)]) == [1, 0]
    # what it holds, or where it is, is: replaced
    assert kept_instances(old, [("cpu", limited)]) == [None]
    assert kept_instances(old, [("cuda:0", cpu)]) == [None]


def test_only_instance_groups_and_version_policy_may_differ() -> None:
    base = parse_model_config('name: "m" max_batch_size: 4 instance_group [{ count: 1 }]')
    more = parse_model_config(
        'name: "m" max_batch_size: 4 instance_group [{ count: 3 }] '
        "version_policy { latest { num_versions: 2 } }"
    )
    batched = parse_model_config('name: "m" max_batch_size: 8 instance_group [{ count: 1 }]')
    assert only_instances_differ(base, more)
    assert not only_instances_differ(base, batched)
    # the config as served (Triton's defaults filled in), read back and loaded again
    assert only_instances_differ(base, served_config(more))


def _needs(name: str, count: int) -> InstanceNeeds:
    return InstanceNeeds(resources=(((name, "cpu"), count),), priority=0)


def test_an_instance_removed_gives_back_the_count_it_alone_asked_for() -> None:
    four, three = _needs("R1", 4), _needs("R1", 3)
    limiter = ResourceLimiter()
    limiter.add([four])
    limiter.add([three])
    assert limiter.available() == {("R1", "cpu"): 4}
    with capture_logs() as logs:
        limiter.remove([four])
    assert limiter.available() == {("R1", "cpu"): 3}
    # Triton's verbose account ("Max Resource Map"), which its log writes escaped
    assert "\t\tResource: R1\t Count: 3\n" in logs[-1]["triton"]
    limiter.remove([three])
    assert limiter.available() == {("R1", "cpu"): 0}
    sized = ResourceLimiter([("R1", 10, None)])
    sized.add([four])
    sized.remove([four])
    assert sized.available() == {("R1", "cpu"): 10}  # a flag's count stays as given


def _request(value: int, sequence: int, start: bool = False, end: bool = False) -> InferRequest:
    parameters: dict[str, Any] = {"sequence_id": sequence}
    if start:
        parameters["sequence_start"] = True
    if end:
        parameters["sequence_end"] = True
    return InferRequest(
        MODEL, None, {"INPUT": np.array([[value]], dtype=np.int32)}, {"INPUT": "INT32"},
        parameters=parameters,
    )  # fmt: skip


async def _sum(dp: LocalDataPlane, value: int, sequence: int, **flags: bool) -> int:
    response = await dp.infer(_request(value, sequence, **flags))
    return int(response.outputs[0].data.ravel()[0])


def _groups(model_dir: Path, groups: str) -> None:
    config = model_dir / "config.pbtxt"
    text = config.read_text()
    start = text.index("instance_group")
    end = text.index("]", start) + 1
    config.write_text(text[:start] + f"instance_group [{groups}]" + text[end:])


def _serving(dp: LocalDataPlane) -> ModelVersion:
    return dp.manager.resolve(MODEL, None)


def _run(
    tmp_path: Path,
    scenario: Callable[[LocalDataPlane, Path], Awaitable[None]],
    limiter: ResourceLimiter | None = None,
    instances: int = 2,
) -> None:
    model_dir = sequence_accumulator(tmp_path, instances=instances)

    async def main() -> None:
        manager = ModelManager(
            ModelRepository(tmp_path), ControlMode.EXPLICIT, startup_models=[MODEL],
            rate_limiter=limiter,
        )  # fmt: skip
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            await scenario(dp, model_dir)
        finally:
            await manager.stop()

    asyncio.run(main())


def test_more_instances_join_the_version_that_serves(tmp_path: Path) -> None:
    async def scenario(dp: LocalDataPlane, model_dir: Path) -> None:
        before = _serving(dp)
        engines = list(before.engines)
        assert await _sum(dp, 5, 1, start=True) == 5
        _groups(model_dir, "{ kind: KIND_CPU count: 3 }")
        await dp.manager.load(MODEL)
        after = _serving(dp)
        assert after is before  # not loaded again
        assert after.engines[:2] == engines and len(after.engines) == 3
        assert after.config.instance_group[0].count == 3
        assert await _sum(dp, 2, 1) == 7  # the sequence goes on
        # three sequences at once: one on each instance, the new one's too
        starts = await asyncio.gather(*(_sum(dp, n, 10 + n, start=True) for n in range(3)))
        assert starts == [0, 1, 2]
        assert await _sum(dp, 1, 1, end=True) == 8

    _run(tmp_path, scenario)


def test_a_removed_instance_serves_its_sequences_until_they_end(tmp_path: Path) -> None:
    async def scenario(dp: LocalDataPlane, model_dir: Path) -> None:
        mv = _serving(dp)
        old = list(mv.engines)
        assert await _sum(dp, 1, 1, start=True) == 1  # instance 0
        assert await _sum(dp, 2, 2, start=True) == 2  # instance 1
        # another group (its profile differs): both instances go, one new one comes
        _groups(model_dir, '{ kind: KIND_CPU count: 1 profile: ["other"] }')
        await dp.manager.load(MODEL)
        assert _serving(dp) is mv and len(mv.engines) == 1 and mv.engines[0] not in old
        assert await _sum(dp, 10, 1) == 11  # on the instances removed, still
        assert await _sum(dp, 20, 2) == 22
        assert await _sum(dp, 3, 3, start=True) == 3  # a new sequence: the new instance
        threads = [t for t in mv.scheduler._threads]  # type: ignore[attr-defined]
        assert len(threads) == 3 and all(t.is_alive() for t in threads)
        assert await _sum(dp, 0, 1, end=True) == 11
        assert await _sum(dp, 0, 2, end=True) == 22
        for _ in range(200):  # each ends once its sequence has
            if not any(t.is_alive() for t in threads[:2]):
                break
            await asyncio.sleep(0.01)
        assert [t.is_alive() for t in threads] == [False, False, True]
        assert await _sum(dp, 4, 3, end=True) == 7

    _run(tmp_path, scenario)


def test_a_refused_update_leaves_the_version_as_it_was(tmp_path: Path) -> None:
    async def scenario(dp: LocalDataPlane, model_dir: Path) -> None:
        mv = _serving(dp)
        engines, config = list(mv.engines), mv.config
        _groups(model_dir, '{ kind: KIND_CPU count: 2 rate_limiter { resources [{ name: "R" count: 4 }] } }')  # noqa: E501
        with pytest.raises(ModelyardError, match='Resource count for "R" is limited to 2'):
            await dp.manager.load(MODEL)
        assert _serving(dp) is mv and mv.engines == engines and mv.config is config
        assert await _sum(dp, 6, 1, start=True, end=True) == 6

    _run(tmp_path, scenario, limiter=ResourceLimiter([("R", 2, None)]))


def test_the_load_api_s_config_updates_instances_and_other_changes_reload(tmp_path: Path) -> None:
    async def scenario(dp: LocalDataPlane, model_dir: Path) -> None:
        mv = _serving(dp)
        document = copy.deepcopy(mv.config_document())  # what GET .../config answers
        document["instance_group"][0]["count"] = 2
        await dp.manager.load(MODEL, override=parse_json_config(document))
        assert _serving(dp) is mv and len(mv.engines) == 2
        document["max_batch_size"] = 4  # more than instances: loaded again
        await dp.manager.load(MODEL, override=parse_json_config(document))
        assert _serving(dp) is not mv and _serving(dp).config.max_batch_size == 4

    _run(tmp_path, scenario, instances=1)


def test_instances_removed_under_traffic_finish_their_batch_and_none_fails(
    tmp_path: Path,
) -> None:
    model_dir = slow_double(tmp_path, delay=0.01)
    config = model_dir / "config.pbtxt"
    config.write_text(config.read_text() + "instance_group [{ kind: KIND_CPU count: 3 }]\n")

    async def main() -> None:
        manager = ModelManager(
            ModelRepository(tmp_path), ControlMode.EXPLICIT, startup_models=["slow_double"]
        )
        dp = LocalDataPlane(manager)
        await manager.start()
        mv = manager.resolve("slow_double", None)
        threads = list(mv.scheduler._threads)  # type: ignore[attr-defined]
        stop = asyncio.Event()

        async def caller() -> int:
            answered = 0
            while not stop.is_set():
                request = InferRequest(
                    "slow_double", None, {"x": np.ones((1, 2), np.float32)}, {"x": "FP32"}
                )
                response = await dp.infer(request)
                assert response.outputs[0].data.tolist() == [[1002.0, 1002.0]]
                answered += 1
            return answered

        try:
            callers = [asyncio.create_task(caller()) for _ in range(6)]
            await asyncio.sleep(0.2)
            config.write_text(config.read_text().replace("count: 3", "count: 1"))
            await manager.load("slow_double")
            # the two removed have stopped by the time the load answers
            assert [t.is_alive() for t in threads] == [True, False, False]
            assert manager.resolve("slow_double", None) is mv and len(mv.engines) == 1
            await asyncio.sleep(0.2)
            stop.set()
            assert all(n > 0 for n in await asyncio.gather(*callers))
        finally:
            stop.set()
            await manager.stop()

    asyncio.run(main())


def test_an_instance_that_fails_to_load_fails_the_update_and_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine's own error (not one of modelyard's) is the load's answer, in its words,
    and the version serves on with what it had."""

    def broken(self: InstanceMaker, index: int, device: str, config: mc.ModelConfig) -> None:
        raise OSError("the device is gone")

    async def scenario(dp: LocalDataPlane, model_dir: Path) -> None:
        mv = _serving(dp)
        engines = list(mv.engines)
        monkeypatch.setattr(InstanceMaker, "make", broken)
        _groups(model_dir, "{ kind: KIND_CPU count: 3 }")
        with pytest.raises(ModelyardError, match="OSError: the device is gone") as failed:
            await dp.manager.load(MODEL)
        assert "rule=model-server/load" in failed.value.line()
        assert _serving(dp) is mv and mv.engines == engines
        assert await _sum(dp, 4, 1, start=True, end=True) == 4

    _run(tmp_path, scenario)
