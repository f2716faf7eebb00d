"""Triton's qa/L0_model_config: configs the server must refuse, each in Triton's words, and
configs it must serve as Triton normalizes them.

As its test.sh: a server per case, on a repository of that case's model (or models),
which must not start, its log holding one of the case's ``expected*`` texts (test.sh
greps them, as basic regular expressions, on Triton's ``E`` lines; here ``grep`` runs
the same patterns on the log, whose lines carry Triton's words in their ``triton=`` or
``detail=`` field). test.sh's preparation is made as it makes it: version folders,
``qa/python_models/auto_complete``'s ``model.py``, the generated
``libtorch_float32_float32_float32`` model for the PyTorch cases.

* ``cli_messages``: the deprecation and override warnings of ``--strict-model-config``;
* ``special_cases``: an unknown platform, a ``runtime`` library that is missing or
  escapes its directory;
* ``noautofill_platform``: 59 configs under each of test.sh's five platforms, with
  ``--strict-model-config=true`` and with ``--disable-auto-complete-config`` (the default
  run takes each config once, the platforms and flags in turn);
* ``autofill_noplatform``: the 61 cases of its CPU backends (ONNX, PyTorch, python,
  ensembles, custom backends, a model without a version);
* ``autofill_noplatform_success``: a server per case, which must start, and
  ``compare_status.py`` (unchanged) finding the config it serves among the case's
  ``expected*`` ones, field for field.

Out of reach, each named in ``OUT_OF_REACH`` with why: the TensorFlow, TensorRT and
OpenVINO cases (not vendored), the GPU ones (among the success cases, those whose every
expected config places the model on GPU 0, ``ON_A_GPU``). The decoupled-branching
ensembles' ``repeat_int32`` is Triton's C++ repeat backend, here its stand-in through
``--backend-directory``. The default run takes 130 servers, four at a time, in six tests
(about 95 s);
``TRITON_QA=full`` adds every platform and flag of noautofill_platform (558 servers, about
6 minutes).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

QA_DIR = harness.QA / "L0_model_config"
REPEAT_BACKEND = Path(__file__).with_name("repeat_backend.py")
TRIALS = ("tensorflow_savedmodel", "tensorflow_graphdef", "tensorrt_plan", "onnxruntime_onnx",
          "pytorch_libtorch")  # fmt: skip
FLAGS = ("--strict-model-config=true", "--disable-auto-complete-config")
# test.sh's trials whose backend library this host has (the instance group is checked
# once the backend's library is found)
WITH_BACKEND = ("onnxruntime_onnx", "pytorch_libtorch")
OUT_OF_REACH = {
    "special_cases/noautofill_noconfig": "a TensorFlow GraphDef model (no backend here)",
    "noautofill_platform/negative_gpu": (
        "its first instance group names GPU 0 with KIND_AUTO, a GPU group on Triton's "
        "machine; on a host without one it is KIND_CPU naming a GPU, refused first"
    ),
}
PYTORCH_CASES = ("autofill_noplatform/pytorch/too_few_inputs",
                 "autofill_noplatform/pytorch/too_few_outputs")  # fmt: skip
PYTHON_CASES = ("input_mismatch_datatype", "input_mismatch_dims", "output_mismatch_datatype",
                "output_mismatch_dims")  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One server start of test.sh: the repository it copies, its flags, its platform."""

    source: str  # relative to the QA folder
    args: tuple[str, ...]
    platform: str = ""  # noautofill_platform's trial
    whole_repository: bool = False  # the folder is a repository, not one model

    @property
    def label(self) -> str:
        return "/".join(p for p in (self.source, self.platform, *self.args[:1]) if p)


def _special_cases() -> list[Case]:
    """test.sh's command-line and special cases (those in reach)."""
    cases = [Case("cli_messages/cli_override",
                  ("--disable-auto-complete-config", "--strict-model-config=false")),
             Case("cli_messages/cli_deprecation", ("--strict-model-config=true",))]  # fmt: skip
    return cases + [
        Case(f"special_cases/{t}", ("--disable-auto-complete-config",) if t == "invalid_platform"
             else ())
        for t in ("invalid_platform", "invalid_runtime", "runtime_escape")
    ]  # fmt: skip


def _noautofill_cases(every: bool) -> list[Case]:
    """Each noautofill_platform config under test.sh's platforms and flags (``every``: all
    ten; else one, the platforms and flags in turn)."""
    cases = []
    targets = sorted(p.name for p in (QA_DIR / "noautofill_platform").iterdir())
    for index, target in enumerate(targets):
        if f"noautofill_platform/{target}" in OUT_OF_REACH:
            continue
        runs = [(t, f) for f in FLAGS for t in TRIALS]
        for trial, flag in runs if every else [runs[index % len(runs)]]:
            gpu_group = target in ("invalid_cpu", "invalid_gpu")
            if gpu_group and trial not in WITH_BACKEND:
                continue
            cases.append(Case(f"noautofill_platform/{target}", (flag,), trial))
    return cases


