"""Triton's qa/L0_metrics: the series a Triton dashboard reads, as test.sh checks them.

Each step on a server of its own, as test.sh starts it:

1. ``metrics_config_test.py`` on ``unit_test_models`` (the folder's identity models, one
   with the response cache): inference counters and summaries present or absent as
   ``--metrics-config counter_latencies`` and ``summary_latencies`` say, the cache's
   counters and summaries only for the model that uses the cache (and, as Triton's, no
   request-duration summary for it), custom ``summary_quantiles``, and the model label
   with namespacing off and on (``namespace="<repository>"``: the test names Triton's
   install path, which a link stands for during the test).
2. ``metrics_queue_size_test.py`` (``TRITON_QA=full``) on test.sh's
   ``queue_size_models`` (the folder's identity model that sleeps 2 s an execution,
   without batching, with the dynamic batcher, with a queue of 4, with the direct and
   oldest sequence batchers, and an ensemble over two of them):
   ``nv_inference_pending_request_count`` counts the requests still queued, not those
   executing (tests/unit/server/test_pending_count.py checks it in the default run).
3. ``cpu_metrics_test.py`` (``TRITON_QA=full``: it makes test.sh's libtorch model with
   Triton's generator): ``nv_cpu_utilization`` and the memory gauges, read as plain
   numbers, move during inference and stay in range.

Not run here (docs/triton-qa.md): the C++ ``metrics_api_test``, the pinned-memory
tests (a CUDA pinned host-memory pool) and test.sh's GPU checks.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CONFIG = "metrics_config_test.py"
# where test.sh runs (its namespace test names the repositories under it)
TRITON_QA_DIR = Path("/opt/tritonserver/qa")
QUANTILES = "0.1:0.0.1,0.7:0.01,0.75:0.01"
MC = "--metrics-config"
MISSING = ["test_cache_counters_missing", "test_cache_summaries_missing"]
# test.sh's servers of step 1: their arguments (beside the repository's), and the tests
CONFIG_SERVERS: dict[str, tuple[list[str], list[str]]] = {
    "default": (
        ["--load-model=identity_cache_off"],
        ["test_inf_counters_exist", "test_inf_summaries_missing", *MISSING],
    ),
    "summaries": (
        ["--load-model=identity_cache_off", MC, "summary_latencies=true"],
        ["test_inf_counters_exist", "test_inf_summaries_exist", *MISSING],
    ),
    "no_counters": (
        ["--load-model=identity_cache_off", MC, "summary_latencies=true", MC,
         "counter_latencies=false"],
        ["test_inf_counters_missing", "test_inf_summaries_exist", *MISSING],
    ),
    "cache": (
        ["--cache-config", "local,size=1048576", "--load-model=identity_cache_on", MC,
         "summary_latencies=true", MC, "counter_latencies=true"],
        ["test_inf_counters_exist", "test_inf_summaries_exist_with_cache",
         "test_cache_counters_exist", "test_cache_summaries_exist"],
    ),
    "quantiles": (
        ["--load-model=identity_cache_off", MC, "summary_latencies=true", MC,
         f"summary_quantiles={QUANTILES}"],
        ["test_summaries_custom_quantiles"],
    ),
}  # fmt: skip


def test_metrics_config(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_metrics")
    models = work / "unit_test_models"
    for model in ("identity_cache_on", "identity_cache_off"):
        (models / model / "1").mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    env = {"SUMMARY_QUANTILES": QUANTILES}
    for name, (extra, tests) in CONFIG_SERVERS.items():
        args = [f"--model-repository={models}", "--model-control-mode=explicit", *extra]
        with harness.tritonserver(host, args, work / f"{name}.server.log", cwd=work, env=env):
            for test in tests:  # as test.sh: each test on its own
                run = harness.run_qa_file(host, work, CONFIG, f"MetricsConfigTest.{test}",
                                          env=env)  # fmt: skip
                try:
                    run.check(count=1)
                except AssertionError as error:
                    failures.append(f"{name}: {error}")
    repos = _namespacing_repos(work)
    args = [f"--model-repository={repos}/addsub_repo", "--model-namespacing=false",
            "--allow-metrics=true"]  # fmt: skip
    with harness.tritonserver(host, args, work / "namespace_off.server.log", cwd=work):
        test = "MetricsConfigTest.test_model_namespacing_label_with_namespace_off"
        run = harness.run_qa_file(host, work, CONFIG, test)
    try:
        run.check(count=1)
    except AssertionError as error:
        failures.append(f"namespace off: {error}")
    assert not failures, "\n".join(failures)


def test_namespace_label(host: LoopbackHost, tmp_path: Path) -> None:
    """test.sh's namespacing-on server: each model labelled with its repository."""
    work = harness.work_directory(tmp_path, "L0_metrics")
    _namespacing_repos(work)
    with _at_tritons_path(work) as installed:  # the namespaces the test names
        repos = installed / "model_namespacing_repos"
        args = [f"--model-repository={repos}/addsub_repo",
                f"--model-repository={repos}/subadd_repo", "--model-namespacing=true",
                "--allow-metrics=true"]  # fmt: skip
        with harness.tritonserver(host, args, work / "namespace_on.server.log", cwd=work):
            test = "MetricsConfigTest.test_model_namespacing_label_with_namespace_on"
            run = harness.run_qa_file(host, work, CONFIG, test)
    run.check(count=1)


