"""Model manager and dataplane in one process: versions, swaps, unloads, failures."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.errors import Code, ModelyardError
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.types import InferRequest
from tests.support.models import failing, slow_double


def run(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro_fn())  # type: ignore[arg-type]


def request(version: str | None = None, timeout_us: int = 0) -> InferRequest:
    return InferRequest(
        model_name="slow_double",
        model_version=version,
        inputs={"x": np.array([[1.0, 2.0]], dtype=np.float32)},
        input_datatypes={"x": "FP32"},
        timeout_us=timeout_us,
    )


def make(repo: Path, mode: ControlMode = ControlMode.NONE, **kw: Any) -> LocalDataPlane:
    return LocalDataPlane(ModelManager(ModelRepository(repo), mode, **kw))


def test_unversioned_requests_go_to_the_highest_ready_version(tmp_path: Path) -> None:
    model_dir = slow_double(tmp_path, versions=(1, 3))
    text = (model_dir / "config.pbtxt").read_text().replace("latest { num_versions: 1 }", "all {}")
    (model_dir / "config.pbtxt").write_text(text)

    async def scenario() -> None:
        dp = make(tmp_path)
        await dp.manager.start()
        try:
            latest = await dp.infer(request())
            first = await dp.infer(request("1"))
            assert latest.model_version == "3"
            assert latest.outputs[0].data.tolist() == [[3002.0, 3004.0]]
            assert first.outputs[0].data.tolist() == [[1002.0, 1004.0]]
            with pytest.raises(ModelyardError) as missing:
                dp.manager.resolve("slow_double", "2")
            assert missing.value.code is Code.NOT_FOUND
            assert missing.value.line().startswith(
                "Request for unknown model: 'slow_double' version 2 is not found (ready: 3, 1); "
            )
        finally:
            await dp.manager.stop()

    run(scenario)


def test_new_version_takes_over_while_the_old_one_finishes_in_flight(tmp_path: Path) -> None:
    slow_double(tmp_path, delay=0.4)

    async def scenario() -> None:
        dp = make(tmp_path, ControlMode.POLL, poll_secs=3600)
        await dp.manager.start()
        try:
            in_flight = asyncio.create_task(dp.infer(request()))
            await asyncio.sleep(0.1)  # the v1 request is executing
            shutil.copytree(tmp_path / "slow_double" / "1", tmp_path / "slow_double" / "2")
            await dp.manager.poll_once()
            with pytest.raises(ModelyardError) as unloading:
                dp.manager.resolve("slow_double", "1")
            assert unloading.value.code is Code.UNAVAILABLE
            assert "'slow_double' version 1 is not at ready state (unloading)" in (
                unloading.value.line()
            )
            assert dp.in_flight == 1  # the retiring version's request counts until answered
            after = await dp.infer(request())
            before = await in_flight
            assert before.model_version == "1"
            assert before.outputs[0].data.tolist() == [[1002.0, 1004.0]]
            assert after.model_version == "2"
            assert after.outputs[0].data.tolist() == [[2002.0, 2004.0]]
            ready = [
                {k: row[k] for k in ("name", "version", "state", "reason")}
                for row in dp.manager.index()
                if "memory_bytes" in row
            ]
            assert {"name": "slow_double", "version": "2", "state": "READY", "reason": ""} in ready
        finally:
            await dp.manager.stop()

    run(scenario)


def test_explicit_unload_flips_readiness_at_once_and_in_flight_completes(tmp_path: Path) -> None:
    slow_double(tmp_path, delay=0.3)

    async def scenario() -> None:
        dp = make(tmp_path, ControlMode.EXPLICIT)
        await dp.manager.start()
        assert dp.manager.index() == [{"name": "slow_double"}]
        await dp.manager.load("slow_double")
        assert dp.model_ready("slow_double", None)
        in_flight = asyncio.create_task(dp.infer(request()))
        await asyncio.sleep(0.05)
        await dp.manager.unload("slow_double")
        assert not dp.model_ready("slow_double", None)
        assert (await in_flight).outputs[0].data.tolist() == [[1002.0, 1004.0]]
        await dp.manager.stop()
        with pytest.raises(ModelyardError) as gone:
            await dp.infer(request())
        assert gone.value.code is Code.NOT_FOUND
        assert dp.manager.index() == [
            {"name": "slow_double", "state": "UNAVAILABLE", "reason": "unloaded"}
        ]

    run(scenario)


def test_load_and_unload_are_refused_outside_explicit_mode(tmp_path: Path) -> None:
    slow_double(tmp_path)

    async def scenario() -> None:
        for mode in (ControlMode.NONE, ControlMode.POLL):
            dp = make(tmp_path, mode)
            await dp.manager.start()
            for action in (dp.manager.load, dp.manager.unload):
                with pytest.raises(ModelyardError) as refused:
                    await action("slow_double")
                assert refused.value.code is Code.UNAVAILABLE
                assert "change: serve with --model-control-mode explicit" in refused.value.line()
            assert dp.model_ready("slow_double", None)
            await dp.manager.stop()

    run(scenario)


def test_a_broken_model_shows_its_reason_and_the_others_keep_serving(tmp_path: Path) -> None:
    slow_double(tmp_path)
    broken = tmp_path / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "model.onnx").write_bytes(b"not an onnx file")
    bad_config = tmp_path / "bad_config"
    (bad_config / "1").mkdir(parents=True)
    (bad_config / "config.pbtxt").write_text('backend: "python"\nmax_batch_size: "four"\n')

    async def scenario() -> None:
        dp = make(tmp_path)
        await dp.manager.start()
        try:
            rows = {(r["name"], r.get("version")): r for r in dp.manager.index()}
            assert rows[("broken", "1")]["state"] == "UNAVAILABLE"
            assert "onnxruntime could not load model.onnx" in rows[("broken", "1")]["reason"]
            assert rows[("bad_config", None)]["state"] == "UNAVAILABLE"
            assert "config.pbtxt:2" in rows[("bad_config", None)]["reason"]
            assert not dp.server_ready()  # strict readiness, as Triton's default
            assert (await dp.infer(request())).outputs[0].data.tolist() == [[1002.0, 1004.0]]
        finally:
            await dp.manager.stop()

    run(scenario)


def test_without_strict_readiness_a_broken_model_leaves_the_server_ready(tmp_path: Path) -> None:
    slow_double(tmp_path)
    (tmp_path / "broken" / "1").mkdir(parents=True)
    (tmp_path / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx file")

    async def scenario() -> None:
        dp = make(tmp_path, strict_readiness=False, load_threads=2)
        assert not dp.server_ready()  # not started yet
        await dp.manager.start()
        try:
            assert dp.server_ready()  # --strict-readiness false: up is ready
            assert not dp.model_ready("broken", None)
            assert (await dp.infer(request())).outputs[0].data.tolist() == [[1002.0, 1004.0]]
        finally:
            await dp.manager.stop()

    run(scenario)


def test_a_request_whose_timeout_passed_in_queue_is_dropped_not_computed(tmp_path: Path) -> None:
    slow_double(tmp_path, delay=0.3)

    async def scenario() -> None:
        dp = make(tmp_path)
        await dp.manager.start()
        try:
            busy = asyncio.create_task(dp.infer(request()))
            await asyncio.sleep(0.05)
            with pytest.raises(ModelyardError) as late:
                await dp.infer(request(timeout_us=50_000))
            assert late.value.code is Code.UNAVAILABLE  # Triton: queue timeout is 503
            assert not busy.done()  # answered at its timeout, not once the instance is free
            assert late.value.line().startswith("Request timeout expired: ")  # Triton's words
            assert "timed out after" in late.value.line()
            assert "dropped before execution" in late.value.line()
            await busy
            stats = dp.statistics("slow_double", None)["model_stats"][0]
            assert stats["inference_count"] == 1  # the late request never ran
            assert stats["inference_stats"]["fail"]["count"] == 1
        finally:
            await dp.manager.stop()

    run(scenario)


def test_engine_errors_reach_the_caller_with_the_model_named(tmp_path: Path) -> None:
    failing(tmp_path)

    async def scenario() -> None:
        dp = make(tmp_path)
        await dp.manager.start()
        try:
            with pytest.raises(ModelyardError) as error:
                await dp.infer(
                    InferRequest("failing", None, {"x": np.ones((1, 1), np.float32)}, {"x": "FP32"})
                )
            assert error.value.layer == "engine"
            assert "the model refuses negative input" in error.value.line()
        finally:
            await dp.manager.stop()

    run(scenario)


def test_statistics_of_a_model_or_version_not_ready_are_refused_in_tritons_words(
    tmp_path: Path,
) -> None:
    """Triton answers statistics for ready versions only: a model without one, or a version
    that is not ready, is INVALID_ARG in its words (a 400, not a 404)."""
    slow_double(tmp_path, versions=(1, 3))  # latest: version 3 loads

    async def scenario() -> None:
        dp = make(tmp_path)
        await dp.manager.start()
        try:
            assert [s["version"] for s in dp.statistics("slow_double", "3")["model_stats"]] == [
                "3"
            ]
            for name, version, said in (
                ("nope", None, "requested model 'nope' is not available; "),
                ("slow_double", "1",
                 "requested model version is not available for model 'slow_double'; "),
            ):  # fmt: skip
                with pytest.raises(ModelyardError) as refused:
                    dp.statistics(name, version)
                assert refused.value.code is Code.INVALID_ARGUMENT
                assert refused.value.line().startswith(said)
                assert "rule=model-server/statistics" in refused.value.line()
        finally:
            await dp.manager.stop()

    run(scenario)
