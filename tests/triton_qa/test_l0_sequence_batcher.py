"""Triton's qa/L0_sequence_batcher: the sequence batcher, a server per test as test.sh.

The repositories test.sh makes from Triton's generated sequence models
(``gen_qa_sequence_models.py``, ONNX; ``int32`` and ``bool``, with the ``simple_``,
``sequence_`` and ``fan_`` ensembles over the int32 ones): ``models0`` (the non-batching
models, four instances), ``models1`` (batch 4, one instance), ``models2`` (batch 2, two),
``models4`` (batch 1, four), ``modelsv`` (variable-size, batch 4, one),
``queue_delay_models`` (batch 4, one instance, a 3 s delay at three slot utilizations),
``request_timeout_models`` (its identity model), and, with the python backend, its
``preserve_ordering_models`` (``qa/python_models/sequence_py`` with and without oldest's
``preserve_ordering``, decoupled and not; Triton's tests of the decoupled two are
commented out in its file). The python backend's models are
``qa/python_models/sequence_int32`` with the ONNX configs, as test.sh makes them.
``TRITONSERVER_DELAY_SCHEDULER`` and ``TRITONSERVER_BACKLOG_DELAY_SCHEDULER`` are
exported as test.sh's chains of exports set them.

Stand-ins: Triton's generator writes ``KIND_GPU`` instance groups, which compute
nothing there that a CPU does not; they are ``KIND_CPU`` here before test.sh's edits
(which give both kinds the same counts). The ``custom`` trial's model,
``custom_sequence_int32`` (Triton's C++ ``sequence`` backend), is its config served by
``sequence_backend.py``, a python model that computes what that backend computes
(``repositories.custom_sequence_int32``).

The default run takes the ONNX backend on ``models1`` and the queue-delay and
request-timeout tests; ``TRITON_QA=full`` adds the other four repositories, the
``custom`` trial and the python backend, as test.sh. Each run is made again as Triton's
CI makes it with ``IMPLICIT_STATE=1`` (the sequence's state held by the server, strings
too) and with ``INITIAL_STATE_ZERO=1`` besides, and with ``INITIAL_STATE_FILE=1``
(test.sh's 4-byte file, 100 as an int32, the first state of every model, the STRING one's
too): the no-delay tests on ``models1`` by default (two of them for the file), all of them
with ``TRITON_QA=full``; the generators make no ensembles and neither the python
backend's model nor the C++ sequence backend keeps implicit state, so those runs take the
ONNX models alone (``ENSEMBLES=0``).
The runs are made once more with ``TEST_SYSTEM_SHARED_MEMORY=1``, one server at a time
(three no-delay tests by default).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories
from tests.triton_qa.conftest import FULL

# a full run's repositories take minutes each (the shared-memory variant's, one server at a
# time, about twenty)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600 if FULL else 300)]

NO_DELAY_TESTS = [
    "test_simple_sequence",
    "test_length1_sequence",
    "test_batch_size",
    "test_no_sequence_start",
    "test_no_sequence_start2",
    "test_no_sequence_end",
    "test_no_correlation_id",
]
DELAY_TESTS = [
    "test_backlog_fill",
    "test_backlog_fill_no_end",
    "test_backlog_same_correlation_id",
    "test_backlog_same_correlation_id_no_end",
    "test_backlog_sequence_timeout",
    "test_half_batch",
    "test_skip_batch",
    "test_full_batch",
    "test_ragged_batch",
    "test_backlog",
]
# the default run takes two of them (a backlog's timeout and a ragged batch), to stay
# within CI's time; TRITON_QA=full takes all ten, on every repository
# the default run (CI's budget): a sequence, a batch of them, and a sequence that never
# ends; TRITON_QA=full adds one of length 1 and the refusals (no START, no id)
DEFAULT_NO_DELAY_TESTS = ["test_simple_sequence", "test_batch_size", "test_no_sequence_end"]
DEFAULT_DELAY_TESTS = ["test_backlog_sequence_timeout", "test_ragged_batch"]
QUEUE_DELAY_TESTS = [
    "test_queue_delay_no_min_util",
    "test_queue_delay_half_min_util",
    "test_queue_delay_full_min_util",
]
DEFAULT_QUEUE_DELAY_TESTS = ["test_queue_delay_half_min_util"]
DTYPES = ("int32", "bool")


def backlog_delay(test: str) -> int:
    """test.sh's TRITONSERVER_BACKLOG_DELAY_SCHEDULER for one of DELAY_TESTS."""
    if test == "test_backlog_fill_no_end":
        return 3
    return 2 if test in ("test_backlog_fill", "test_backlog_same_correlation_id") else 0


