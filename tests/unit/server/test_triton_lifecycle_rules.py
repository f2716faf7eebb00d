"""The model repository's lifecycle as Triton's QA suite (L0_lifecycle) pins it down: what
a request for a model that is not serving is told, that a load serves all its versions or
none, which versions a reload keeps, and models listed in two repositories."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from modelyard.errors import Code, ModelyardError
from modelyard.modelfiles.config import parse_json_config
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from tests.support.dataplane import run_on_dataplane as run
from tests.support.models import slow_double

ALL_VERSIONS = "version_policy { all {} }"


def two_versions(root: Path) -> Path:
    model = slow_double(root, versions=(1, 2))
    config = model / "config.pbtxt"
    latest = "version_policy { latest { num_versions: 1 } }"
    config.write_text(config.read_text().replace(latest, ALL_VERSIONS))
    return model


def refusal(dp: LocalDataPlane, name: str, version: str | None) -> ModelyardError:
    with pytest.raises(ModelyardError) as refused:
        dp.manager.resolve(name, version)
    return refused.value


def test_a_model_once_known_has_no_available_versions_and_a_stranger_is_not_found(
    tmp_path: Path,
) -> None:
    model = two_versions(tmp_path)

    async def scenario(dp: LocalDataPlane) -> None:
        await dp.manager.unload("slow_double")
        gone = refusal(dp, "slow_double", None)
        assert gone.line().startswith(
            "Request for unknown model: 'slow_double' has no available versions (unloaded); "
            "rule=model-server/no-ready-version"
        )
        assert gone.code is Code.NOT_FOUND
        assert "version 1 is not at ready state" in refusal(dp, "slow_double", "1").line()
        assert "'stranger' is not found" in refusal(dp, "stranger", None).line()
        await dp.manager.load("slow_double")
        shutil.rmtree(model / "1")
        (model / "config.pbtxt").write_text(
            (model / "config.pbtxt").read_text().replace(ALL_VERSIONS, "")
        )
        await dp.manager.load("slow_double")  # version 1 is gone: it was known
        assert "version 1 is not at ready state" in refusal(dp, "slow_double", "1").line()
        assert "version 7 is not found" in refusal(dp, "slow_double", "7").line()

    run(scenario, [tmp_path], mode=ControlMode.EXPLICIT, startup_models=["*"])


def test_a_load_whose_version_fails_serves_none_of_it_and_keeps_what_served(
    tmp_path: Path,
) -> None:
    model = two_versions(tmp_path)

    async def scenario(dp: LocalDataPlane) -> None:
        for file in (model / "2").iterdir():
            file.unlink()
        with pytest.raises(ModelyardError) as refused:
            await dp.manager.load("slow_double")  # version 2 changed: it reloads, and fails
        line = refused.value.line()
        assert line.startswith(
            "load failed for model 'slow_double': version 2 is at UNAVAILABLE state: "
        ), line
        assert dp.model_ready("slow_double", "1") and dp.model_ready("slow_double", "2")
        await dp.manager.unload("slow_double")
        with pytest.raises(ModelyardError):
            await dp.manager.load("slow_double")  # a first load: version 1 does not serve
        assert not dp.model_ready("slow_double", "1")
        assert "has no available versions" in refusal(dp, "slow_double", None).line()
        with pytest.raises(ModelyardError) as unknown:
            await dp.manager.load("unknown_model")
        assert unknown.value.line().startswith(
            "failed to load 'unknown_model', failed to poll from model repository"
        )
        await dp.manager.unload("unknown_model")  # nothing loaded, nothing to do

    run(scenario, [tmp_path], mode=ControlMode.EXPLICIT, startup_models=["*"])


def test_a_reload_keeps_the_versions_whose_files_and_config_are_as_they_were(
    tmp_path: Path,
) -> None:
    model = two_versions(tmp_path)

    async def scenario(dp: LocalDataPlane) -> None:
        first = {v: dp.manager.resolve("slow_double", v) for v in ("1", "2")}
        config = model / "config.pbtxt"
        text = config.read_text()
        specific = "version_policy { specific { versions: [1, 2] } }"
        config.write_text(text.replace(ALL_VERSIONS, specific))
        os.utime(model / "2" / "model.py", (1, 1))
        await dp.manager.load("slow_double")  # only its version policy changed: 1 stays
        assert dp.manager.resolve("slow_double", "1") is first["1"]
        assert dp.manager.resolve("slow_double", "2") is not first["2"]
        second = dp.manager.resolve("slow_double", "1")
        (model / "helper.py").write_text("")  # a file beside the config: every version
        await dp.manager.load("slow_double")
        assert dp.manager.resolve("slow_double", "1") is not second

    run(scenario, [tmp_path], mode=ControlMode.EXPLICIT, startup_models=["*"])


def test_a_config_given_to_a_load_holds_until_the_config_file_changes(tmp_path: Path) -> None:
    model = two_versions(tmp_path)
    override = parse_json_config(
        {"backend": "python", "max_batch_size": 16,
         "version_policy": {"specific": {"versions": [2]}},
         "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}],
         "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [2]}]}
    )  # fmt: skip

    async def scenario(dp: LocalDataPlane) -> None:
        await dp.manager.load("slow_double", override)
        await dp.manager.load("slow_double")  # the given config still holds
        assert not dp.model_ready("slow_double", "1") and dp.model_ready("slow_double", "2")
        config = model / "config.pbtxt"
        config.write_text(config.read_text() + "\n")
        await dp.manager.load("slow_double")  # the file changed since: it holds now
        assert dp.model_ready("slow_double", "1") and dp.model_ready("slow_double", "2")

    run(scenario, [tmp_path], mode=ControlMode.EXPLICIT, startup_models=["*"])


def test_a_model_in_two_repositories_serves_from_neither(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    slow_double(first)
    slow_double(second)

    async def scenario(dp: LocalDataPlane) -> None:
        assert not dp.model_ready("slow_double", None)
        rows = [r for r in dp.manager.index() if r["name"] == "slow_double"]
        assert rows == [
            {
                "name": "slow_double",
                "state": "UNAVAILABLE",
                "reason": "model appears in two or more repositories",
            }
        ]
        shutil.rmtree(second / "slow_double")
        await dp.manager.poll_once()
        assert dp.model_ready("slow_double", None)
        slow_double(second)
        await dp.manager.poll_once()  # a second repository gains it: it stops serving
        assert not dp.model_ready("slow_double", None)
        assert "has no available versions" in refusal(dp, "slow_double", None).line()

    run(scenario, [first, second], mode=ControlMode.POLL, poll_secs=3600)


def test_a_repeated_field_given_one_value_is_read_as_a_list_of_it() -> None:
    config = parse_json_config({"instance_group": {"kind": "KIND_CPU", "count": 5}})
    assert [group.count for group in config.instance_group] == [5]


def test_once_stopping_new_inferences_are_refused_in_tritons_words(tmp_path: Path) -> None:
    slow_double(tmp_path)

    async def scenario(dp: LocalDataPlane) -> None:
        dp.manager.stopping = True
        stopped = refusal(dp, "slow_double", None)
        assert stopped.line().startswith(
            "Server is stopping, scheduler for model has stopped accepting new inference "
            "requests; rule=model-server/stopping"
        )
        assert stopped.code is Code.UNAVAILABLE

    run(scenario, [tmp_path])
