"""Triton's qa/L0_model_update: a reload that changes only a model's instance groups adds
and removes instances while the model serves (``server/instance_update.py``).

As its test.sh: ``model_init_del`` (qa/python_models, its ``model.py`` moved into
``1/``), which counts each instance's ``initialize`` and ``finalize`` in files under
``MODEL_LOG_DIR``; one server per rate-limit mode (``off``, ``execution_count``, and
``execution_count`` with ``--rate-limit-resource=R1:10``), each started with
``--model-control-mode=explicit --log-verbose=2``, ``instance_update_test.py`` run against
it, and its log never saying ``Should not print this``.

The file's tearDown reads Python 3.10's unittest internals: it runs under
``unittest_before_311``, which gives them back. Its tests whose instance groups are
``KIND_GPU`` need a GPU and are not run here (docs/triton-qa.md). The default run takes
the mode with an explicit resource (every test of the file runs in it); the full run
(``TRITON_QA=full``) all three.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

MODES = {
    "off": ["--rate-limit=off"],
    "execution_count": ["--rate-limit=execution_count"],
    "execution_count_with_explicit_resource": [
        "--rate-limit=execution_count",
        "--rate-limit-resource=R1:10",
    ],
}
CPU_TESTS = [
    "test_add_rm_add_instance_no_batching",
    "test_add_rm_add_instance_with_batching",
    "test_rm_add_rm_instance_no_batching",
    "test_rm_add_rm_instance_with_batching",
    "test_rm_instance_to_zero",
    "test_cpu_instance_update",
    "test_invalid_config",
    "test_model_file_update",
    "test_non_instance_config_update",
    "test_load_api_with_config",
    "test_update_while_inferencing",
    "test_infer_while_updating",
    "test_direct_scheduler_update_no_ongoing_sequences",
    "test_oldest_scheduler_update_no_ongoing_sequences",
]
# skipped by the file itself where the mode does not limit resources
RATE_LIMITED_TESTS = [
    "test_instance_resource_increase",
    "test_instance_resource_increase_above_explicit",
    "test_instance_resource_decrease",
]


def _modes() -> list[str]:
    if os.environ.get("TRITON_QA") == "full":
        return list(MODES)
    return ["execution_count_with_explicit_resource"]


def _setup_models(work: Path) -> None:
    """test.sh's setup_models."""
    models = work / "models"
    shutil.rmtree(models, ignore_errors=True)
    model = models / "model_init_del"
    shutil.copytree(work.parent / "python_models" / "model_init_del", model)
    (model / "1").mkdir()
    (model / "model.py").rename(model / "1" / "model.py")


@pytest.mark.parametrize("mode", _modes())
def test_model_update(host: LoopbackHost, tmp_path: Path, mode: str) -> None:
    work = harness.work_directory(tmp_path, "L0_model_update")
    _setup_models(work)
    env = {"RATE_LIMIT_MODE": mode, "MODEL_LOG_DIR": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    log = work / f"instance_update_test.rate_limit_{mode}.server.log"
    args = [
        "--model-repository=models", "--model-control-mode=explicit", *MODES[mode],
        "--log-verbose=2",
    ]  # fmt: skip
    tests = [f"TestInstanceUpdate.{name}" for name in CPU_TESTS + RATE_LIMITED_TESTS]
    with harness.tritonserver(host, args, log, cwd=work, env=env) as server:
        run = harness.run_qa_file(
            host, work, "instance_update_test.py", *tests, env=env, timeout=900,
            runner="tests.triton_qa.unittest_before_311",
        )  # fmt: skip
        server_log = server.log()
    if mode == "off":  # the file skips the rate limiter's tests, as it says why
        skipped = {f"TestInstanceUpdate::{name}" for name in RATE_LIMITED_TESTS}
        assert {n for n, o in run.outcomes.items() if o.status == "skipped"} == skipped
        run.outcomes = {n: o for n, o in run.outcomes.items() if n not in skipped}
    elif mode == "execution_count":
        above = "TestInstanceUpdate::test_instance_resource_increase_above_explicit"
        assert run.outcomes[above].status == "skipped"
        del run.outcomes[above]
    ran = {"off": 0, "execution_count": 2}.get(mode, len(RATE_LIMITED_TESTS))
    run.check(count=len(CPU_TESTS) + ran)
    assert "Should not print this" not in server_log