def scheduler_delay(test: str) -> int:
    """test.sh's TRITONSERVER_DELAY_SCHEDULER for one of DELAY_TESTS."""
    return {
        "test_backlog_fill_no_end": 10,
        "test_backlog_fill": 10,
        "test_backlog_same_correlation_id_no_end": 16,
        "test_half_batch": 8,
        "test_backlog_sequence_timeout": 4,
    }.get(test, 12)


@dataclass(frozen=True)
class Variant:
    """One of the ways Triton's CI runs test.sh: the sequence's state in the model's
    inputs and outputs (the default) or held by the server (``IMPLICIT_STATE=1``: the
    models of ``gen_qa_implicit_models.py``), with or without a configured initial state
    (``INITIAL_STATE_ZERO``, or ``INITIAL_STATE_FILE``: test.sh's file in place of the
    zeros); tensors in the request or in system shared memory
    (``TEST_SYSTEM_SHARED_MEMORY=1``)."""

    name: str
    implicit: bool = False
    initial_zero: bool = False
    initial_file: bool = False
    system_shm: bool = False

    def env(self) -> dict[str, str]:
        return {
            "IMPLICIT_STATE": "1" if self.implicit else "0",
            "INITIAL_STATE_ZERO": "1" if self.initial_zero else "0",
            "INITIAL_STATE_FILE": "1" if self.initial_file else "0",
            # Triton's generators make no ensembles over the implicit-state models
            "ENSEMBLES": "0" if self.implicit else "1",
            "TEST_SYSTEM_SHARED_MEMORY": "1" if self.system_shm else "0",
        }


EXPLICIT = Variant("explicit")
IMPLICIT = Variant("implicit", implicit=True)
INITIAL_ZERO = Variant("initial-zero", implicit=True, initial_zero=True)
INITIAL_FILE = Variant("initial-file", implicit=True, initial_file=True)
# its region names are fixed (/ip0, /output_data...): its servers run one at a time, as
# the namespaces share /dev/shm
SYSTEM_SHM = Variant("system-shm", system_shm=True)
# the default run takes one or two of the no-delay tests of each variant but the first
DEFAULT_VARIANT_TESTS = {
    IMPLICIT: ["test_simple_sequence", "test_batch_size"],
    INITIAL_ZERO: ["test_simple_sequence"],
    # sequences of each model from the file's state (the STRING one's too)
    INITIAL_FILE: ["test_simple_sequence"],
    SYSTEM_SHM: ["test_simple_sequence", "test_batch_size"],
}


@dataclass
class Run:
    """One server and one test (or class) of sequence_batcher_test.py."""

    test: str  # Class.test, or Class
    repository: str
    env: dict[str, str]
    count: int = 1


