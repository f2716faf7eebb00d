"""Triton's qa/L0_infer: every data type through models and ensembles, raw and class outputs.

As its test.sh runs ``infer_test.py`` on a CPU-only machine (``TRITON_SERVER_CPU_ONLY=1``:
the one ``cpu`` target), one repository and one server for the backends of its default
BACKENDS that run here: ``gen_qa_models.py --onnx``'s models and ``--libtorch``'s
TorchScript ones (``qa_model_repository``), its ``--ensemble`` ensembles over them
(``simple_``, ``sequence_``, ``fan_``, with their ``nop_*`` identity-backend steps),
test.sh's python models (each ONNX model's config with ``backend: "python"``,
``qa/python_models/add_sub``, or ``sub_add`` for the types test.sh swaps),
``instance_group [ { kind: KIND_CPU }]`` appended to each, ``custom_zero_1_float32`` with
its no-batch copy (the identity backend) and test.sh's ``qa/ensemble_models``. Triton's
``graphdef_*`` and ``savedmodel_*`` (TensorFlow) models are the generated ONNX models
renamed, with the same tensors, versions and version policies: the file defines its
version-policy and mixed-ensemble tests only where BACKENDS names them, and what those
test is the server's. The same file runs again with ``TEST_SYSTEM_SHARED_MEMORY=1``
(no class outputs), its regions in a ``/dev/shm`` of the server's and the client's own,
and with ``BACKENDS=python_dlpack`` (which the file runs in place of ``python`` where
BACKENDS names both).

The default run, within CI's budget, is one server on a part of that repository (the
INT32 ONNX models and their ensembles) and two of the file's tests on it;
``TRITON_QA=full`` runs the file as test.sh does.
"""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

# test.sh's SERVER_ARGS_EXTRA (Triton's backends where it installs them; its python
# backend settings, which modelyard takes and a stub of its own does not need)
SERVER_ARGS_EXTRA = [
    "--exit-timeout-secs=600",
    "--backend-directory=/opt/tritonserver/backends",
    "--backend-config=tensorflow,version=2",
    "--backend-config=python,stub-timeout-seconds=120",
    f"--backend-config=python,shm-default-byte-size={1024 * 1024}",
]
# test.sh's ENSEMBLE_MODELS (qa/ensemble_models) where BACKENDS names graphdef, and
# where it names savedmodel too
MIXED_ENSEMBLES = [
    "wrong_label_int32_float32_float32", "label_override_int32_float32_float32",
    "mix_type_int32_float32_float32", "batch_to_nobatch_float32_float32_float32",
    "batch_to_nobatch_nobatch_float32_float32_float32",
    "nobatch_to_batch_float32_float32_float32",
    "nobatch_to_batch_nobatch_float32_float32_float32",
    "mix_nobatch_batch_float32_float32_float32",
]  # fmt: skip
MIXED_PLATFORM_ENSEMBLES = [
    "mix_platform_float32_float32_float32", "mix_ensemble_int32_float32_float32",
]  # fmt: skip
# the types test.sh serves with sub_add rather than add_sub
SWAP_TYPES = ("float32", "int32", "int16", "int8")

# the backends of test.sh's default BACKENDS that run here (graphdef and savedmodel as
# the generated ONNX models renamed); python_dlpack, which the file runs in place of
# python where BACKENDS names both, runs on its own
BACKENDS = "graphdef savedmodel onnx libtorch python"
# test.sh's EXPECTED_NUM_TESTS; without graphdef in BACKENDS the file leaves out its four
# mix_* ensemble tests
TESTS = 46
TESTS_SHARED_MEMORY = 33
TESTS_NO_GRAPHDEF = 42

DEFAULT_TESTS = ["InferTest.test_raw_iii", "InferTest.test_class_iii"]


def _client_env(backends: str, system_shared_memory: bool = False) -> dict[str, str]:
    """What test.sh exports (and its defaults) for the file."""
    return {
        "BACKENDS": backends,
        "ENSEMBLES": "1",
        "NOBATCH": "1",
        "BATCH": "1",
        "TRITON_SERVER_CPU_ONLY": "1",
        "TEST_SYSTEM_SHARED_MEMORY": "1" if system_shared_memory else "0",
        "TEST_CUDA_SHARED_MEMORY": "0",
        "TEST_VALGRIND": "0",
    }


def _python_model(onnx_model: Path, models: Path, backend: str) -> None:
    """test.sh's python (or python_dlpack) model for one ONNX model: its config with the
    platform removed, ``backend: "python"`` for the version policy, ``onnx`` read as the
    backend's name; add_sub's model.py, or sub_add's for the swapped types (their
    ``dlpack_`` twins for python_dlpack)."""
    name = onnx_model.name.replace("onnx", backend)
    model = models / name
    (model / "1").mkdir(parents=True)
    config = (onnx_model / "config.pbtxt").read_text()
    config = re.sub(r"platform:.*", "", config)
    config = re.sub(r"version_policy.*", 'backend: "python"', config)
    (model / "config.pbtxt").write_text(config.replace("onnx", backend))
    shutil.copy(onnx_model / "output0_labels.txt", model)
    swapped = {f"{backend}_{t}_{t}_{t}" for t in SWAP_TYPES}
    swapped |= {f"{backend}_nobatch_{t}_{t}_{t}" for t in SWAP_TYPES}
    source = "sub_add" if name in swapped else "add_sub"
    if backend == "python_dlpack":
        source = f"dlpack_{source}"
    shutil.copy(harness.QA / "python_models" / source / "model.py", model / "1")