def _autofill_cases(kinds: tuple[str, ...]) -> list[Case]:
    """autofill_noplatform's cases of ``kinds`` (its folders: backends and the like)."""
    cases = []
    for kind in kinds:
        for target in sorted((QA_DIR / "autofill_noplatform" / kind).iterdir()):
            whole = not (target / "config.pbtxt").exists()
            source = f"autofill_noplatform/{kind}/{target.name}"
            cases.append(Case(source, ("--strict-model-config=false",), whole_repository=whole))
    return cases


def _prepare(work: Path) -> None:
    """test.sh's preparation of the folder, for the cases run here."""
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--libtorch", f"--models_dir={generated}")
    torchscript = generated / "libtorch_float32_float32_float32" / "1" / "model.pt"
    for case in PYTORCH_CASES:
        (work / case / "1").mkdir(parents=True, exist_ok=True)
        shutil.copy(torchscript, work / case / "1")
    python = work.parent / "python_models" / "auto_complete" / "model.py"
    for case in PYTHON_CASES:
        (work / "autofill_noplatform/python" / case / "1").mkdir(parents=True, exist_ok=True)
        shutil.copy(python, work / "autofill_noplatform/python" / case / "1")
    for model in (work / "autofill_noplatform/python").iterdir():
        if (model / "model.py").exists():  # test.sh's models that bring their own model.py
            (model / "1").mkdir(exist_ok=True)
            shutil.copy(model / "model.py", model / "1")
    for path in ("autofill_noplatform/custom/no_delimiter/1",
                 "autofill_noplatform/custom/unknown_backend.unknown/1",
                 "noautofill_platform/invalid_cpu/1", "noautofill_platform/invalid_gpu/1",
                 "noautofill_platform/negative_gpu/1"):  # fmt: skip
        (work / path).mkdir(parents=True, exist_ok=True)
    for ensemble in (work / "autofill_noplatform/ensemble").iterdir():  # version folders
        for model in (p for p in ensemble.iterdir() if p.is_dir()):
            (model / "1").mkdir(exist_ok=True)
    escape = work / "special_cases/runtime_escape"
    (escape / "1").mkdir(exist_ok=True)
    (escape / "dummy_runtime").mkdir(exist_ok=True)
    (escape / "dummy_runtime/libtriton_identity.so").touch()
    (work / "special_cases/invalid_runtime/1").mkdir(exist_ok=True)
    (work / "special_cases/invalid_platform/1").mkdir(exist_ok=True)
    backends = work / "backends" / "repeat"
    backends.mkdir(parents=True)
    shutil.copy(REPEAT_BACKEND, backends / "model.py")
    _prepare_success(work, torchscript)


def _prepare_success(work: Path, torchscript: Path) -> None:
    """test.sh's preparation of autofill_noplatform_success (its CPU backends)."""
    success = work / "autofill_noplatform_success"
    identity = work / "generated_identity"
    repositories.generated(work, "gen_qa_identity_models.py", "--onnx", f"--models_dir={identity}")
    (success / "onnx/cpu_instance/1").mkdir(parents=True, exist_ok=True)
    shutil.copy(identity / "onnx_zero_1_float16/1/model.onnx", success / "onnx/cpu_instance/1")
    for case in ("pytorch/no_name_platform", "pytorch/cpu_instance"):
        (success / case / "1").mkdir(parents=True, exist_ok=True)
        shutil.copy(torchscript, success / case / "1")
    python = work.parent / "python_models" / "auto_complete" / "model.py"
    for case in ("incomplete_output", "unknown_input", "unknown_output", "empty_config"):
        (success / "python" / case / "1").mkdir(parents=True, exist_ok=True)
        shutil.copy(python, success / "python" / case / "1")
    own = [p for p in (success / "python").rglob("model.py") if p.parent.name != "1"]
    for model in own:  # test.sh's models that bring their own model.py
        (model.parent / "1").mkdir(exist_ok=True)
        shutil.copy(model, model.parent / "1")
    for case in ("empty_config.identity", "no_backend.identity"):
        (success / "custom" / case / "1").mkdir(parents=True, exist_ok=True)
    for ensemble in (success / "ensemble").iterdir():  # version folders
        for model in (p for p in ensemble.iterdir() if p.is_dir()):
            (model / "1").mkdir(exist_ok=True)


def _repository(work: Path, case: Case, lane: int) -> tuple[Path, list[str]]:
    """test.sh's ``models`` for a case (its sed of the platform too), and its expected
    texts."""
    models = work / f"models{lane}"
    shutil.rmtree(models, ignore_errors=True)
    models.mkdir()
    source = work / case.source
    if case.whole_repository:
        for child in source.iterdir():
            copy = shutil.copytree if child.is_dir() else shutil.copy
            copy(child, models / child.name)
        expected = sorted(models.glob("expected*"))
    else:
        target = Path(shutil.copytree(source, models / source.name))
        expected = sorted(target.glob("expected*"))
        config = target / "config.pbtxt"
        if case.platform and config.exists():
            kept = [line for line in config.read_text().splitlines() if "platform:" not in line]
            config.write_text("\n".join(kept) + f'\nplatform: "{case.platform}"\n')
    return models, [path.read_text().strip() for path in expected]