def _generated(work: Path, variant: Variant) -> Path:
    """Triton's sequence models, fixed and variable, and their ensembles, KIND_CPU; with
    implicit state, its implicit-state models (gen_qa_model_repository makes those with
    ``--initial-state zero`` for both initial-state runs)."""
    generated = work.parent / "generated"
    if variant.implicit:
        generator = "gen_qa_implicit_models.py"
        configured = variant.initial_zero or variant.initial_file
        initial = ["--initial-state", "zero"] if configured else []
        kinds = [("fixed", ["--onnx", *initial]), ("variable", ["--onnx", "--variable", *initial])]
    else:
        generator = "gen_qa_sequence_models.py"
        kinds = [
            ("fixed", ["--onnx"]),
            ("variable", ["--onnx", "--variable"]),
            ("fixed_ensembles", ["--ensemble"]),
            ("variable_ensembles", ["--ensemble", "--variable"]),
        ]
    for name, flags in kinds:
        repositories.generated(work, generator, *flags, f"--models_dir={generated / name}")
    for config in generated.glob("*/*/config.pbtxt"):
        config.write_text(config.read_text().replace("kind: KIND_GPU", "kind: KIND_CPU"))
    return generated


def _copy(source: Path, target_dir: Path, backend: str) -> Path:
    """A model into ``target_dir``; for python, test.sh's generate_python_models: the ONNX
    model's config with ``backend: "python"`` and python_models/sequence_int32."""
    if backend == "custom":
        return repositories.custom_sequence_int32(target_dir, source)
    if backend != "python":
        return Path(shutil.copytree(source, target_dir / source.name))
    name = source.name.replace("onnx", "python")
    model = target_dir / name
    (model / "1").mkdir(parents=True)
    config = (source / "config.pbtxt").read_text()
    if "ensemble" not in source.parent.name:  # an ensemble keeps its platform
        config = re.sub(r"platform:.*", 'backend: "python"', config)
        shutil.copy(harness.QA / "python_models" / "sequence_int32" / "model.py", model / "1")
    (model / "config.pbtxt").write_text(config.replace("onnx", "python"))
    return model


def _edit(model: Path, max_batch_size: int | None, count: int, extra: str = "") -> None:
    config = model / "config.pbtxt"
    text = config.read_text()
    if max_batch_size is not None:
        text = re.sub(r"(?m)^max_batch_size:.*", f"max_batch_size: {max_batch_size}", text)
    text = text.replace("kind: KIND_CPU", f"kind: KIND_CPU\ncount: {count}")
    if extra:
        text = text.replace("sequence_batching {", "sequence_batching {\n" + extra, 1)
    config.write_text(text)


def _models(
    generated: Path, kind: str, backend: str, variant: Variant, nobatch: bool = False
) -> list[Path]:
    """test.sh's MODELS for one backend: the models of each dtype (strings too, with
    implicit state) and the ensembles over the non-bool ones; for ``custom``, Triton's
    ``custom_sequence_int32`` alone (``qa/custom_models``)."""
    if backend == "custom":
        return [harness.QA / "custom_models" / "custom_sequence_int32"]
    stem = f"{backend if backend != 'python' else 'onnx'}_{'nobatch_' if nobatch else ''}sequence"
    dtypes = ("object", *DTYPES) if variant.implicit else DTYPES
    models = [generated / kind / f"{stem}_{dtype}" for dtype in dtypes]
    ensembles = generated / f"{kind}_ensembles"
    for dtype in DTYPES if variant.env()["ENSEMBLES"] == "1" else ():
        if dtype != "bool":
            models += sorted(ensembles.glob(f"*_{stem}_{dtype}"))
    return models


