"""Triton's qa/L0_batcher: the dynamic batcher, a server per test as its test.sh runs them.

The repositories test.sh makes: ``models`` (fixed-size ``*_float32_float32_float32``,
``max_batch_size: 8``, preferred sizes 2 and 6, a 10 s delay), ``var_models`` (the same,
variable-size), ``preferred_batch_only_models`` (preferred 4 and 6, no delay),
``custom_models`` (``custom_zero_1_float32``: Triton's identity backend with
``execute_delay_ms``), and queue_timeout_test.py's ``dynamic_batch``. The backends are
ONNX (Triton's generators) and python (``qa/python_models/add_sub`` with the ONNX config,
as test.sh makes it). ``TRITONSERVER_DELAY_SCHEDULER`` is exported to the server and the
test as test.sh does.

Stand-ins: test.sh's identity models ask for ``KIND_GPU`` instances; they compute nothing
on a GPU, and here run as as many ``KIND_CPU`` instances (one where the group names no
count, as on Triton's one-GPU CI machine). test.sh's ragged models in ``var_models`` are
its: ``custom_zero_1_float32`` with a ragged ``INPUT0`` (the identity backend answers each
request with its own input), and, with the ONNX backend, ``onnx_zero_1_float32``, the
generated ``onnx_nobatch_zero_1_float32`` batching with a ragged ``INPUT0`` and a
``BATCH_SCATTER_WITH_INPUT_SHAPE`` batch output.

The default run takes the ONNX backend and the fixed-size models, each test once; most
wait out the 10 s delay, so the tests run four servers at a time, each in a network
namespace of its own. ``TRITON_QA=full`` adds the python backend and the variable-size
runs, as test.sh.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories
from tests.triton_qa.conftest import FULL

pytestmark = pytest.mark.slow

DELAY = (
    "dynamic_batching { preferred_batch_size: [ 2, 6 ], max_queue_delay_microseconds: 10000000 }"
)
PREFERRED_ONLY = "dynamic_batching { preferred_batch_size: [ 4, 6 ] }"

NO_DELAY_TESTS = [
    "test_static_batch_preferred",
    "test_static_batch_lt_any_preferred",
    "test_static_batch_not_preferred",
    "test_static_batch_gt_max_preferred",
    "test_multi_batch_not_preferred",
    "test_multi_batch_gt_max_preferred",
    "test_multi_batch_sum_gt_max_preferred",
    "test_multi_same_output0",
    "test_multi_same_output1",
    "test_multi_different_outputs",
    "test_multi_different_output_order",
]
# the default run (CI's budget): one of each kind of batch the no-delay tests form
DEFAULT_NO_DELAY_TESTS = [
    "test_static_batch_preferred",
    "test_multi_batch_sum_gt_max_preferred",
    "test_multi_different_outputs",
]
# test -> TRITONSERVER_DELAY_SCHEDULER, as test.sh's chain of exports sets it
DELAY_TESTS = {
    "test_multi_batch_delayed_sum_gt_max_preferred": 2,
    "test_multi_batch_use_biggest_preferred": 6,
    "test_multi_batch_use_best_preferred": 3,
    "test_multi_batch_delayed_use_max_batch": 3,
}
DEFAULT_DELAY_TESTS = [
    "test_multi_batch_use_biggest_preferred",
    "test_multi_batch_delayed_use_max_batch",
]
DIFFERENT_SHAPE_TESTS = [
    "test_multi_batch_not_preferred_different_shape",
    "test_multi_batch_preferred_different_shape",
    "test_multi_batch_different_shape_allow_ragged",
    "test_multi_batch_different_shape",
]
PREFERRED_BATCH_ONLY_TESTS = {
    "test_preferred_batch_only_aligned": 4,
    "test_preferred_batch_only_unaligned": 5,
    "test_preferred_batch_only_use_biggest_preferred": 7,
    "test_preferred_batch_only_use_no_preferred_size": 3,
}
DEFAULT_DIFFERENT_SHAPE_TESTS = [
    "test_multi_batch_different_shape_allow_ragged",
    "test_multi_batch_different_shape",
]
DEFAULT_PREFERRED_BATCH_ONLY_TESTS = ["test_preferred_batch_only_unaligned"]
MAX_QUEUE_DELAY_ONLY_TESTS = [
    "test_max_queue_delay_only_default",
    "test_max_queue_delay_only_non_default",
]
# none by default: the 12 requests its 12 threads send must all arrive within the first
# batch's 100 ms to make the 1 or 2 batches it asks for, which a CI machine running four
# servers at once did not always do (4 batches once); TRITON_QA=full runs both
DEFAULT_MAX_QUEUE_DELAY_ONLY_TESTS: list[str] = []

OUT_OF_REACH: dict[str, str] = {}


# the message is compared whole; modelyard's error line leads with Triton's words and keeps
# its rule and where to change it after them (docs/triton-qa.md, differences kept)
ERROR_LINE = "the error line goes on after Triton's 'Request timeout expired'"


@dataclass
class Run:
    """One server and one test of batcher_test.py, as a test.sh loop runs them."""

    test: str
    repository: str
    batcher_type: str = "FIXED"
    delay_scheduler: int | None = None
    server_args: list[str] = field(default_factory=list)


def _backend_models(generated: Path, target: Path, backends: list[str], batching: str) -> None:
    """test.sh's loop over BACKENDS: the ``*_float32_float32_float32`` model of each, with
    ``max_batch_size: 8``, version 1 only and ``batching`` appended."""
    onnx = generated / "onnx_float32_float32_float32"
    for backend in backends:
        model = target / f"{backend}_float32_float32_float32"
        if backend == "python":  # the ONNX config with backend "python", and add_sub
            (model / "1").mkdir(parents=True)
            config = re.sub(
                r"platform:.*", 'backend: "python"', (onnx / "config.pbtxt").read_text()
            )
            (model / "config.pbtxt").write_text(config.replace("onnx", "python"))
            shutil.copy(onnx / "output0_labels.txt", model)
            shutil.copy(harness.QA / "python_models" / "add_sub" / "model.py", model / "1")
        else:
            shutil.copytree(onnx, model)
        config = model / "config.pbtxt"
        text = re.sub(r"(?m)^max_batch_size:.*", "max_batch_size: 8", config.read_text())
        text = re.sub(
            r"(?m)^version_policy:.*", "version_policy: { specific { versions: [1] }}", text
        )
        config.write_text(text + batching + "\n")


def _custom_zero(target: Path, max_batch_size: int, extra: str, count: int = 1) -> Path:
    """``../custom_models/custom_zero_1_float32`` as test.sh edits it (dims -1,
    ``max_batch_size``, ``extra`` appended), its KIND_GPU instances as ``count`` KIND_CPU
    ones."""
    model = target / "custom_zero_1_float32"
    (model / "1").mkdir(parents=True)
    text = (harness.QA / "custom_models" / "custom_zero_1_float32" / "config.pbtxt").read_text()
    text = re.sub(r"dims:.*\[.*\]", "dims: [ -1 ]", text)
    text = re.sub(r"max_batch_size:.*", f"max_batch_size: {max_batch_size}", text)
    instances = f"instance_group [ {{ kind: KIND_CPU count: {count} }} ]\n"
    (model / "config.pbtxt").write_text(text + extra + instances)
    return model


def _repositories(work: Path, backends: list[str]) -> None:
    generated = work.parent / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}/fixed")
    repositories.generated(
        work, "gen_qa_models.py", "--onnx", "--variable", f"--models_dir={generated}/variable"
    )
    _backend_models(generated / "fixed", work / "models", backends, DELAY)
    _backend_models(
        generated / "fixed", work / "preferred_batch_only_models", backends, PREFERRED_ONLY
    )
    _backend_models(generated / "variable", work / "var_models", backends, DELAY)
    for config in (work / "var_models").glob("*/config.pbtxt"):
        config.write_text(config.read_text().replace("16", "-1"))
    _ragged_models(work / "var_models", generated, backends)


def _allow_ragged(config: Path, input_name: str, extra: str = "") -> None:
    """test.sh's sed that marks ``input_name`` ragged, and what it appends."""
    text = re.sub(
        rf'name: "{input_name}"',
        f'name: "{input_name}"\nallow_ragged_batch: true',
        config.read_text(),
    )
    config.write_text(text + extra)