def _grep(pattern: str, log: str) -> bool:
    return subprocess.run(["grep", "-e", pattern], input=log, text=True,
                          capture_output=True).returncode == 0  # fmt: skip


# test.sh's single models without a config file (any other folder without one is a whole
# repository)
NO_CONFIG = ("no_config", "no_config_variable", "no_config_shape_tensor",
             "no_config_non_linear_format_io")  # fmt: skip
ON_A_GPU = (
    "every expected config places its instances on GPU 0 (KIND_GPU, gpus: 0), as Triton "
    "normalizes an instance group that names no kind on a host with a GPU; this host has none"
)


def _success_cases() -> tuple[list[Case], dict[str, str]]:
    """autofill_noplatform_success's cases of its CPU backends (the vendored ones), and those
    out of reach with why."""
    cases, out_of_reach = [], {}
    for kind in sorted((QA_DIR / "autofill_noplatform_success").iterdir()):
        for target in sorted(kind.iterdir()):
            source = f"autofill_noplatform_success/{kind.name}/{target.name}"
            single = (target / "config.pbtxt").exists() or target.name in NO_CONFIG
            expected = sorted(target.glob("expected*") if single else target.glob("*/expected*"))
            assert expected, source
            if all("KIND_GPU" in path.read_text() for path in expected):
                out_of_reach[source] = ON_A_GPU
                continue
            cases.append(Case(source, ("--strict-model-config=false",),
                              whole_repository=not single))  # fmt: skip
    return cases, out_of_reach


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The QA folder, prepared as test.sh prepares it."""
    prepared = harness.work_directory(tmp_path_factory.mktemp("qa"), "L0_model_config")
    _prepare(prepared)
    return prepared


def _run(hosts: list[LoopbackHost], work: Path, logs: Path, cases: list[Case]) -> None:
    """Each case's server, four at a time: none may start, each log holds an expected text."""

    def one(lane: int, case: Case) -> str | None:
        models, expected = _repository(work, case, lane)
        args = [f"--model-repository={models}", *case.args]
        if "decoupled_branching" in case.source:  # Triton's C++ repeat backend's stand-in
            args.append(f"--backend-directory={work / 'backends'}")
        log = harness.start_fails(hosts[lane], args, logs / f"lane{lane}.log")
        if any(_grep(pattern, log) for pattern in expected):
            return None
        return f"{case.label}: none of {expected} in\n{log[-1500:]}"

    failures = [said for _, said in harness.in_lanes(hosts, cases, one) if said]
    assert not failures, "\n\n".join(failures[:8]) + f"\n({len(failures)} of {len(cases)})"


def test_command_line_and_special_cases(
    hosts: list[LoopbackHost], work: Path, tmp_path: Path
) -> None:
    _run(hosts, work, tmp_path, _special_cases())


def test_noautofill_platform(hosts: list[LoopbackHost], work: Path, tmp_path: Path) -> None:
    _run(hosts, work, tmp_path, _noautofill_cases(every=False))


@pytest.mark.parametrize("kinds", [("common", "custom", "onnx", "pytorch"), ("python",),
                                   ("ensemble",)], ids=lambda kinds: "+".join(kinds))  # fmt: skip
def test_autofill_noplatform(
    hosts: list[LoopbackHost], work: Path, tmp_path: Path, kinds: tuple[str, ...]
) -> None:
    _run(hosts, work, tmp_path, _autofill_cases(kinds))


def test_autofill_noplatform_success(hosts: list[LoopbackHost], work: Path, tmp_path: Path) -> None:
    """Each case's server starts, and compare_status.py (unchanged) finds the config it
    serves among the case's expected ones (Triton's normalized config, field for field)."""
    cases, out_of_reach = _success_cases()
    assert len(cases) == 8 and len(out_of_reach) == 16, (cases, out_of_reach)

    def one(lane: int, case: Case) -> str | None:
        models, _ = _repository(work, case, lane)
        target = Path(case.source).name
        args = [f"--model-repository={models}", *case.args]
        with harness.tritonserver(hosts[lane], args, tmp_path / f"lane{lane}.log"):
            compared = harness.run_script(
                hosts[lane], work / "compare_status.py", "--expected_dir",
                str(models / target), "--model", target, cwd=work,
            )  # fmt: skip
        if compared.returncode == 0:
            return None
        return f"{case.label}:\n{compared.stdout[-2500:]}{compared.stderr[-1000:]}"

    failures = [said for _, said in harness.in_lanes(hosts, cases, one) if said]
    assert not failures, "\n\n".join(failures)


@pytest.mark.triton_qa_full
@pytest.mark.timeout(1200)
def test_noautofill_platform_every_trial(
    hosts: list[LoopbackHost], work: Path, tmp_path: Path
) -> None:
    _run(hosts, work, tmp_path, _noautofill_cases(every=True))