def _repositories(work: Path, backends: list[str], variant: Variant) -> None:
    generated = _generated(work, variant)
    for backend in backends:
        for source in _models(generated, "fixed", backend, variant):
            for repository, batch, count in (
                ("models1", 4, 1),
                ("models2", 2, 2),
                ("models4", 1, 4),
            ):
                _edit(_copy(source, work / repository, backend), batch, count)
            queue = _copy(source, work / "queue_delay_models", backend)
            direct = (
                "direct {\nmax_queue_delay_microseconds: 3000000\nminimum_slot_utilization: 0\n}"
            )
            _edit(queue, 4, 1, direct)
            for suffix, utilization in (("_half", "0.5"), ("_full", "1")):
                copy = Path(shutil.copytree(queue, queue.parent / f"{queue.name}{suffix}"))
                config = copy / "config.pbtxt"
                text = config.read_text().replace(queue.name, copy.name, 1)
                config.write_text(
                    text.replace(
                        "minimum_slot_utilization: 0", f"minimum_slot_utilization: {utilization}"
                    )
                )
        for source in _models(generated, "fixed", backend, variant, nobatch=True):
            _edit(_copy(source, work / "models0", backend), None, 4)
        for source in _models(generated, "variable", backend, variant):
            _edit(_copy(source, work / "modelsv", backend), 4, 1)
    for pattern in ("simple_*", "fan_*", "sequence_*"):
        for ensemble in (work / "queue_delay_models").glob(pattern):
            shutil.rmtree(ensemble)
    for trial in ("0", "1", "2", "4", "v"):
        kind = "variable_ensembles" if trial == "v" else "fixed_ensembles"
        for nop in (generated / kind).glob("nop_*"):
            shutil.copytree(nop, work / f"models{trial}" / nop.name)
            (work / f"models{trial}" / nop.name / "1").mkdir(exist_ok=True)
    (work / "request_timeout_models" / "custom_sequence_int32_timeout" / "1").mkdir(parents=True)
    if variant.initial_file:
        _initial_state_files(work)


def _initial_state_files(work: Path) -> None:
    """test.sh's INITIAL_STATE_FILE edit of every model it copied: ``input_state_data``
    (100 as a little-endian int32) in its ``initial_state/``, named where its config had
    ``zero_data`` (the implicit-state models are the only ones with it)."""
    for config in sorted(work.glob("*/*/config.pbtxt")):
        text = config.read_text()
        if "zero_data" not in text:
            continue
        (config.parent / "initial_state").mkdir(exist_ok=True)
        (config.parent / "initial_state" / "input_state_data").write_bytes(b"\x64\x00\x00\x00")
        config.write_text(re.sub(r"zero_data.*", 'data_file:"input_state_data"', text))


def _trial_env(trial: str, backends: str, variant: Variant) -> dict[str, str]:
    return {
        "NO_BATCHING": "1" if trial == "0" else "0",
        "MODEL_INSTANCES": "1" if trial == "v" else "4" if trial == "0" else trial,
        "BATCHER_TYPE": "VARIABLE" if trial == "v" else "FIXED",
        "BACKENDS": backends,
        "USE_SINGLE_BUFFER": "0",
    } | variant.env()


def _runs(backends: list[str], variant: Variant) -> list[Run]:
    names = " ".join(backends)
    runs: list[Run] = []
    for trial in ["0", "1", "2", "4", "v"] if FULL else ["1"]:
        env = _trial_env(trial, names, variant)
        tests = DEFAULT_VARIANT_TESTS[variant] if variant != EXPLICIT and not FULL else []
        if tests:
            runs += [Run(f"SequenceBatcherTest.{t}", f"models{trial}", env) for t in tests]
            continue
        no_delay = NO_DELAY_TESTS if FULL else DEFAULT_NO_DELAY_TESTS
        runs += [Run(f"SequenceBatcherTest.{t}", f"models{trial}", env) for t in no_delay]
        for test in DELAY_TESTS if FULL else DEFAULT_DELAY_TESTS:
            delays = {
                "TRITONSERVER_BACKLOG_DELAY_SCHEDULER": str(backlog_delay(test)),
                "TRITONSERVER_DELAY_SCHEDULER": str(scheduler_delay(test)),
            }
            runs.append(Run(f"SequenceBatcherTest.{test}", f"models{trial}", env | delays))
    # after test.sh's loop its environment is the last trial's ("v"), NO_BATCHING=0
    if variant != EXPLICIT and not FULL:
        return runs
    queue_env = _trial_env("v", names, variant) | {
        "TRITONSERVER_BACKLOG_DELAY_SCHEDULER": "0",
        "TRITONSERVER_DELAY_SCHEDULER": "2",
    }
    runs += [
        Run(f"SequenceBatcherTest.{t}", "queue_delay_models", queue_env)
        for t in (QUEUE_DELAY_TESTS if FULL else DEFAULT_QUEUE_DELAY_TESTS)
    ]
    timeout_env = _trial_env("1", names, variant)
    if not variant.system_shm:  # test.sh runs it outside shared memory alone
        runs.append(
            Run("SequenceBatcherRequestTimeoutTest", "request_timeout_models", timeout_env, 2)
        )
    # the shared-memory run leaves it to the first: it sends no tensor through shared memory
    if "python" in backends and not variant.system_shm:
        runs.append(
            Run("SequenceBatcherPreserveOrderingTest", "preserve_ordering_models", timeout_env, 2)
        )
    return runs