def _renamed(onnx_model: Path, models: Path, backend: str) -> None:
    """Triton's TensorFlow model of the same tensors and versions (``graphdef_*``,
    ``savedmodel_*``): the generated ONNX model under its name."""
    name = onnx_model.name.replace("onnx", backend, 1)
    model = Path(shutil.copytree(onnx_model, models / name))
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace(f'"{onnx_model.name}"', f'"{name}"'))


def _append(config: Path, line: str) -> None:
    with config.open("a") as file:
        file.write(line + "\n")


def _custom_zero(work: Path, models: Path) -> None:
    """test.sh's ``custom_zero_1_float32`` (``max_batch_size: 8``, dims ``[ -1 ]``) and
    ``custom_nobatch_zero_1_float32`` (no batching, dims ``[ -1, -1 ]``)."""
    batch = Path(shutil.copytree(harness.QA / "custom_models" / "custom_zero_1_float32",
                                 models / "custom_zero_1_float32"))  # fmt: skip
    (batch / "1").mkdir(exist_ok=True)
    _append(batch / "config.pbtxt", "instance_group [ { kind: KIND_CPU }]")
    nobatch = Path(shutil.copytree(batch, models / "custom_nobatch_zero_1_float32"))
    config = batch / "config.pbtxt"
    text = config.read_text().replace("max_batch_size: 1", "max_batch_size: 8")
    config.write_text(text.replace("dims: [ 1 ]", "dims: [ -1 ]"))
    config = nobatch / "config.pbtxt"
    text = config.read_text().replace("custom_zero_1_float32", "custom_nobatch_zero_1_float32")
    text = text.replace("max_batch_size: 1", "max_batch_size: 0")
    config.write_text(text.replace("dims: [ 1 ]", "dims: [ -1, -1 ]"))


def _generated(work: Path, store: Path, backends: list[str]) -> None:
    """Triton's qa_model_repository and its qa_ensemble_model_repository, in ``store``
    (made once for the module's runs): ``onnx``, ``ensembles``, and ``libtorch`` where
    BACKENDS names it."""
    wanted = {"onnx": ["--onnx"], "ensembles": ["--ensemble"]}
    if "libtorch" in backends:
        wanted["libtorch"] = ["--libtorch"]
    missing = [(folder, args) for folder, args in wanted.items() if not (store / folder).exists()]
    with ThreadPoolExecutor(len(missing) or 1) as pool:  # the generators are independent
        made = [
            pool.submit(
                repositories.generated, work, "gen_qa_models.py", *args, f"--models_dir={store / f}"
            )
            for f, args in missing
        ]
        for done in made:
            done.result()


def model_repository(
    work: Path,
    store: Path,
    backends: list[str],
    only: str | None = None,
    ensembles: bool = True,
) -> Path:
    """test.sh's generate_model_repository for the ``cpu`` target, from the generated
    models in ``store``; ``only``: the models (and ensembles) whose name holds it, all
    otherwise."""
    _generated(work, store, backends)
    generated, ensemble_models, torchscript = (store / f for f in ("onnx", "ensembles", "libtorch"))
    models = work / "models"
    shutil.rmtree(models, ignore_errors=True)
    models.mkdir()
    onnx_models = sorted(p for p in generated.glob("onnx_*") if only is None or only in p.name)
    for backend in backends:
        for onnx_model in onnx_models:
            if backend in ("python", "python_dlpack"):
                _python_model(onnx_model, models, backend)
            elif backend == "onnx":
                shutil.copytree(onnx_model, models / onnx_model.name)
            elif backend != "libtorch":
                _renamed(onnx_model, models, backend)
    if "libtorch" in backends:
        for model in torchscript.glob("libtorch_*"):
            if only is None or only in model.name:
                shutil.copytree(model, models / model.name)
    if ensembles:
        steps: set[str] = set()
        for backend in backends:
            if backend not in ("python", "python_dlpack"):
                for ensemble in ensemble_models.glob(f"*{backend}*"):
                    if only is None or only in ensemble.name:
                        shutil.copytree(ensemble, models / ensemble.name)
                        config = (ensemble / "config.pbtxt").read_text()
                        steps |= set(re.findall(r'model_name: "(nop_[^"]*)"', config))
        for nop in ensemble_models.glob("nop_*"):
            if only is None or nop.name in steps:
                shutil.copytree(nop, models / nop.name)
                (models / nop.name / "1").mkdir(exist_ok=True)
        if "graphdef" in backends:  # test.sh's ENSEMBLE_MODELS
            mixed = list(MIXED_ENSEMBLES)
            if "savedmodel" in backends:
                mixed += MIXED_PLATFORM_ENSEMBLES
            for name in mixed:
                shutil.copytree(harness.QA / "ensemble_models" / name, models / name)
                (models / name / "1").mkdir(exist_ok=True)
    for backend in backends:  # KIND_CPU: the cpu target's KIND, and the python backends'
        for config in models.glob(f"{backend}*/config.pbtxt"):
            _append(config, "instance_group [ { kind: KIND_CPU }]")
    _custom_zero(work, models)
    return models


