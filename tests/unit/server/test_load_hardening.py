"""The load API against a caller who probes it: unknown names, failed reloads, paths, reach."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.errors import Code, GovernanceError, ModelyardError
from modelyard.frontdoors import http as http_frontend
from modelyard.governance.auth import AuthConfig, Principal
from modelyard.governance.guard import Call
from modelyard.governance.runtime import Governance
from modelyard.governance.service_config import empty_service_config
from modelyard.modelfiles.config import parse_json_config
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.types import InferRequest
from tests.support.models import ENSEMBLE_OVER_OTHER, slow_double, times_ten

ENSEMBLE_PBTXT = """
platform: "ensemble"
max_batch_size: 16
input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
ensemble_scheduling { step [{
  model_name: "other" model_version: -1
  input_map { key: "x" value: "x" } output_map { key: "y" value: "y" }
}] }
"""

# an absolute path anywhere in a line (the repository is under tmp_path)
ABSOLUTE = re.compile(r"(?<![\w.])/(?:tmp|home|root|work|private|var)/")


def run(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro_fn())  # type: ignore[arg-type]


def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "models"
    slow_double(repo)
    times_ten(repo, "other")
    return repo


def manager(repo: Path, **kw: Any) -> ModelManager:
    return ModelManager(ModelRepository(repo), ControlMode.EXPLICIT, **kw)


def double_request() -> InferRequest:
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    return InferRequest("slow_double", None, {"x": x}, {"x": "FP32"})


def override(doc: dict[str, Any]) -> Any:
    return parse_json_config(doc, "load request for 'slow_double'")


# ---- 4. unknown names keep nothing ---------------------------------------------------


def test_unknown_names_sent_to_load_are_not_retained(tmp_path: Path) -> None:
    repo = repository(tmp_path)

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        frontend = http_frontend.HttpFrontend(dp)
        try:
            await dp.manager.load("slow_double")
            before = (len(dp.manager._models), len(dp.manager._locks))
            routes_before = len(frontend.route._known)
            for i in range(5000):
                name = f"{i:05d}" + "n" * 10_000
                status, body = await _post(frontend, f"/v2/repository/models/{name}/load")
                assert status == 404
                assert len(body) < 1_000  # the line shows the start of the name, not all of it
            assert (len(dp.manager._models), len(dp.manager._locks)) == before
            assert len(frontend.route._known) == routes_before  # long paths are never kept
            assert [r["name"] for r in dp.manager.index()] == ["other", "slow_double"]
        finally:
            await dp.manager.stop()

    run(scenario)


async def _post(frontend: http_frontend.HttpFrontend, path: str, body: bytes = b"") -> Any:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": []}
    await frontend(scope, receive, send)
    return sent[0]["status"], sent[1]["body"]


# ---- 3 and 5. a failed load is an error, the old version serves on, no paths ----------


def _sklearn_model(repo: Path) -> None:
    """iris_sklearn as the example repository has it, and a model.pkl beside model.skops."""
    import joblib
    import skops.io as sio
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    x, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=1000).fit(x.astype(np.float32), y)
    version_dir = repo / "iris_sklearn" / "1"
    version_dir.mkdir(parents=True)
    sio.dump(model, version_dir / "model.skops")
    joblib.dump(model, version_dir / "model.pkl")
    (repo / "iris_sklearn" / "config.pbtxt").write_text('backend: "sklearn"\nmax_batch_size: 8\n')


def test_a_failed_reload_is_an_error_and_the_old_version_serves_on(tmp_path: Path) -> None:
    repo = tmp_path / "models"
    _sklearn_model(repo)
    x = np.ones((1, 4), dtype=np.float32)

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        try:
            await dp.manager.load("iris_sklearn")
            before = await dp.infer(InferRequest("iris_sklearn", None, {"input": x}, {}))
            pkl = override(
                {"backend": "sklearn", "max_batch_size": 8, "default_model_filename": "model.pkl"}
            )
            with pytest.raises(ModelyardError) as failed:
                await dp.manager.load("iris_sklearn", pkl)
            assert failed.value.code is Code.FAILED_PRECONDITION  # the cause's code: HTTP 400
            assert failed.value.rule == "engine/trusted-repository"
            after = await dp.infer(InferRequest("iris_sklearn", None, {"input": x}, {}))
            assert [o.data.tolist() for o in after.outputs] == [
                o.data.tolist() for o in before.outputs
            ]
            (row,) = dp.manager.index()
            assert row["state"] == "READY"
            assert "the last load failed: [engine] model.pkl is a pickle" in row["reason"]
        finally:
            await dp.manager.stop()

    run(scenario)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"backend": "python", "default_model_filename": "nope.py"}, id="no-file"),
        pytest.param({"backend": "nope"}, id="no-backend"),
        pytest.param(
            {"backend": "python", "version_policy": {"specific": {"versions": [7]}}},
            id="no-version",
        ),
    ],
)
def test_load_errors_and_index_reasons_carry_no_absolute_path(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    repo = repository(tmp_path)
    doc = {"max_batch_size": 16, **doc}

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        try:
            await dp.manager.load("slow_double")
            with pytest.raises(ModelyardError) as failed:
                await dp.manager.load("slow_double", override(doc))
            assert not ABSOLUTE.search(failed.value.line()), failed.value.line()
            assert str(tmp_path) not in failed.value.line()
            reasons = [r.get("reason", "") for r in dp.manager.index()]
            assert any("the last load failed" in r for r in reasons)
            assert not any(ABSOLUTE.search(r) for r in reasons), reasons
            assert (await dp.infer(double_request())).outputs[0].data.tolist() == [[1002, 1004]]
        finally:
            await dp.manager.stop()

    run(scenario)


def test_a_broken_config_on_disk_names_the_file_inside_the_repository(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    (repo / "other" / "config.pbtxt").write_text('backend: "python"\nmax_batch_size: "four"\n')

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        try:
            with pytest.raises(ModelyardError) as failed:
                await dp.manager.load("other")
            line = failed.value.line()
            assert "other/config.pbtxt:2" in line and str(tmp_path) not in line, line
        finally:
            await dp.manager.stop()

    run(scenario)


# ---- 2. a load reaches only models its caller may use ----------------------------------


def _governance(allow: dict[str, tuple[str, ...]]) -> tuple[Governance, Call]:
    config = empty_service_config("svc")
    config.auth = AuthConfig(enabled=True, by_digest={"d": Principal("scoped", allow)})
    call = Call("svc", "admin", "slow_double", principal="scoped")
    return Governance(config), call


def test_a_load_that_reaches_a_model_the_caller_may_not_use_is_refused(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    governance, call = _governance({"admin": ("slow_double",), "infer": ("slow_double",)})
    authorize = governance.authorize_load(call)
    assert authorize is not None

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        try:
            await dp.manager.load("slow_double", authorize=authorize)  # reaches nothing else
            index_before = dp.manager.index()
            with pytest.raises(GovernanceError) as refused:
                await dp.manager.load("slow_double", override(ENSEMBLE_OVER_OTHER), authorize)
            assert refused.value.code is Code.PERMISSION_DENIED
            line = refused.value.line()
            assert "principal 'scoped' may not call interface infer for model 'other'" in line
            assert "reaches as an ensemble step" in line
            assert "rule=auth/permission" in line and "change: auth.principals.scoped" in line
            assert dp.manager.index() == index_before  # nothing changed, not even a reason
            assert (await dp.infer(double_request())).outputs[0].data.tolist() == [[1002, 1004]]

            # with infer on the step, the same load goes through and answers with its outputs
            may = governance.authorize_load(call)
            governance.config.auth.by_digest["d"] = Principal(
                "scoped", {"admin": ("slow_double",), "infer": ("slow_double", "other")}
            )
            await dp.manager.load("other")
            await dp.manager.load("slow_double", override(ENSEMBLE_OVER_OTHER), may)
            assert (await dp.infer(double_request())).outputs[0].data.tolist() == [[10, 20]]
        finally:
            await dp.manager.stop()

    run(scenario)


def test_an_ensemble_on_disk_is_checked_too(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    (repo / "slow_double" / "config.pbtxt").write_text(ENSEMBLE_PBTXT)
    governance, call = _governance({"admin": ("*",), "infer": ("slow_double",)})

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        try:
            with pytest.raises(GovernanceError) as refused:
                await dp.manager.load("slow_double", authorize=governance.authorize_load(call))
            assert "for model 'other'" in refused.value.detail
        finally:
            await dp.manager.stop()

    run(scenario)


def test_an_ensemble_s_steps_load_with_it_only_for_a_caller_who_may_load_them(
    tmp_path: Path,
) -> None:
    """As Triton, loading an ensemble loads the models its steps name; each is a load the
    caller must be allowed, checked before any model loads."""
    repo = repository(tmp_path)
    (repo / "slow_double" / "config.pbtxt").write_text(ENSEMBLE_PBTXT)
    governance, call = _governance({"admin": ("slow_double",), "infer": ("slow_double", "other")})

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo))
        await dp.manager.start()
        try:
            with pytest.raises(GovernanceError) as refused:
                await dp.manager.load("slow_double", authorize=governance.authorize_load(call))
            line = refused.value.line()
            assert "may not call interface admin for model 'other'" in line
            assert "which loading the ensemble 'slow_double' loads" in line
            assert dp.manager.index() == [{"name": "other"}, {"name": "slow_double"}]
            governance.config.auth.by_digest["d"] = Principal(
                "scoped", {"admin": ("slow_double", "other"), "infer": ("slow_double", "other")}
            )
            await dp.manager.load("slow_double", authorize=governance.authorize_load(call))
            assert dp.model_ready("other", None)
            assert (await dp.infer(double_request())).outputs[0].data.tolist() == [[10, 20]]
        finally:
            await dp.manager.stop()

    run(scenario)


# ---- 6. listings show a scoped key only its models ---------------------------------------


def test_visible_is_the_principals_patterns_on_the_calls_interface() -> None:
    governance, call = _governance({"admin": ("iris_*",), "metadata": ("tiny_onnx",)})
    visible = governance.visible(call)
    assert visible is not None
    assert [m for m in ("iris_sklearn", "tiny_onnx") if visible(m)] == ["iris_sklearn"]
    call.interface = "metadata"
    visible = governance.visible(call)
    assert visible is not None
    assert [m for m in ("iris_sklearn", "tiny_onnx") if visible(m)] == ["tiny_onnx"]
    open_governance = Governance(empty_service_config("svc"))
    assert open_governance.visible(call) is None
    assert open_governance.authorize_load(call) is None


FLAKY = """
from pathlib import Path