def _preserve_ordering_models(work: Path) -> None:
    """test.sh's preserve_ordering_models: sequence_py, with and without preserve_ordering,
    decoupled and not."""
    base = harness.QA / "python_models" / "sequence_py"
    for mode in ("decoupled", "nondecoupled"):
        plain = work / "preserve_ordering_models" / f"seqpy_no_preserve_ordering_{mode}"
        (plain / "1").mkdir(parents=True)
        shutil.copy(base / "config.pbtxt", plain)
        shutil.copy(base / "model.py", plain / "1")
        preserve = Path(shutil.copytree(plain, plain.parent / f"seqpy_preserve_ordering_{mode}"))
        config = preserve / "config.pbtxt"
        config.write_text(
            re.sub(r"(?m)^preserve_ordering: False", "preserve_ordering: True", config.read_text())
        )
        if mode == "decoupled":
            for model in (plain, preserve):
                with (model / "config.pbtxt").open("a") as text:
                    text.write("\nmodel_transaction_policy { decoupled: true }\n")


def _run_one(host: LoopbackHost, work: Path, models: Path, run: Run) -> harness.QaRun:
    args = [f"--model-repository={models / run.repository}", "--log-verbose=1"]
    if run.env.get("TEST_SYSTEM_SHARED_MEMORY") == "1":
        args.append("--allow-client-shm=true")  # see docs/triton-qa.md
    log = work / f"{run.test}.{run.repository}.server.log"
    with harness.tritonserver(host, args, log, env=run.env):
        return harness.run_qa_file(
            host, work, "sequence_batcher_test.py", run.test, env=run.env, timeout=400
        )


@pytest.mark.parametrize(
    "variant",
    [EXPLICIT, IMPLICIT, INITIAL_ZERO, INITIAL_FILE, SYSTEM_SHM],
    ids=lambda variant: variant.name,
)
def test_sequence_batcher_test(hosts: list[LoopbackHost], tmp_path: Path, variant: Variant) -> None:
    # the python backend's sequence model keeps no implicit state, nor does Triton's C++
    # sequence backend (the custom trial): test.sh's implicit runs take the backends that do
    python = FULL and not variant.implicit
    backends = ["onnx", "custom", "python"] if python else ["onnx"]
    models = harness.work_directory(tmp_path / "models", "L0_sequence_batcher")
    _repositories(models, backends, variant)
    if "python" in backends:
        _preserve_ordering_models(models)
    runs = _runs(backends, variant)
    works = [
        harness.work_directory(tmp_path / f"lane{i}", "L0_sequence_batcher")
        for i in range(len(hosts))
    ]

    def one(lane: int, run: Run) -> harness.QaRun:
        return _run_one(hosts[lane], works[lane], models, run)

    failures = []
    lanes = hosts[:1] if variant.system_shm else hosts
    for run, outcome in harness.in_lanes(lanes, runs, one):
        try:
            outcome.check(count=run.count)
        except AssertionError as error:
            failures.append(f"{run.test} ({run.repository}): {error}")
    assert not failures, "\n".join(failures)