def _run(
    host: LoopbackHost,
    tmp_path: Path,
    work: Path,
    backends: str,
    *selection: str,
    system_shared_memory: bool = False,
    repository: str = "models",
    env: dict[str, str] | None = None,
) -> harness.QaRun:
    args = [f"--model-repository={work / repository}", *SERVER_ARGS_EXTRA]
    if system_shared_memory:
        args.append("--allow-client-shm=true")
    log = tmp_path / f"inference_server.cpu.{repository}.log"
    with (
        host.own_shm(tmp_path / "shm"),
        harness.tritonserver(host, args, log, timeout=300),
    ):
        return harness.run_qa_file(
            host,
            work,
            "infer_test.py",
            *selection,
            env={**_client_env(backends, system_shared_memory), **(env or {})},
            timeout=900,
        )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the generators' models are made, once for the module's runs."""
    return tmp_path_factory.mktemp("generated")


def test_infer_default(host: LoopbackHost, store: Path, tmp_path: Path) -> None:
    """The default run: the INT32 ONNX models and their ensembles, two tests (raw and
    class outputs)."""
    work = harness.work_directory(tmp_path, "L0_infer")
    model_repository(work, store, ["onnx"], only="int32_int32_int32")
    run = _run(host, tmp_path, work, "onnx", *DEFAULT_TESTS)
    run.check(count=len(DEFAULT_TESTS))


@pytest.mark.triton_qa_full
def test_infer(host: LoopbackHost, store: Path, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_infer")
    model_repository(work, store, BACKENDS.split())
    run = _run(host, tmp_path, work, BACKENDS)
    run.check(count=TESTS)


@pytest.mark.triton_qa_full
def test_infer_system_shared_memory(host: LoopbackHost, store: Path, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_infer")
    model_repository(work, store, BACKENDS.split())
    run = _run(host, tmp_path, work, BACKENDS, system_shared_memory=True)
    run.check(count=TESTS_SHARED_MEMORY)


@pytest.mark.triton_qa_full
def test_infer_python_dlpack(host: LoopbackHost, store: Path, tmp_path: Path) -> None:
    """The python_dlpack trial (the file runs it in place of python where BACKENDS names
    both): DLPack tensors between pb_utils and torch."""
    work = harness.work_directory(tmp_path, "L0_infer")
    model_repository(work, store, ["python_dlpack"])
    run = _run(host, tmp_path, work, "python_dlpack")
    run.check(count=TESTS_NO_GRAPHDEF)


@pytest.mark.triton_qa_full
@pytest.mark.parametrize("backend", ["onnx", "python", "python_dlpack"])
def test_infer_valgrind_layout(
    host: LoopbackHost, store: Path, tmp_path: Path, backend: str
) -> None:
    """test.sh's TEST_VALGRIND runs, without valgrind (below): each backend alone (the
    ONNX models with one instance each), its non-batching models (and ensembles, with
    the ``nop_*`` steps) moved to ``nobatch_models``, a server on each repository, the
    file with ``BATCH=1 NOBATCH=0`` on the first and ``BATCH=0 NOBATCH=1`` on the other.
    valgrind's leak check is of Triton's C++ process; under it, modelyard's Python
    process would take hours and report CPython's allocator."""
    work = harness.work_directory(tmp_path, "L0_infer")
    models = model_repository(work, store, [backend])
    if backend == "onnx":
        for config in models.glob("onnx*/config.pbtxt"):
            text = config.read_text().replace(
                "instance_group [ { kind: KIND_CPU }]",
                "instance_group [ { kind: KIND_CPU count: 1 }]",
            )
            config.write_text(text)
    nobatch = work / "nobatch_models"
    nobatch.mkdir()
    for model in models.glob("*nobatch_*"):
        shutil.move(model, nobatch / model.name)
    for nop in models.glob("nop_*"):
        shutil.copytree(nop, nobatch / nop.name)
    for repository, batch in (("models", True), ("nobatch_models", False)):
        flags = {"BATCH": str(int(batch)), "NOBATCH": str(int(not batch))}
        run = _run(host, tmp_path, work, backend, repository=repository, env=flags)
        run.check(count=TESTS_NO_GRAPHDEF)