def _ragged_models(target: Path, generated: Path, backends: list[str]) -> None:
    """test.sh's allow-ragged models in ``var_models``: ``custom_zero_1_float32`` and, with
    the ONNX backend, the identity generator's ``onnx_nobatch_zero_1_float32`` batching as
    ``onnx_zero_1_float32`` with its output scattered by its ragged input's shapes."""
    model = _custom_zero(target, 8, DELAY + "\n")
    _allow_ragged(model / "config.pbtxt", "INPUT0")
    if "onnx" not in backends:
        return
    identity = generated / "identity"
    repositories.generated(
        target.parent, "gen_qa_identity_models.py", "--onnx", f"--models_dir={identity}"
    )
    model = target / "onnx_zero_1_float32"
    shutil.copytree(identity / "onnx_nobatch_zero_1_float32", model)
    config = model / "config.pbtxt"
    text = config.read_text().replace("nobatch_", "")
    config.write_text(re.sub(r"(?m)^max_batch_size:.*", "max_batch_size: 8", text))
    _allow_ragged(
        config,
        "INPUT0",
        'batch_output [{target_name: "OUTPUT0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE '
        f'source_input: "INPUT0" }}] {DELAY}\n',
    )


def _max_queue_delay_models(work: Path, test: str) -> Path:
    """test.sh's custom_models for the max_queue_delay tests: its sed for the delay matches
    no line (``max_queue_delay_microseconds: 0}`` has no brackets), so both run with 0."""
    target = work / f"custom_models_{test}"
    _custom_zero(
        target,
        100,
        "dynamic_batching { max_queue_delay_microseconds: 0}\n"
        'parameters [\n{ key: "execute_delay_ms"; value: { string_value: "100" }}\n]\n',
    )
    return target