class Model:
    def initialize(self, args):
        tries = Path(args["model_repository"]) / "tries"
        count = int(tries.read_text()) + 1 if tries.exists() else 1
        tries.write_text(str(count))
        if count < 3:
            raise RuntimeError(f"try {count} fails")

    def execute(self, inputs):
        return {"y": inputs["x"]}
"""


@pytest.mark.parametrize(("retries", "ready"), [(1, False), (2, True)])
def test_a_failed_load_is_tried_again_as_many_times_as_asked(
    tmp_path: Path, retries: int, ready: bool
) -> None:
    """tritonserver's --model-load-retry-count: a model that loads on its third try."""
    from tests.support.models import write_python_model

    repo = tmp_path / "models"
    write_python_model(repo, "flaky", FLAKY, """
        backend: "python"
        max_batch_size: 4
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
        """)  # fmt: skip

    async def scenario() -> None:
        dp = LocalDataPlane(manager(repo, load_retries=retries))
        await dp.manager.start()
        try:
            if ready:
                await dp.manager.load("flaky")
            else:
                with pytest.raises(ModelyardError) as failed:
                    await dp.manager.load("flaky")
                assert "try 2 fails" in failed.value.line()
            assert dp.model_ready("flaky", None) is ready
            assert (repo / "flaky" / "tries").read_text() == str(retries + 1)
        finally:
            await dp.manager.stop()

    run(scenario)


def test_a_model_s_own_call_is_checked_against_the_auth_in_force_and_needs_a_caller() -> None:
    governance, _ = _governance({"infer": ("slow_double",)})
    authorize = governance.authorize_model_call("service 'svc'")
    authorize(("scoped",), "slow_double")  # allowed
    with pytest.raises(GovernanceError) as refused:
        authorize(("scoped",), "other")
    assert refused.value.code is Code.PERMISSION_DENIED
    assert "(BLS)" in refused.value.line()
    with pytest.raises(GovernanceError) as nobody:  # auth on, and no caller known
        authorize((), "slow_double")
    assert "for no known caller" in nobody.value.line()
    # a reload that widens the principal's reach is what the next call sees
    governance.config.auth.by_digest["d"] = Principal("scoped", {"infer": ("*",)})
    authorize(("scoped",), "other")
    governance.config.auth.enabled = False  # and with auth off, nothing is checked
    authorize((), "other")
