"""Triton's qa/L0_response_cache: an ensemble's own (top-level) response cache.

As its test.sh's ensemble part: the generated ensemble ``simple_graphdef_float32_float32_float32``
over ``graphdef_float32_float32_float32`` (a TensorFlow graph there; the ONNX model Triton's
generator makes with the same tensors and versions here), a fresh server in explicit
mode per test (the test edits the configs and loads the models itself), the cache 200
bytes for the insertion failure, whose log must say so; and the two repositories test.sh
expects to stop the server (an ensemble with a cache that is decoupled, or whose step is).
The rest of test.sh drives its C++ unit test binary and a Redis cache, not served here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

ENSEMBLE = "simple_graphdef_float32_float32_float32"
COMPOSING = "graphdef_float32_float32_float32"
TESTS = {
    "test_ensemble_top_level_response_cache": 10840,
    "test_ensemble_all_models_cache_enabled": 10840,
    "test_ensemble_composing_model_cache_enabled": 10840,
    "test_ensemble_cache_insertion_failure": 200,
}


def _ensemble_models(work: Path, target: Path) -> Path:
    generated = work.parent / "generated"
    if not generated.exists():
        repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
        repositories.generated(work, "gen_qa_models.py", "--ensemble", f"--models_dir={generated}")
    shutil.copytree(generated / ENSEMBLE, target / ENSEMBLE)
    composing = repositories.renamed(generated / "onnx_float32_float32_float32", COMPOSING)
    shutil.move(composing, target / COMPOSING)
    return target


def test_ensemble_cache(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_response_cache")
    for test, size in TESTS.items():
        models = work / "models" / "ensemble_models"
        shutil.rmtree(models, ignore_errors=True)
        _ensemble_models(work, models)
        args = [
            f"--model-repository={models}",
            f"--cache-config=local,size={size}",
            "--model-control-mode=explicit",
        ]
        with harness.tritonserver(host, args, tmp_path / f"{test}.log") as server:
            run = harness.run_qa_file(
                host, work, "ensemble_cache_test.py", f"EnsembleCacheTest.{test}"
            )
            log = server.log()
        run.check(count=1)
        if test == "test_ensemble_cache_insertion_failure":
            assert "failed to insert key" in log.lower()


@pytest.mark.parametrize("decoupled", ["ensemble", "composing"])
def test_a_cached_ensemble_that_is_or_uses_a_decoupled_model_stops_the_server(
    host: LoopbackHost, tmp_path: Path, decoupled: str
) -> None:
    work = harness.work_directory(tmp_path, "L0_response_cache")
    models = _ensemble_models(work, tmp_path / "models")
    ensemble_config = models / ENSEMBLE / "config.pbtxt"
    with ensemble_config.open("a") as config:
        config.write("\nresponse_cache { enable: True }\n")
    target = ENSEMBLE if decoupled == "ensemble" else COMPOSING
    with (models / target / "config.pbtxt").open("a") as config:
        config.write("\nmodel_transaction_policy { decoupled: True }\n")
    args = [
        f"--model-repository={models}",
        "--cache-config=local,size=10480",
        "--model-control-mode=explicit",
        f"--load-model={ENSEMBLE}",
    ]
    log = harness.start_fails(host, args, tmp_path / "server.log")
    assert "model_load_failed" in log, log[-3000:]