def _runs(work: Path) -> list[Run]:
    types = ["FIXED", "VARIABLE"] if FULL else ["FIXED"]
    runs: list[Run] = []
    for batcher_type in types:
        repository = "models" if batcher_type == "FIXED" else "var_models"
        no_delay = NO_DELAY_TESTS if FULL else DEFAULT_NO_DELAY_TESTS
        runs += [Run(t, repository, batcher_type) for t in no_delay]
        runs += [
            Run(t, repository, batcher_type, n)
            for t, n in DELAY_TESTS.items()
            if FULL or t in DEFAULT_DELAY_TESTS
        ]
    different_shape = DIFFERENT_SHAPE_TESTS if FULL else DEFAULT_DIFFERENT_SHAPE_TESTS
    runs += [Run(t, "var_models", "VARIABLE") for t in different_shape]
    runs.append(
        Run("test_multi_batch_delayed_preferred_different_shape", "var_models", "VARIABLE", 4)
    )
    runs += [
        Run(t, "preferred_batch_only_models", "FIXED", n)
        for t, n in PREFERRED_BATCH_ONLY_TESTS.items()
        if FULL or t in DEFAULT_PREFERRED_BATCH_ONLY_TESTS
    ]
    for test in MAX_QUEUE_DELAY_ONLY_TESTS if FULL else DEFAULT_MAX_QUEUE_DELAY_ONLY_TESTS:
        runs.append(Run(test, _max_queue_delay_models(work, test).name))
    return runs


def _run_one(
    host: LoopbackHost, work: Path, models: Path, backends: str, run: Run
) -> harness.QaRun:
    env = {"BATCHER_TYPE": run.batcher_type, "BACKENDS": backends}
    if run.delay_scheduler is not None:
        env["TRITONSERVER_DELAY_SCHEDULER"] = str(run.delay_scheduler)
    args = [f"--model-repository={models / run.repository}", *run.server_args]
    log = work / f"{run.test}.{run.batcher_type}.server.log"
    with harness.tritonserver(host, args, log, env=env):
        return harness.run_qa_file(
            host, work, "batcher_test.py", f"BatcherTest.{run.test}", env=env, timeout=300
        )


