"""Triton's qa/L0_vertex_ai: the Vertex AI front door (``--allow-vertex-ai``), as its
test.sh runs it.

test.sh's repositories from ``gen_qa_models.py --onnx``'s ``onnx_int32_int32_int32``:
``single_model/addsub`` (version 1) and ``multi_models`` (``addsub``, version 1, and
``subadd``, version 3, whose outputs swap). Then, each on a server of its own, with the
``AIP_*`` variables test.sh exports: the front door off by default and on with the flag
(its ``Started ... at`` log lines), ``AIP_MODE=PREDICTION`` turning it on and HTTP and
gRPC off unless flags say otherwise, a missing route or default model refusing the start
in Triton's words, ``vertex_ai_test.py`` (unchanged, 8 tests) on the prediction route
(on ``AIP_HTTP_PORT``, the repository from ``AIP_STORAGE_URI``, a default model among
several), and test.sh's redirects through ``X-Vertex-Ai-Triton-Redirect``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

FOLDER = "L0_vertex_ai"
BASE = "onnx_int32_int32_int32"
UNIT_TEST_COUNT = 8  # test.sh's
ROUTES = {"AIP_PREDICT_ROUTE": "/predict", "AIP_HEALTH_ROUTE": "/health"}


def _repositories(work: Path) -> None:
    """test.sh's multi_models and single_model."""
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    for name, kept in (("addsub", "1"), ("subadd", "3")):
        model = shutil.copytree(generated / BASE, work / "multi_models" / name)
        for version in ("1", "2", "3"):
            if version != kept:
                shutil.rmtree(model / version)
        config = model / "config.pbtxt"
        config.write_text(config.read_text().replace(BASE, name, 1))
    shutil.copytree(work / "multi_models" / "addsub", work / "single_model" / "addsub")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = harness.work_directory(tmp_path_factory.mktemp("qa"), FOLDER)
    _repositories(made)
    return made


@contextmanager
def _server(
    host: LoopbackHost, work: Path, args: list[str], env: dict[str, str], log: Path,
    wait: str = "/health", port: int = 8080,
) -> Iterator[harness.Server]:  # fmt: skip
    """A server of test.sh's, in the folder (its repositories are relative paths), waited
    for on Vertex AI's health route (as ``vertex_ai_wait_for_server_ready``) or, with
    ``wait="ready"``, as ``run_server`` waits."""
    with harness.tritonserver(
        host, args, log, wait=wait, cwd=work, env=env, http_port=port, timeout=60
    ) as server:
        yield server


def _fails(host: LoopbackHost, work: Path, args: list[str], env: dict[str, str], log: Path) -> str:
    return harness.start_fails(host, args, log, env=env, cwd=work)


def _unset() -> dict[str, str]:
    """test.sh's ``unset_vertex_variables``: each AIP_ variable emptied, which the server
    takes as unset (the test runner's own never leak in)."""
    return dict.fromkeys(
        ("AIP_MODE", "AIP_HTTP_PORT", "AIP_HEALTH_ROUTE", "AIP_PREDICT_ROUTE", "AIP_STORAGE_URI"),
        "",
    )


def _client_tests(host: LoopbackHost, work: Path, env: dict[str, str]) -> None:
    exported = {key: value for key, value in env.items() if value}  # as test.sh's unset
    run = harness.run_qa_file(host, work, "vertex_ai_test.py", env=exported)
    run.check(count=UNIT_TEST_COUNT)


