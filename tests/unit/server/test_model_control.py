"""A model's own repository calls (server/model_control.py): the load API's path, its
checks and its words; what is bounded; what auth allows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from modelyard.errors import Code, GovernanceError, ModelyardError
from modelyard.governance.auth import AuthConfig, Principal
from modelyard.governance.runtime import Governance
from modelyard.governance.service_config import empty_service_config
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server import model_control
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from tests.support.models import simple_add_sub, slow_double, times_ten, write_python_model

CONFIG = json.dumps({
    "backend": "python", "max_batch_size": 16,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}],
    "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [2]}],
})  # fmt: skip


async def _served(tmp_path: Path) -> LocalDataPlane:
    repository = tmp_path / "models"
    slow_double(repository)
    times_ten(repository, "other")
    dp = LocalDataPlane(ModelManager(ModelRepository(repository), ControlMode.EXPLICIT))
    await dp.manager.start()
    return dp


def _call(dp: LocalDataPlane, kind: str, principals: tuple[str, ...] = (), **arguments: Any) -> Any:
    """As a stub's parent calls it: from a thread, not the loop's."""
    return asyncio.to_thread(dp.model_control, kind, arguments, principals, "caller")


def test_a_model_loads_reloads_and_unloads_others_as_the_load_api_does(tmp_path: Path) -> None:
    async def scenario() -> None:
        dp = await _served(tmp_path)
        try:
            assert await _call(dp, "ready", name="other", version="") is False
            assert await _call(dp, "load", name="other", config="", files={}) is None
            assert await _call(dp, "ready", name="other", version="1") is True
            assert await _call(dp, "ready", name="other", version=" 2") is False
            # file overrides under a new name: written by the load path, with the config
            onnx = (simple_add_sub(tmp_path / "made") / "1" / "model.onnx").read_bytes()
            await _call(dp, "load", name="adder", config='{"backend":"onnxruntime"}',
                        files={"file:3/model.onnx": onnx})  # fmt: skip
            assert await _call(dp, "ready", name="adder", version="3") is True
            assert await _call(dp, "ready", name="adder", version="1") is False
            await _call(dp, "unload", name="other", unload_dependents=False)
            assert await _call(dp, "ready", name="other", version="") is False
        finally:
            await dp.manager.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("kind", "arguments", "words"),
    [
        ("ready", {"name": "other", "version": "x1"},
         "failed to get model version from specified version string 'x1' (details: stol), "
         "version should be an integral value > 0"),
        ("ready", {"name": "other", "version": "1" * 5000},
         "(details: stol), version should be an integral value > 0"),
        ("ready", {"name": "other", "version": "-2"},
         "failed to get model version from specified version string '-2', version should be "
         "an integral value > 0"),
        ("load", {"name": "caller", "config": "", "files": {}},
         "model 'caller' asked to load itself"),
        ("unload", {"name": "caller"}, "model 'caller' asked to unload itself"),
        ("load", {"name": "other", "config": "", "files": {"config": b"{}"}},
         "failed to load 'other', Unrecognized load parameter 'config' with type 'BYTES'"),
        ("load", {"name": "other", "config": "", "files": {"file:1/model.py": b"x"}},
         "file overrides need the 'config' parameter"),
        ("load", {"name": "other", "config": CONFIG, "files": {"file:1/../../x.py": b"x"}},
         "is not <version>/<file>"),
        ("load", {"name": "other", "config": '"parameters": {', "files": {}},
         "failed to load 'other', Invalid config override"),
        ("load", {"name": "x" * 1025, "config": "", "files": {}},
         "a model name of 1 to 1024 characters, not 1025 characters"),
        ("load", {"name": "other", "config": "", "files": {"file:1/a": b"x" * 1025}},
         "more than the 1024 a model's load may give"),
        ("drop", {"name": "other"}, "no model control call 'drop'"),
    ],
)  # fmt: skip
def test_what_a_model_asks_is_checked_and_refused_in_the_load_api_s_words(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    arguments: dict[str, Any],
    words: str,
) -> None:
    monkeypatch.setattr(model_control, "MAX_LOAD_BYTES", 1024)

    async def scenario() -> None:
        dp = await _served(tmp_path)
        try:
            with pytest.raises(ModelyardError) as refused:
                await _call(dp, kind, **arguments)
            assert refused.value.code in (Code.INVALID_ARGUMENT, Code.RESOURCE_EXHAUSTED)
            assert words in refused.value.line()
            assert not dp.model_ready("other", None)  # nothing loaded
        finally:
            await dp.manager.stop()

    asyncio.run(scenario())


def test_a_call_from_the_event_loop_s_thread_is_refused(tmp_path: Path) -> None:
    async def scenario() -> None:
        dp = await _served(tmp_path)
        try:
            with pytest.raises(ModelyardError, match="only while it serves"):
                dp.model_control("load", {"name": "other"}, (), "caller")
        finally:
            await dp.manager.stop()

    asyncio.run(scenario())


def test_with_auth_on_a_model_s_call_is_for_its_callers_who_must_be_allowed_it(
    tmp_path: Path,
) -> None:
    config = empty_service_config("svc")
    allow = {"admin": ("other",), "health": ("other",), "infer": ("other",)}
    config.auth = AuthConfig(enabled=True, by_digest={"d": Principal("ops", allow),
                                                       "e": Principal("reader", {})})  # fmt: skip

    async def scenario() -> None:
        dp = await _served(tmp_path)
        dp.model_control.authorize = Governance(config).authorize_model_control("service 'svc'")
        try:
            with pytest.raises(GovernanceError) as refused:  # from initialize: no caller
                await _call(dp, "load", name="other", config="", files={})
            assert refused.value.code is Code.PERMISSION_DENIED
            assert "is for no known caller, and auth is on" in refused.value.line()
            with pytest.raises(GovernanceError) as refused:
                await _call(dp, "load", ("ops", "reader"), name="other", config="", files={})
            assert "principal 'reader' may not call interface admin for model 'other'" in (
                refused.value.line()
            )
            assert "asks for from its own code (pb_utils)" in refused.value.line()
            with pytest.raises(GovernanceError):
                await _call(dp, "ready", ("reader",), name="other", version="")
            # a config that reaches a model the caller may not use: refused before a write
            ensemble = json.dumps({
                "platform": "ensemble", "max_batch_size": 16,
                "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}],
                "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [2]}],
                "ensemble_scheduling": {"step": [{
                    "model_name": "slow_double", "model_version": -1,
                    "input_map": {"x": "x"}, "output_map": {"y": "y"}}]},
            })  # fmt: skip
            with pytest.raises(GovernanceError, match="for model 'slow_double'"):
                await _call(dp, "load", ("ops",), name="other", config=ensemble, files={})
            await _call(dp, "load", ("ops",), name="other", config="", files={})
            assert await _call(dp, "ready", ("ops",), name="other", version="") is True
        finally:
            await dp.manager.stop()

    asyncio.run(scenario())


LOADS_FROM_INITIALIZE = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        pb_utils.load_model({target!r})

    def execute(self, requests):
        return [None for request in requests]
"""
PYTHON_CONFIG = """
backend: "python"
max_batch_size: 16
input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
"""