def test_batcher_test(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    backends = ["onnx", "python"] if FULL else ["onnx"]
    models = harness.work_directory(tmp_path / "models", "L0_batcher")
    _repositories(models, backends)
    runs = _runs(models)
    # a work directory per lane: the test writes its results beside itself
    works = [harness.work_directory(tmp_path / f"lane{i}", "L0_batcher") for i in range(len(hosts))]

    def one(lane: int, run: Run) -> harness.QaRun:
        return _run_one(hosts[lane], works[lane], models, " ".join(backends), run)

    results = harness.in_lanes(hosts, runs, one)
    failures = []
    for run, outcome in results:
        expected = (
            {f"BatcherTest::{run.test}": OUT_OF_REACH[run.test]} if run.test in OUT_OF_REACH else {}
        )
        try:
            outcome.check(count=1, out_of_reach=expected)
        except AssertionError as error:
            failures.append(f"{run.test} ({run.batcher_type}): {error}")
    assert not failures, "\n".join(failures)


def _ordering_models(work: Path) -> Path:
    """test.sh's custom_models for preserve_ordering: two instances, one 100 ms per batch,
    the other 400 ms (``instance_wise_delay_multiplier``), preferred batches of 4."""
    target = work / "custom_models"
    _custom_zero(
        target,
        4,
        "dynamic_batching { preferred_batch_size: [ 4 ] }\n"
        'parameters [\n{ key: "execute_delay_ms"; value: { string_value: "100" }},\n'
        '{ key: "instance_wise_delay_multiplier"; value: { string_value: "4" }}\n]\n',
        count=2,
    )
    return target


def test_preserve_ordering(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    """Twelve requests (TRITONSERVER_DELAY_SCHEDULER=12) in batches of 4 over a fast and a
    slow instance: without preserve_ordering the fast instance's answers all leave before
    the slow one's; with it, at least four wait for them (verify_timestamps.py reads the
    trace file)."""
    work = harness.work_directory(tmp_path, "L0_batcher")
    models = _ordering_models(work)
    config = models / "custom_zero_1_float32" / "config.pbtxt"
    env = {"BATCHER_TYPE": "FIXED", "BACKENDS": "onnx", "TRITONSERVER_DELAY_SCHEDULER": "12"}
    for name, flag in (("not_preserve", []), ("preserve", ["-p"])):
        if name == "preserve":
            config.write_text(
                re.sub(
                    r"dynamic_batching.*",
                    "dynamic_batching { preferred_batch_size: [ 4 ] preserve_ordering: true }",
                    config.read_text(),
                )
            )
        args = [
            f"--trace-file={name}.log", "--trace-level=MIN", "--trace-rate=1",
            f"--model-repository={models}",
        ]  # fmt: skip
        with harness.tritonserver(hosts[0], args, work / f"{name}.server.log", cwd=work, env=env):
            run = harness.run_qa_file(
                hosts[0], work, "batcher_test.py", "BatcherTest.test_multi_batch_preserve_ordering",
                env=env,
            )  # fmt: skip
        run.check(count=1)
        verified = harness.run_script(
            hosts[0], work / "verify_timestamps.py", *flag, f"{name}.log", cwd=work
        )
        assert verified.returncode == 0, f"{name}: {verified.stdout}{verified.stderr}"


def test_queue_timeout(hosts: list[LoopbackHost], tmp_path: Path) -> None:
    """queue_timeout_test.py: a queued request whose queue timeout passes while the one
    instance executes (8 s) is answered at its timeout, not when the instance is free."""
    work = harness.work_directory(tmp_path, "L0_batcher")
    model = work / "models" / "dynamic_batch"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        'backend: "identity"\nmax_batch_size: 1\n'
        'input [{ name: "INPUT0" \n data_type: TYPE_FP32 \n dims: [ -1 ] }]\n'
        'output [{ name: "OUTPUT0" \n data_type: TYPE_FP32 \n dims: [ -1 ] }]\n'
        "instance_group [{ count: 1 \n kind: KIND_CPU }]\n"
        "dynamic_batching {\n  preferred_batch_size: [ 1 ]\n"
        "  default_queue_policy { timeout_action: REJECT \n default_timeout_microseconds: 1000000"
        " \n max_queue_size: 8 }\n}\n"
        'parameters [{ key: "execute_delay_ms" \n value: { string_value: "8000" } }]\n'
    )
    args = [f"--model-repository={work / 'models'}", "--log-verbose=2"]
    with harness.tritonserver(hosts[0], args, work / "queue_timeout_test.server.log"):
        run = harness.run_qa_file(hosts[0], work, "queue_timeout_test.py")
    test = "TestMaxQueueDelayTimeout::test_default_queue_policy_timeout_prompt_response"
    run.check(count=1, out_of_reach={test: ERROR_LINE})
    # everything before the message's last check held: answered at its timeout, UNAVAILABLE
    assert "!= 'Request timeout expired'" in run.outcomes[test].message