def _redirect(host: LoopbackHost, target: str) -> tuple[str, str]:
    """test.sh's ``curl -X POST -H "X-Vertex-Ai-Triton-Redirect: TARGET" .../predict``."""
    done = subprocess.run(
        host.command(["curl", "-s", "-w", "\n%{http_code}", "-X", "POST", "-H",
                      f"X-Vertex-Ai-Triton-Redirect: {target}", "localhost:8080/predict"]),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    body, _, code = done.stdout.rpartition("\n")
    return code, body


def test_front_door_switches(host: LoopbackHost, work: Path, tmp_path: Path) -> None:
    """The flag's default, the flag, AIP_MODE=PREDICTION, and the flag turning it off."""
    base = ["--allow-http", "true", "--model-repository=single_model"]
    env = {**_unset(), **ROUTES}
    log = tmp_path / "default.log"
    with _server(host, work, base, env, log, wait="ready", port=8000) as server:
        pass
    said = server.log()
    assert "failed to start Vertex AI service" not in said
    assert "Started Vertex AI HTTPService at" not in said
    with _server(host, work, [*base, "--allow-vertex-ai=true"], env, tmp_path / "on.log",
                 wait="ready", port=8000) as server:  # fmt: skip
        pass
    assert "Started Vertex AI HTTPService at" in server.log()
    env["AIP_MODE"] = "PREDICTION"
    args = ["--model-repository=single_model", "--allow-grpc=true"]
    with _server(host, work, args, env, tmp_path / "prediction.log") as server:
        pass
    said = server.log()
    assert "Started Vertex AI HTTPService at" in said
    assert "Started GRPCInferenceService at" in said
    assert "Started HTTPService at" not in said and "failed to start HTTP service" not in said
    args = [*base, "--allow-vertex-ai=false", "--allow-http=true"]
    with _server(host, work, args, env, tmp_path / "off.log", wait="ready", port=8000) as server:
        pass
    said = server.log()
    assert "Started Vertex AI HTTPService at" not in said
    assert "Started HTTPService at" in said
    assert "Started GRPCInferenceService at" not in said


def test_refused_starts(host: LoopbackHost, work: Path, tmp_path: Path) -> None:
    """A route not defined, a default model not loaded, several models and none named."""
    args = ["--allow-vertex-ai=true", "--model-repository=single_model"]
    only_health = {**_unset(), "AIP_HEALTH_ROUTE": "/health"}
    said = _fails(host, work, args, only_health, tmp_path / "no_predict.log")
    assert "API_PREDICT_ROUTE is not defined for Vertex AI endpoint" in said, said[-3000:]
    only_predict = {**_unset(), "AIP_PREDICT_ROUTE": "/predict"}
    said = _fails(host, work, args, only_predict, tmp_path / "no_health.log")
    assert "AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint" in said, said[-3000:]
    env = {**_unset(), **ROUTES, "AIP_MODE": "PREDICTION", "AIP_STORAGE_URI": "single_model"}
    said = _fails(host, work, ["--vertex-ai-default-model=subadd"], env, tmp_path / "d.log")
    assert "Expect the default model 'subadd' is loaded" in said, said[-3000:]
    env["AIP_STORAGE_URI"] = "multi_models"
    said = _fails(host, work, [], env, tmp_path / "several.log")
    assert (
        "Expect the model repository contains only a single model if default model is not "
        "specified" in said
    ), said[-3000:]


def test_prediction_route(host: LoopbackHost, work: Path, tmp_path: Path) -> None:
    """vertex_ai_test.py on the route, then on AIP_HTTP_PORT with AIP_STORAGE_URI."""
    env = {**_unset(), **ROUTES}
    args = ["--allow-vertex-ai=true", "--model-repository=single_model"]
    with _server(host, work, args, env, tmp_path / "endpoints.log"):
        _client_tests(host, work, env)
    env = {**env, "AIP_STORAGE_URI": "single_model", "AIP_HTTP_PORT": "5234"}
    with _server(host, work, ["--allow-vertex-ai=true"], env, tmp_path / "port.log", port=5234):
        _client_tests(host, work, env)


def test_default_model_and_redirects(host: LoopbackHost, work: Path, tmp_path: Path) -> None:
    """A repository given over AIP_STORAGE_URI; a default model among several, and every
    redirect test.sh sends."""
    env = {**_unset(), **ROUTES, "AIP_MODE": "PREDICTION", "AIP_STORAGE_URI": "multi_models"}
    with _server(host, work, ["--model-repository=single_model"], env, tmp_path / "1.log"):
        assert _redirect(host, "v2/models/subadd/ready")[0] != "200"  # not loaded
        _client_tests(host, work, env)
    with _server(host, work, ["--vertex-ai-default-model=addsub"], env, tmp_path / "2.log"):
        _client_tests(host, work, env)
        checks = [
            ("metrics", ["nv_inference_request_success"], []),
            ("v2/models/stats", ["model_stats", "addsub", "subadd"], []),
            ("v2/models/subadd/stats", ["model_stats", "subadd"], ["addsub"]),
            ("v2/health/live", [], []),
            ("v2/models/addsub/ready", [], []),
            ("v2", ["extensions"], []),
            ("v2/models/addsub", ["platform"], []),
            ("v2/models/addsub/config", ["version_policy"], []),
            ("v2/systemsharedmemory/status", [], ["name"]),
            ("v2/cudasharedmemory/status", [], ["name"]),
            ("v2/repository/index", ["state", "addsub", "subadd"], []),
        ]
        for target, present, absent in checks:
            code, body = _redirect(host, target)
            assert code == "200", (target, code, body[-2000:])
            assert all(text in body for text in present), (target, body[-2000:])
            assert not any(text in body for text in absent), (target, body[-2000:])
        code, body = _redirect(host, "v2/repository/models/subadd/unload")
        assert code != "200", body
        assert "explicit model load / unload is not allowed" in body, body