def test_a_load_asked_from_initialize_runs_with_a_single_load_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the asking model's load holds the one load thread while its initialize waits
    monkeypatch.setattr(model_control, "CONTROL_TIMEOUT_S", 20.0)
    repository = tmp_path / "models"
    times_ten(repository, "other")
    write_python_model(repository, "loader", LOADS_FROM_INITIALIZE.format(target="other"),
                       PYTHON_CONFIG)  # fmt: skip

    async def scenario() -> None:
        manager = ModelManager(ModelRepository(repository), ControlMode.EXPLICIT, load_threads=1)
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            await asyncio.wait_for(manager.load("loader"), 15)
            assert dp.model_ready("other", None) and dp.model_ready("loader", None)
        finally:
            await manager.stop()

    asyncio.run(scenario())


def test_models_that_load_each_other_are_refused_at_once_not_left_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_control, "CONTROL_TIMEOUT_S", 60.0)
    repository = tmp_path / "models"
    write_python_model(repository, "a", LOADS_FROM_INITIALIZE.format(target="b"), PYTHON_CONFIG)
    write_python_model(repository, "b", LOADS_FROM_INITIALIZE.format(target="a"), PYTHON_CONFIG)

    async def scenario() -> None:
        manager = ModelManager(ModelRepository(repository), ControlMode.EXPLICIT)
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            with pytest.raises(ModelyardError) as refused:  # at once, not after the timeout
                await asyncio.wait_for(manager.load("a"), 20)
            line = refused.value.line()
            assert "model 'b' asked to load 'a', whose load or unload under way waits for " \
                   "'b' itself" in line, line  # fmt: skip
            assert "rule=model-server/model-control" in line, line
            assert not dp.model_ready("a", None) and not dp.model_ready("b", None)
        finally:
            await manager.stop()

    asyncio.run(scenario())