def _namespacing_repos(work: Path) -> Path:
    """test.sh's model_namespacing_repos, the ensembles' version folders made."""
    repos = work / "model_namespacing_repos"
    (repos / "addsub_repo" / "addsub_ensemble" / "1").mkdir(parents=True, exist_ok=True)
    (repos / "subadd_repo" / "subadd_ensemble" / "1").mkdir(parents=True, exist_ok=True)
    return repos


@contextmanager
def _at_tritons_path(work: Path) -> Iterator[Path]:
    """``work`` as ``/opt/tritonserver/qa/L0_metrics``, where test.sh runs and the
    namespace test's expected labels point: a link made for the test and removed after,
    on a machine without a Triton installed there (else the test is skipped)."""
    installed = TRITON_QA_DIR / "L0_metrics"
    if TRITON_QA_DIR.parent.exists():
        pytest.skip(f"{TRITON_QA_DIR.parent} exists: the link is not made over it")
    TRITON_QA_DIR.mkdir(parents=True)
    try:
        installed.symlink_to(work)
        yield installed
    finally:
        shutil.rmtree(TRITON_QA_DIR.parent)


def _queue_size_models(work: Path) -> Path:
    """test.sh's ``queue_size_models``: one model per scheduler, from ``identity_delay``."""
    models = work / "queue_size_models"
    default = models / "default"
    shutil.copytree(work / "identity_delay", default)
    (default / "1").mkdir()
    config = default / "config.pbtxt"
    config.write_text(re.sub(r"(?m)^max_batch_size.*", "max_batch_size: 4", config.read_text()))
    variants = {
        "dynamic": "dynamic_batching { max_queue_delay_microseconds: 100000 }",
        "max_queue_size": "dynamic_batching { max_queue_delay_microseconds: 100000 "
        "default_queue_policy { max_queue_size: 4 } }",
        "sequence_direct": "sequence_batching { direct { max_queue_delay_microseconds: "
        "100000, minimum_slot_utilization: 1.0 } }",
        "sequence_oldest": "sequence_batching { oldest { max_queue_delay_microseconds: "
        "100000, max_candidate_sequences: 4 } }",
    }
    for name, batching in variants.items():
        target = shutil.copytree(default, models / name)
        (target / "config.pbtxt").write_text(config.read_text() + f"\n{batching}\n")
    ensemble = shutil.copytree(work / "ensemble_delay", models / "ensemble")
    (ensemble / "1").mkdir()
    shutil.copytree(default, models / "default_composing")
    shutil.copytree(models / "dynamic", models / "dynamic_composing")
    return models


@pytest.mark.triton_qa_full  # about 70 s: its model sleeps 2 s an execution
def test_queue_size(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_metrics")
    args = [f"--model-repository={_queue_size_models(work)}", "--log-verbose=1"]
    with harness.tritonserver(host, args, work / "queue_size.server.log", cwd=work):
        run = harness.run_qa_file(host, work, "metrics_queue_size_test.py")
    run.check(count=6)


@pytest.mark.triton_qa_full  # Triton's generator makes its libtorch models first
def test_cpu_metrics(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_metrics")
    generated = tmp_path / "generated"
    repositories.generated(work, "gen_qa_models.py", "--libtorch", f"--models_dir={generated}")
    model = "libtorch_float32_float32_float32"
    target = shutil.copytree(generated / model, work / "models" / model)
    config = target / "config.pbtxt"
    # test.sh's edits; its KIND_GPU instance a CPU one here
    text = re.sub(r"label_filename:.*", "", config.read_text())
    config.write_text(text + "instance_group [{ kind: KIND_CPU }]\n")
    args = [f"--model-repository={work / 'models'}", "--metrics-interval-ms=1000",
            "--log-verbose=1"]  # fmt: skip
    with harness.tritonserver(host, args, work / "cpu_metrics_test_server.log", cwd=work):
        run = harness.run_qa_file(host, work, "cpu_metrics_test.py", pytest_style=True)
    run.check(count=2)
