"""Triton's qa/L0_lifecycle: loading, unloading, polling, readiness and shutdown.

Its test.sh starts a server per case (about 67 of them) with the flags each case is
about (``--model-control-mode``, ``--load-model``, ``--strict-readiness``,
``--exit-on-error``, ``--repository-poll-secs``, several ``--model-repository``,
``--model-config-name``, ``--model-load-retry-count``...), runs one test of
lifecycle_test.py against it, and for some checks the server's log, or runs no test
and checks what the server answers or that it refused to start. Each case here is one
``Case``, in test.sh's order, run four at a time (each in a namespace of its own; the
tests sleep while the server polls).

Stand-ins: Triton's repository holds TensorFlow (``graphdef_*``, ``savedmodel_*``) and
TensorRT (``plan_*``) models of the same tensors and versions as its ONNX ones; here
each is the ONNX model ``gen_qa_models.py --onnx`` makes, renamed (as in
L0_response_cache), and the ``simple_*`` ensembles are ``gen_qa_models.py --ensemble``'s.
``qa/python_models/identity_fp32`` and ``add_sub`` are Triton's own python models,
``identity_zero_1_int32`` and ``custom_zero_1_float32`` Triton's identity backend,
``custom_sequence_int32`` (Triton's C++ ``sequence`` backend) its config served by
``sequence_backend.py``, a python model computing what that backend computes.
What cannot run here (GPUs, TensorRT and PyTorch platforms) is listed in ``NOT_RUN`` with
its reason (docs/triton-qa.md).

The default run takes the cases that cover the most distinct behaviour within CI's
budget (``DEFAULT``); ``TRITON_QA=full`` runs every case.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories
from tests.triton_qa.conftest import FULL

pytestmark = pytest.mark.slow

F32 = "float32_float32_float32"
I32 = "int32_int32_int32"
TRITON_VERSION = "2.51.0"

# lifecycle_test.py's tests whose cases are not run here, with why
NOT_RUN: dict[str, str] = {
    "test_load_same_model_different_platform": (
        "checks the metadata's platform is tensorrt_plan, then pytorch_libtorch: TensorRT "
        "and PyTorch models of one name (4 cases: gRPC and HTTP, two orders)"
    ),
    "test_concurrent_same_model_load_unload_stress": (
        "65,536 load and unload calls from 32 threads: about 15 minutes on two cores, past "
        "any CI budget (run by hand: docs/triton-qa.md)"
    ),
    "test_load_gpu_limit": (
        "needs an NVIDIA GPU (cuda_memory_consumer allocates GPU memory; with it the two "
        "--model-load-gpu-limit command lines test.sh expects to be refused)"
    ),
}


GPU_SUBTESTS = (
    "its KIND_GPU subtests need a GPU, and the failed python KIND_GPU load leaves the server "
    "not ready, strictly, which its onnx KIND_CPU subtest checks last (after it served); "
    "its python KIND_CPU subtest passes"
)


@dataclass
class Case:
    """One server of test.sh, and what is checked against it."""

    name: str
    tests: list[str]  # lifecycle_test.py tests, run one after the other
    build: Callable[[Path, Path], None]  # (work, generated): the repositories
    args: list[str]  # "{work}" is the case's work directory
    wait: str = "ready"  # ready (run_server), live (run_server_tolive), up (nowait)
    env: dict[str, str] = field(default_factory=dict)
    log_has: list[str] = field(default_factory=list)  # the server's log must say
    refused: bool = False  # the server must end by itself
    check: Callable[[LoopbackHost, Path], list[str]] | None = None  # no test: this instead
    # its test cannot pass here (why; its failure must say ``fails_with``, and name none of
    # the subtests in ``passes``)
    out_of_reach: str = ""
    fails_with: str = ""
    passes: list[str] = field(default_factory=list)


# -- repositories -----------------------------------------------------------------------


def _qa(generated: Path, target: Path, platform: str, dtype: str = "float32") -> Path:
    """``qa_model_repository/<platform>_<dtype>x3``: the ONNX model, renamed."""
    source = generated / f"onnx_{dtype}_{dtype}_{dtype}"
    name = f"{platform}_{dtype}_{dtype}_{dtype}"
    model = target / name
    shutil.copytree(source, model)
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace(f'"{source.name}"', f'"{name}"'))
    return model


def _ensemble(generated: Path, target: Path, name: str) -> Path:
    return Path(shutil.copytree(generated / name, target / name))


def _sed(path: Path, pattern: str, replacement: str, count: int = 0) -> None:
    path.write_text(re.sub(pattern, replacement, path.read_text(), count=count))


def _empty(work: Path, *names: str) -> None:
    for name in names:
        shutil.rmtree(work / name, ignore_errors=True)
        (work / name).mkdir()


def _nothing(work: Path, generated: Path) -> None:
    _empty(work, "models")


def _modelfail(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_0")
    for platform in ("graphdef", "savedmodel"):
        _qa(generated, work / "models", platform)
    for platform in ("onnx", "plan"):
        _qa(generated, work / "models_0", platform)
    for file in (work / "models" / f"graphdef_{F32}" / "3").iterdir():
        file.unlink()


def _no_model_config(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_0")
    for platform in ("graphdef", "savedmodel"):
        _qa(generated, work / "models", platform)
    for platform in ("onnx", "plan"):
        _qa(generated, work / "models_0", platform)
    (work / "models" / f"graphdef_{F32}" / "config.pbtxt").unlink()


def _init_error(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_0")
    sequence = shutil.copytree(
        generated / "sequence" / "onnx_sequence_int32", work / "models" / "onnx_sequence_int32"
    )
    _sed(sequence / "config.pbtxt", "OUTPUT", "_OUTPUT", count=1)
    _sed(
        _qa(generated, work / "models_0", "onnx", "int32") / "config.pbtxt", "OUTPUT", "_OUTPUT", 1
    )
    for platform in ("graphdef", "savedmodel"):
        _qa(generated, work / "models", platform)
    _qa(generated, work / "models_0", "onnx")


def _no_version(work: Path, generated: Path) -> None:
    _empty(work, "models")
    for platform in ("savedmodel", "onnx", "plan"):
        _qa(generated, work / "models", platform)
    model = work / "models" / f"graphdef_{F32}"
    model.mkdir()
    shutil.copy(generated / f"onnx_{F32}" / "config.pbtxt", model)
    _sed(model / "config.pbtxt", f'"onnx_{F32}"', f'"graphdef_{F32}"')


def _renamed_version(directory: str) -> Callable[[Path, Path], None]:
    def build(work: Path, generated: Path) -> None:
        _empty(work, "models")
        model = _qa(generated, work / "models", "savedmodel")
        (model / "3").rename(model / directory)

    return build


def _load_unload(work: Path, generated: Path) -> None:
    _empty(work, "models")
    for platform in ("graphdef", "onnx", "plan"):
        _qa(generated, work / "models", platform)
    _qa(generated, work, "savedmodel")


def _version_load_unload(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _qa(generated, work / "models", "graphdef", "int32")


def _model_modify(work: Path, generated: Path) -> None:
    _empty(work, "models")
    for platform in ("savedmodel", "plan"):
        model = _qa(generated, work / "models", platform)
        config = (model / "config.pbtxt").read_text()
        (work / f"config.pbtxt.{platform}").write_text(
            re.sub(r"(?m)^version_policy.*\n", "", config)
        )
        (work / f"config.pbtxt.wrong.{platform}").write_text(
            config.replace("output0_labels", "wrong_output0_labels")
        )
        labels = (model / "output0_labels.txt").read_text()
        (model / "wrong_output0_labels.txt").write_text(labels.replace("label", "label9"))


def _file_delete(work: Path, generated: Path) -> None:
    _empty(work, "models")
    for platform in ("savedmodel", "plan"):
        _qa(generated, work / "models", platform)


def _multiple_repositories(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_0")
    _qa(generated, work / "models", "graphdef")
    _qa(generated, work / "models_0", "onnx")
    _qa(generated, work, "savedmodel")
    shutil.rmtree(_qa(generated, work / "models", "savedmodel") / "3")


def _batch_one(config: Path) -> None:
    _sed(config, r"max_batch_size:.*", "max_batch_size: 1")


def _model_control(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _batch_one(_qa(generated, work / "models", "onnx") / "config.pbtxt")
    _batch_one(_ensemble(generated, work / "models", f"simple_onnx_{F32}") / "config.pbtxt")


def _model_control_fail(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _qa(generated, work / "models", "onnx")
    for file in model.glob("*/*"):
        file.unlink()
    _batch_one(model / "config.pbtxt")


def _startup_models(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_0")
    for platform in ("plan", "onnx"):
        _batch_one(_qa(generated, work / "models", platform) / "config.pbtxt")
        ensemble = _ensemble(generated, work / "models_0", f"simple_{platform}_{F32}")
        _batch_one(ensemble / "config.pbtxt")
    _qa(generated, work / "models", "savedmodel")
    _qa(generated, work / "models_0", "savedmodel")


def _one_onnx(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _batch_one(_qa(generated, work / "models", "onnx") / "config.pbtxt")


def _repository_index(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_0")
    for platform in ("graphdef", "savedmodel"):
        _qa(generated, work / "models", platform)
        _ensemble(generated, work / "models_0", f"simple_{platform}_{F32}")
    _qa(generated, work / "models", "onnx")
    _qa(generated, work / "models_0", "onnx")


def _identity(work: Path, versions: tuple[str, ...] = ("1",)) -> Path:
    model = Path(
        shutil.copytree(work / "identity_zero_1_int32", work / "models" / "identity_zero_1_int32")
    )
    for version in versions:
        (model / version).mkdir()
    return model


def _availability(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _identity(work)


def _availability_2(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _identity(work, ("1", "2"))
    with (model / "config.pbtxt").open("a") as config:
        config.write("version_policy: { specific { versions: [1] }}\n")
    text = (work / "identity_zero_1_int32" / "config.pbtxt").read_text()
    (work / "config.pbtxt.v2").write_text(text + "version_policy: { specific { versions: [2] }}\n")


def _availability_3(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _identity(work, ("1", "2"))
    with (model / "config.pbtxt").open("a") as config:
        config.write("version_policy: { specific { versions: [1] }}\n")
    shutil.copy(model / "config.pbtxt", work / "config.pbtxt.new")


def _reload_fail(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _identity(work, ("1", "2"))
    with (model / "config.pbtxt").open("a") as config:
        config.write("version_policy: { specific { versions: [1] }}\n")
    text = (work / "identity_zero_1_int32" / "config.pbtxt").read_text()
    text += "version_policy: { specific { versions: [2] }}\n"
    (work / "config.pbtxt.v2.gpu").write_text(text.replace("KIND_CPU", "KIND_GPU"))


def _four_models(work: Path, generated: Path) -> None:
    _empty(work, "models")
    for platform in ("graphdef", "savedmodel", "onnx", "plan"):
        _qa(generated, work / "models", platform)


def _int32_graphdef(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _qa(generated, work / "models", "graphdef", "int32")


def _config_override(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _qa(generated, work / "models", "onnx")
    for version in ("1", "3"):
        for file in (model / version).iterdir():
            file.unlink()


def _file_override(work: Path, generated: Path) -> None:
    _empty(work, "models")
    shutil.rmtree(_qa(generated, work / "models", "onnx") / "1")


def _custom_zero(work: Path, extra: str) -> Path:
    model = work / "models" / "custom_zero_1_float32"
    (model / "1").mkdir(parents=True)
    text = (harness.QA / "custom_models" / "custom_zero_1_float32" / "config.pbtxt").read_text()
    (model / "config.pbtxt").write_text(text + extra)
    return model


DELAY_5S = (
    "dynamic_batching {}\nparameters [\n"
    '{ key: "execute_delay_ms"; value: { string_value: "5000" }}\n]\n'
)


def _shutdown_dynamic(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _custom_zero(work, DELAY_5S)


def _shutdown_ensemble(work: Path, generated: Path) -> None:
    _empty(work, "models")
    shutil.copytree(work / "ensemble_zero_1_float32", work / "models" / "ensemble_zero_1_float32")
    (work / "models" / "ensemble_zero_1_float32" / "1").mkdir()
    _custom_zero(work, DELAY_5S)


def _shutdown_sequence(work: Path, generated: Path) -> None:
    _empty(work, "models")
    repositories.custom_sequence_int32(work / "models")


def _python_identity(work: Path, target: Path, name: str, append: str = "") -> Path:
    """``../python_models/identity_fp32`` as ``name``, its model.py in version 1 with
    ``append`` (test.sh's echo lines) at its end."""
    model = Path(shutil.copytree(work.parent / "python_models" / "identity_fp32", target / name))
    (model / "1").mkdir()
    (model / "model.py").rename(model / "1" / "model.py")
    if append:
        with (model / "1" / "model.py").open("a") as code:
            code.write(append)
    _sed(model / "config.pbtxt", '"identity_fp32"', f'"{name}"')
    return model


def _sleep_in(method: str, seconds: int) -> str:
    signature = "finalize(self)" if method == "finalize" else "initialize(self, args)"
    return f"    def {signature}:\n        import time\n        time.sleep({seconds})\n"


def _load_speedup(work: Path, generated: Path) -> None:
    _empty(work, "models")
    for suffix in ("_1", "_2"):
        model = _identity(work)
        name = f"identity_zero_1_int32{suffix}"
        model.rename(work / "models" / name)
        _sed(work / "models" / name / "config.pbtxt", "identity_zero_1_int32", name)
        _python_identity(
            work, work / "models", f"python_identity_fp32{suffix}", _sleep_in("initialize", 10)
        )


def _concurrent_load(work: Path, generated: Path) -> None:
    _empty(work, "models", "models_v2")
    shutil.rmtree(work / "models_v1", ignore_errors=True)
    model = Path(
        shutil.copytree(work / "identity_zero_1_int32", work / "models" / "identity_model")
    )
    (model / "1").mkdir()
    _sed(model / "config.pbtxt", "identity_zero_1_int32", "identity_model")
    _python_identity(work, work / "models_v2", "identity_model")


def _concurrent_load_unload(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _identity(work)
    shutil.copytree(work / "ensemble_zero_1_float32", work / "models" / "ensemble_zero_1_float32")
    (work / "models" / "ensemble_zero_1_float32" / "1").mkdir()
    _custom_zero(
        work,
        'parameters [\n{ key: "creation_delay_sec"; value: { string_value: "10" }}\n]\n',
    )


def _load_unload_stress(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _identity(work)
    _sed(model / "config.pbtxt", 'string_value: "10"', 'string_value: "0"')


def _instance_speedup(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _python_identity(work, work / "models", "identity_fp32", _sleep_in("initialize", 10))
    (model / "config.pbtxt").unlink()


def _instance_sanity(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _python_identity(work, work / "models", f"python_{F32}")
    (model / "config.pbtxt").unlink()
    (work / "models" / f"onnx_{F32}").mkdir()
    shutil.copytree(generated / f"onnx_{F32}" / "1", work / "models" / f"onnx_{F32}" / "1")


def _retry(work: Path, generated: Path) -> None:
    _empty(work, "models")
    shutil.copytree(work / "retry_model", work / "models" / "retry_model")


def _config_overwrite(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = _python_identity(work, work / "models", "identity_fp32", _sleep_in("initialize", 5))
    (model / "config.pbtxt").unlink()


def _background_unloading(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _python_identity(work, work / "models", "identity_fp32", _sleep_in("finalize", 10))


def _while_loading(work: Path, generated: Path) -> None:
    _empty(work, "models")
    _python_identity(work, work / "models", "identity_fp32", _sleep_in("initialize", 10))


def _live_connection(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = Path(
        shutil.copytree(work.parent / "python_models" / "add_sub", work / "models" / "add_sub")
    )
    (model / "1").mkdir()
    (model / "model.py").rename(model / "1" / "model.py")


def _custom_config(in_place: bool) -> Callable[[Path, Path], None]:
    def build(work: Path, generated: Path) -> None:
        _empty(work, "models")
        model = _qa(generated, work / "models", "savedmodel")
        (model / "configs").mkdir()
        custom = re.sub(
            r"(?m)^version_policy:.*",
            "version_policy: { specific: { versions: [2] }}",
            (model / "config.pbtxt").read_text(),
        )
        target = (
            model / "configs" / "custom.pbtxt"
            if in_place
            else work / "config.pbtxt.custom.savedmodel"
        )
        target.write_text(custom)

    return build


def _new_model_version(work: Path, generated: Path) -> None:
    _empty(work, "models")
    model = Path(
        shutil.copytree(
            work.parent / "python_models" / "identity_fp32", work / "models" / "identity_fp32"
        )
    )
    with (model / "config.pbtxt").open("a") as config:
        config.write("version_policy: { specific: { versions: [1, 2] } }\n")
    with (model / "model.py").open("a") as code:
        code.write(
            "    def initialize(self, args):\n"
            "        pb_utils.Logger.log_info(f'[PB model] Loading version "
            '{args["model_version"]}\')\n'
        )
    for version in ("1", "2", "3"):
        (model / version).mkdir()
        shutil.copy(model / "model.py", model / version)
    (model / "model.py").unlink()


# -- checks without a test --------------------------------------------------------------

_STATUS_SCRIPT = """
import sys, urllib.request, urllib.error
request = urllib.request.Request("http://localhost:8000" + sys.argv[2], method=sys.argv[1])
try:
    print(urllib.request.urlopen(request, timeout=30).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""


def _status(host: LoopbackHost, method: str, path: str) -> int:
    done = subprocess.run(
        host.command([sys.executable, "-c", _STATUS_SCRIPT, method, path]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return int(done.stdout.strip() or 0)


def _control_api_when_polling(host: LoopbackHost, work: Path) -> list[str]:
    """Polling (with --model-store): the load and unload APIs refuse, and the model
    stays ready even when its files are gone."""
    model = f"graphdef_{F32}"
    failures = []
    if _status(host, "POST", f"/v2/repository/models/{model}/unload") == 200:
        failures.append("unload answered 200 while polling")
    if _status(host, "GET", f"/v2/models/{model}/ready") != 200:
        failures.append("the model is not ready after a refused unload")
    for file in (work / "models" / model).glob("*/*"):
        file.unlink()
    if _status(host, "POST", f"/v2/repository/models/{model}/load") == 200:
        failures.append("load answered 200 while polling")
    if _status(host, "GET", f"/v2/models/{model}/ready") != 200:
        failures.append("the model is not ready after a refused load")
    return failures


def _invalid_endpoints(host: LoopbackHost, work: Path) -> list[str]:
    return [
        f"{path}: {status}, expected 404"
        for path in ("/notapi/v2", "/v2/notapi", "/v2/models/notapi/foo")
        if (status := _status(host, "GET", path)) != 404
    ]


def _retry_ready(host: LoopbackHost, work: Path) -> list[str]:
    status = _status(host, "GET", "/v2/models/retry_model/ready")
    return [] if status == 200 else [f"retry_model ready answered {status}"]


def _port_collision(service: str, ports: list[str]) -> Callable[[LoopbackHost, Path], list[str]]:
    """A second server beside the case's, on ``ports`` and the one of ``service`` that
    the first holds: it must say so and end (``service`` None: every port collides)."""

    def check(host: LoopbackHost, work: Path) -> list[str]:
        args = [f"--model-repository={work}/models", *ports]
        log = harness.start_fails(host, args, work / "second.log")
        expected = (
            # test.sh's '0.0.0.0:PORT': tritonserver listens on 127.0.0.1 unless told
            rf"failed to start {service} service: Unavailable - Socket '[^']+:\d+' already in use"
            if service
            else r"failed to start.*service: Unavailable - Socket '.*' already in use"
        )
        return [] if re.search(expected, log) else [f"no {expected!r} in:\n{log[-2000:]}"]

    return check


def _no_port_collision(host: LoopbackHost, work: Path) -> list[str]:
    args = [f"--model-repository={work}/models", "--grpc-port=8003", "--http-port=8004",
            "--metrics-port=8005"]  # fmt: skip
    with harness.tritonserver(host, args, work / "second.log", http_port=8004):
        return []


# -- the cases, in test.sh's order ------------------------------------------------------


def _cases() -> list[Case]:
    models = "--model-repository={work}/models"
    models_0 = "--model-repository={work}/models_0"
    missing = "--model-repository=/tmp/xyzx-lifecycle-missing"
    poll = ["--repository-poll-secs=1", "--model-control-mode=poll", "--exit-timeout-secs=5"]
    explicit = [
        "--model-control-mode=explicit",
        "--exit-timeout-secs=5",
        "--strict-model-config=false",
        "--strict-readiness=false",
    ]
    fail5 = ["--exit-on-error=false", "--exit-timeout-secs=5"]
    cases = [
        Case(
            "parse_error_noexit_strict",
            ["test_parse_error_noexit"],
            _nothing,
            [missing, "--strict-readiness=true", "--exit-on-error=false"],
            wait="up",
        ),
        Case(
            "parse_error_noexit",
            ["test_parse_error_noexit"],
            _nothing,
            [missing, "--strict-readiness=false", "--exit-on-error=false"],
            wait="up",
        ),
        Case(
            "parse_error_noexit_strict_two_repositories",
            ["test_parse_error_noexit"],
            _nothing,
            [missing, models, "--strict-readiness=true", "--exit-on-error=false"],
            wait="up",
        ),
        Case(
            "parse_error_noexit_two_repositories",
            ["test_parse_error_noexit"],
            _nothing,
            [models, missing, "--strict-readiness=false", "--exit-on-error=false"],
            wait="up",
        ),
        Case(
            "grpc_port_collision",
            [],
            _nothing,
            [models],
            check=_port_collision("GRPC", ["--http-port=8003", "--metrics-port=8004"]),
        ),
        Case(
            "http_port_collision",
            [],
            _nothing,
            [models],
            check=_port_collision("HTTP", ["--grpc-port=8003", "--metrics-port=8004"]),
        ),
        Case(
            "metrics_port_collision",
            [],
            _nothing,
            [models],
            check=_port_collision("Metrics", ["--grpc-port=8003", "--http-port=8004"]),
        ),
        Case("multiple_port_collisions", [], _nothing, [models], check=_port_collision("", [])),
        Case("no_port_collision", [], _nothing, [models], check=_no_port_collision),
        Case(
            "parse_error_modelfail",
            ["test_parse_error_modelfail"],
            _modelfail,
            [models, models_0, *fail5],
            wait="live",
        ),
        Case(
            "parse_error_modelfail_nostrict",
            ["test_parse_error_modelfail_nostrict"],
            _modelfail,
            [models, models_0, *fail5, "--strict-readiness=false"],
            wait="live",
        ),
        Case(
            "parse_error_no_model_config",
            ["test_parse_error_no_model_config"],
            _no_model_config,
            [models, models_0, *fail5, "--strict-model-config=true"],
            wait="live",
            log_has=[
                "failed to open text file for read",
                f"graphdef_{F32}/config.pbtxt: No such file or directory",
            ],
        ),
        Case(
            "init_error_modelfail",
            ["test_init_error_modelfail"],
            _init_error,
            [models, models_0, *fail5],
            wait="live",
        ),
        Case(
            "parse_error_model_no_version",
            ["test_parse_error_model_no_version"],
            _no_version,
            [models, *fail5],
            wait="live",
        ),
        Case(
            "parse_ignore_zero_prefixed_version",
            ["test_parse_ignore_zero_prefixed_version"],
            _renamed_version("003"),
            [models, *fail5],
            log_has=[
                "ignore version directory '003' which contains leading zeros in its directory name"
            ],
        ),
        Case(
            "parse_ignore_non_intergral_version",
            ["test_parse_ignore_non_intergral_version"],
            _renamed_version("abc"),
            [models, *fail5],
            log_has=["ignore version directory 'abc' which fails to convert to integral number"],
        ),
        Case(
            "dynamic_model_load_unload",
            ["test_dynamic_model_load_unload"],
            _load_unload,
            [models, *poll],
        ),
        Case(
            "dynamic_model_load_unload_disabled",
            ["test_dynamic_model_load_unload_disabled"],
            _load_unload,
            [models, "--model-control-mode=none", "--exit-timeout-secs=5"],
        ),
        Case(
            "dynamic_version_load_unload",
            ["test_dynamic_version_load_unload"],
            _version_load_unload,
            [models, *poll],
        ),
        Case(
            "dynamic_version_load_unload_disabled",
            ["test_dynamic_version_load_unload_disabled"],
            _version_load_unload,
            [models, "--model-control-mode=none", "--exit-timeout-secs=5"],
        ),
        Case(
            "dynamic_model_modify",
            ["test_dynamic_model_modify"],
            _model_modify,
            [models, *poll],
        ),
        Case(
            "dynamic_file_delete",
            ["test_dynamic_file_delete"],
            _file_delete,
            [models, *poll, "--strict-model-config=false"],
        ),
        Case(
            "multiple_model_repository_polling",
            ["test_multiple_model_repository_polling"],
            _multiple_repositories,
            [models, models_0, *poll],
        ),
        Case(
            "multiple_model_repository_control",
            ["test_multiple_model_repository_control"],
            _multiple_repositories,
            [models, models_0, "--model-control-mode=explicit", "--exit-timeout-secs=5"],
        ),
        Case(
            "model_control",
            ["test_model_control"],
            _model_control,
            [models, *explicit],
        ),
        Case(
            "model_control_fail",
            ["test_model_control_fail"],
            _model_control_fail,
            [models, *explicit],
        ),
        Case(
            "model_control_ensemble",
            ["test_model_control_ensemble"],
            _model_control,
            [models, *explicit],
        ),
        Case(
            "multiple_model_repository_control_startup_models",
            ["test_multiple_model_repository_control_startup_models"],
            _startup_models,
            [
                models,
                models_0,
                "--model-control-mode=explicit",
                "--strict-readiness=false",
                "--strict-model-config=false",
                "--exit-on-error=false",
                f"--load-model=savedmodel_{F32}",
                f"--load-model=plan_{F32}",
                f"--load-model=simple_onnx_{F32}",
            ],
        ),
        Case(
            "startup_models_all",
            ["test_multiple_model_repository_control_startup_models"],
            _startup_models,
            [
                models,
                models_0,
                "--model-control-mode=explicit",
                "--strict-readiness=false",
                "--strict-model-config=false",
                "--exit-on-error=false",
                "--load-model=*",
            ],
        ),
        Case(
            "load_all_and_one",
            [],
            _one_onnx,
            [
                models,
                models_0,
                "--model-control-mode=explicit",
                "--strict-readiness=true",
                "--exit-on-error=true",
                "--load-model=*",
                f"--load-model=onnx_{F32}",
            ],
            refused=True,
        ),
        Case(
            "load_missing",
            [],
            _nothing,
            [
                models,
                "--model-control-mode=explicit",
                "--strict-readiness=true",
                "--exit-on-error=true",
                "--load-model=does-not-exist",
            ],
            refused=True,
            log_has=["model not found in any model repository"],
        ),
        Case(
            "model_repository_index",
            ["test_model_repository_index"],
            _repository_index,
            [
                models,
                models_0,
                "--model-control-mode=explicit",
                "--strict-readiness=false",
                "--strict-model-config=false",
                "--exit-on-error=false",
                f"--load-model=onnx_{F32}",
                f"--load-model=graphdef_{F32}",
                f"--load-model=simple_savedmodel_{F32}",
            ],
        ),
    ]
    identity = [
        models,
        *explicit[:3],
        "--load-model=identity_zero_1_int32",
        "--strict-readiness=false",
    ]
    for test, build in (
        ("test_model_availability_on_reload", _availability),
        ("test_model_availability_on_reload_2", _availability_2),
        ("test_model_availability_on_reload_3", _availability_3),
    ):
        for protocol in ("grpc", "http"):
            env = {"TRITONSERVER_USE_GRPC": "1"} if protocol == "grpc" else {}
            cases.append(
                Case(
                    f"{test[5:]}_{protocol}",
                    [test],
                    build,
                    identity,
                    env=env,
                )
            )
    cases.append(
        Case(
            "model_reload_fail",
            ["test_model_reload_fail"],
            _reload_fail,
            identity,
            log_has=[
                "failed to load 'identity_zero_1_int32' version 2: Internal: GPU "
                "instances not supported"
            ],
        )
    )
    cases += [
        Case("control_api_when_polling", [], _four_models,
             ["--model-store={work}/models", "--repository-poll-secs=0", "--exit-timeout-secs=5",
              "--strict-model-config=false", "--model-control-mode=poll"],
             check=_control_api_when_polling),
        Case("invalid_endpoints", [], _int32_graphdef,
             [models, "--model-control-mode=none", "--exit-timeout-secs=5"],
             check=_invalid_endpoints),
        Case("config_override", ["test_config_override"], _config_override,
             [models, models, "--model-control-mode=explicit", "--strict-model-config=false"]),
        Case("file_override", ["test_file_override", "test_file_override_security"],
             _file_override,
             [models, "--model-control-mode=explicit", f"--load-model=onnx_{F32}",
              "--strict-model-config=false"]),
        Case("shutdown_dynamic", ["test_shutdown_dynamic"], _shutdown_dynamic,
             [models, "--log-verbose=1"],
             log_has=["Model 'custom_zero_1_float32' (version 1) has 1 in-flight inferences"]),
        Case("shutdown_sequence", ["test_shutdown_sequence"], _shutdown_sequence,
             [models, "--log-verbose=1"],
             log_has=["Model 'custom_sequence_int32' (version 1) has 2 in-flight inferences",
                      "Model 'custom_sequence_int32' (version 1) has 1 in-flight inferences"]),
        Case("shutdown_ensemble", ["test_shutdown_ensemble"], _shutdown_ensemble,
             [models, "--log-verbose=1"],
             log_has=["Model 'ensemble_zero_1_float32' (version 1) has 1 in-flight inferences"]),
        Case("concurrent_model_load_speedup", ["test_concurrent_model_load_speedup"],
             _load_speedup, [models, "--model-control-mode=explicit"]),
        Case("concurrent_model_load", ["test_concurrent_model_load"], _concurrent_load,
             [models, "--model-control-mode=explicit"]),
        Case("concurrent_model_load_unload", ["test_concurrent_model_load_unload"],
             _concurrent_load_unload, [models, "--model-control-mode=explicit"]),
        Case("concurrent_same_model_load_unload_stress",
             ["test_concurrent_same_model_load_unload_stress"], _load_unload_stress,
             [models, "--model-control-mode=explicit", "--model-load-thread-count=32",
              "--log-verbose=2"]),
        Case("concurrent_model_instance_load_speedup",
             ["test_concurrent_model_instance_load_speedup"], _instance_speedup,
             [models, "--model-control-mode=explicit"]),
        Case("concurrent_model_instance_load_sanity",
             ["test_concurrent_model_instance_load_sanity"], _instance_sanity,
             [models, "--model-control-mode=explicit", "--log-verbose=2"],
             env={"PARALLEL_BACKENDS": "python onnx"}, out_of_reach=GPU_SUBTESTS,
             fails_with="kind='KIND_GPU'",
             passes=[f"(backend='python', model='python_{F32}', kind='KIND_CPU')"]),
        Case("load_retry_without_retries", [], _retry, [models, "--model-control-mode=none"],
             refused=True),
        Case("load_retry", [], _retry,
             [models, "--model-control-mode=none", "--model-load-retry-count=1"],
             check=_retry_ready),
        Case("model_config_overwrite", ["test_model_config_overwite"], _config_overwrite,
             [models, "--model-control-mode=explicit", "--load-model", "identity_fp32"]),
        Case("shutdown_while_background_unloading",
             ["test_shutdown_while_background_unloading"], _background_unloading,
             [models, "--model-control-mode=explicit", "--load-model", "identity_fp32",
              "--log-verbose=2"]),
        Case("shutdown_while_loading", ["test_shutdown_while_loading"], _while_loading,
             [models, "--model-control-mode=explicit", "--log-verbose=2"]),
        Case("shutdown_with_live_connection", ["test_shutdown_with_live_connection"],
             _live_connection, [models]),
        Case("add_custom_config", ["test_add_custom_config"], _custom_config(False),
             [models, *poll, "--model-config-name=custom"]),
        Case("delete_custom_config", ["test_delete_custom_config"], _custom_config(True),
             [models, *poll, "--model-config-name=custom"]),
        Case("load_new_model_version", ["test_load_new_model_version"], _new_model_version,
             [models, "--model-control-mode=explicit", "--load-model=*"],
             env={"PYTHONDONTWRITEBYTECODE": "True"}),
    ]  # fmt: skip
    return cases


# -- running them -----------------------------------------------------------------------


_STABLE_SCRIPT = """
import json, sys, time, urllib.request
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    request = urllib.request.Request("http://localhost:8000/v2/repository/index", b"{}")
    try:
        index = json.loads(urllib.request.urlopen(request, timeout=5).read())
        if not any(model.get("state") in ("LOADING", "UNLOADING") for model in index):
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)
sys.exit(3)
"""


def _run_case(host: LoopbackHost, tmp: Path, generated: Path, case: Case) -> list[str]:
    work = harness.work_directory(tmp / case.name, "L0_lifecycle")
    case.build(work, generated)
    args = [arg.replace("{work}", str(work)) for arg in case.args]
    log_path = work / "server.log"
    env = {"TRITON_SERVER_VERSION": TRITON_VERSION, **case.env}
    if case.refused:
        log = harness.start_fails(host, args, log_path)
        return [f"{m!r} not in its log" for m in case.log_has if m not in log]
    failures: list[str] = []
    wait = {"up": "metadata"}.get(case.wait, case.wait)
    with harness.tritonserver(host, args, log_path, wait=wait, cwd=work, env=env) as server:
        if case.wait == "live":  # test.sh's wait_for_model_stable
            subprocess.run(
                host.command([sys.executable, "-c", _STABLE_SCRIPT, "60"]), timeout=90, check=False
            )
        if case.check is not None:
            failures += case.check(host, work)
        for test in case.tests:
            test_env = env | {
                "SERVER_PID": str(server.process.process.pid),
                "SERVER_LOG": str(log_path),
            }
            run = harness.run_qa_file(
                host, work, "lifecycle_test.py", f"LifeCycleTest.{test}", env=test_env, timeout=300
            )
            name = f"LifeCycleTest::{test}"
            expected = {name: case.out_of_reach} if case.out_of_reach else {}
            try:
                run.check(count=1, out_of_reach=expected)
            except AssertionError as error:
                failures.append(str(error))
            outcome = run.outcomes.get(name)
            if case.fails_with and outcome is not None and case.fails_with not in outcome.message:
                failures.append(f"{test} fails otherwise than for its reason:\n{outcome.message}")
            for subtest in case.passes:
                if outcome is not None and subtest in outcome.message:
                    failures.append(f"{test}: its subtest {subtest} failed:\n{outcome.message}")
        log = server.log()
    failures += [f"{m!r} not in the server's log" for m in case.log_has if m not in log]
    return failures


# the default run: one case of each kind of behaviour, within CI's budget (four servers
# at a time, about 22 s on two cores): a repository it cannot read, a port in use, an
# unknown startup model, polling (models come and go; a name in two repositories), the
# control API refused while polling, a custom config appearing, explicit control with an
# ensemble (and unload_dependents), two repositories' index, a reload that fails, a
# load's config, file overrides, a drain on a signal
DEFAULT = frozenset({
    "parse_error_noexit", "grpc_port_collision", "load_missing", "dynamic_model_load_unload",
    "multiple_model_repository_polling", "control_api_when_polling", "add_custom_config",
    "model_control", "model_control_ensemble", "model_repository_index", "model_reload_fail",
    "config_override", "file_override", "shutdown_ensemble",
})  # fmt: skip
# TRITON_QA=full: every case, in four groups of about the same length, each a test of
# its own (four servers at a time in each)
SECTIONS = {
    "start": ("parse_", "init_", "grpc_port", "http_port", "metrics_port", "multiple_port",
              "no_port", "load_all", "load_missing", "load_retry"),
    "poll": ("dynamic_", "multiple_model_repository_polling", "add_custom", "delete_custom",
             "control_api", "invalid_endpoints"),
    "explicit": ("model_control", "multiple_model_repository_control", "startup_models",
                 "model_repository_index", "model_availability", "model_reload_fail",
                 "config_override", "file_override", "model_config_overwrite",
                 "load_new_model_version"),
    "concurrency": ("concurrent_", "shutdown_"),
}  # fmt: skip


def _chosen(section: str) -> list[Case]:
    cases = [c for c in _cases() if not set(c.tests) & set(NOT_RUN)]
    if section == "default":
        return [c for c in cases if c.name in DEFAULT]
    prefixes = SECTIONS[section]
    return [c for c in cases if c.name.startswith(prefixes)]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Triton's generated models (ONNX, the ensembles, the sequence models), made once."""
    tmp = tmp_path_factory.mktemp("generated")
    work = harness.work_directory(tmp / "generator", "L0_lifecycle")
    models = tmp / "models"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={models}")
    repositories.generated(work, "gen_qa_models.py", "--ensemble", f"--models_dir={models}")
    repositories.generated(
        work, "gen_qa_sequence_models.py", "--onnx", f"--models_dir={models / 'sequence'}"
    )
    return models


@pytest.mark.parametrize("section", list(SECTIONS) if FULL else ["default"])
def test_lifecycle(
    hosts: list[LoopbackHost], tmp_path: Path, generated: Path, section: str
) -> None:
    started = time.monotonic()
    cases = _chosen(section)

    def one(lane: int, case: Case) -> list[str]:
        try:
            found = _run_case(hosts[lane], tmp_path, generated, case)
        except Exception as error:  # a server that did not start, a test that hung
            found = [f"{type(error).__name__}: {error}"]
        with (tmp_path / "outcomes.txt").open("a") as outcomes:  # as each case ends
            outcomes.write(f"{case.name}: {'FAILED' if found else 'passed'}\n")
        return found

    failures = [
        f"{case.name}: " + "\n".join(found)
        for case, found in harness.in_lanes(hosts, cases, one)
        if found
    ]
    print(f"{section}: {len(cases)} cases in {time.monotonic() - started:.0f}s")
    assert not failures, "\n\n".join(failures)


def test_every_case_is_in_one_group() -> None:
    names = [c.name for c in _cases() if not set(c.tests) & set(NOT_RUN)]
    grouped = [c.name for section in SECTIONS for c in _chosen(section)]
    assert sorted(grouped) == sorted(names)
    assert set(names) >= DEFAULT
