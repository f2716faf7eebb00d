"""Triton's qa/L0_warmup: a config's ``model_warmup`` samples run as each instance loads,
each run in the server's log (``--log-verbose=1``), a failing one failing the load.

test.sh is bash around the server's log. Here its checks, each on a server of its own:

- for ``BACKENDS=onnx libtorch``: ``<backend>_float32_float32_float32`` with test.sh's
  ``regular sample`` (INPUT0 zeros, INPUT1 random, batch 1) and
  ``<backend>_sequence_int32`` with its ``sequence sample`` (batch 8, two iterations, its
  control inputs zeros): the log says ``is running warmup sample 'regular sample'`` and
  ``'sequence sample' for iteration 1`` and ``2``, and never ``failed to run warmup``;
- strings (``onnx``): ``onnx_zero_1_object`` with a sample of empty and one of random
  strings, ``onnx_sequence_object`` with one from its ``warmup/raw_string_data`` (the
  serialized string "233", the same in each of the batch's 8 rows);
- ``failing_infer`` (the folder's python model answering every request with an error):
  the server does not start, and its log says ``failed to run warmup sample 'zero
  sample': An Error Occurred;``;
- ``decoupled`` (the folder's decoupled python model): ``is running warmup sample
  'decoupled sample'``, no failure.

The models are the generators' (``gen_qa_models.py``, ``gen_qa_sequence_models.py``, their
``KIND_GPU`` instances ``KIND_CPU`` here); test.sh's other runs are listed in
docs/triton-qa.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

FAILED = "failed to run warmup"


def _input(name: str, datatype: str, dims: int, data: str) -> str:
    return f"""    inputs {{
        key: "{name}"
        value: {{
            data_type: {datatype}
            dims: {dims}
            {data}
        }}
    }}
"""


def _regular_sample() -> str:
    return (
        'model_warmup [{\n    name : "regular sample"\n    batch_size: 1\n'
        + _input("INPUT0", "TYPE_FP32", 16, "zero_data: true")
        + _input("INPUT1", "TYPE_FP32", 16, "random_data: true")
        + "}]\n"
    )


def _sequence_sample(backend: str) -> str:
    torch = backend == "libtorch"
    names = ("INPUT__0", "START__1", "READY__2") if torch else ("INPUT", "START", "READY")
    return (
        'model_warmup [{\n    name : "sequence sample"\n    count : 2\n    batch_size: 8\n'
        + "".join(_input(name, "TYPE_INT32", 1, "zero_data: true") for name in names)
        + "}]\n"
    )


def _string_samples() -> tuple[str, str]:
    """test.sh's samples of the string models: the identity's two, the sequence's one."""
    identity = (
        'model_warmup [\n{\n    name : "zero string stateless"\n    batch_size: 1\n'
        + _input("INPUT0", "TYPE_STRING", 16, "zero_data: true")
        + '},\n{\n    name : "random string stateless"\n    batch_size: 1\n'
        + _input("INPUT0", "TYPE_STRING", 16, "random_data: true")
        + "}\n]\n"
    )
    sequence = (
        'model_warmup [{\n    name : "string statefull"\n    batch_size: 8\n'
        + _input("INPUT", "TYPE_STRING", 1, 'input_data_file: "raw_string_data"')
        + _input("START", "TYPE_INT32", 1, "zero_data: true")
        + _input("READY", "TYPE_INT32", 1, "zero_data: true")
        + "}]\n"
    )
    return identity, sequence


def _string_models(work: Path) -> Path:
    """test.sh's ``models`` for the onnx string run, its file of one string, "233"."""
    generated = work / "generated_strings"
    repositories.generated(work, "gen_qa_sequence_models.py", "--onnx", f"--models_dir={generated}")
    repositories.identity_models(work, generated, ensembles=False)
    models = work / "models_strings"
    identity, sequence = _string_samples()
    for name, sample in (("onnx_zero_1_object", identity), ("onnx_sequence_object", sequence)):
        model = Path(shutil.copytree(generated / name, models / name))
        config = model / "config.pbtxt"
        config.write_text(config.read_text().replace("KIND_GPU", "KIND_CPU") + sample)
    shutil.rmtree(generated)
    (models / "onnx_sequence_object" / "warmup").mkdir()
    raw = models / "onnx_sequence_object" / "warmup" / "raw_string_data"
    raw.write_bytes(b"\x03\x00\x00\x00\x32\x33\x33")
    return models


def _append(model: Path, text: str) -> None:
    config = model / "config.pbtxt"
    config.write_text(config.read_text() + text)


def _models(work: Path, backend: str) -> Path:
    """test.sh's ``models`` for one backend's fixed-size run."""
    generated = work / f"generated_{backend}"
    repositories.generated(work, "gen_qa_models.py", f"--{backend}", f"--models_dir={generated}")
    repositories.generated(
        work, "gen_qa_sequence_models.py", f"--{backend}", f"--models_dir={generated}"
    )
    models = work / f"models_{backend}"
    fixed = Path(shutil.copytree(generated / f"{backend}_float32_float32_float32",
                                 models / f"{backend}_float32_float32_float32"))  # fmt: skip
    sequence = Path(shutil.copytree(generated / f"{backend}_sequence_int32",
                                    models / f"{backend}_sequence_int32"))  # fmt: skip
    shutil.rmtree(generated)
    for model in (fixed, sequence):  # the generators' GPU instances, on a CPU here
        config = model / "config.pbtxt"
        config.write_text(config.read_text().replace("KIND_GPU", "KIND_CPU"))
    _append(fixed, _regular_sample())
    _append(sequence, _sequence_sample(backend))
    return models


def _log_of(host: LoopbackHost, models: Path, log: Path) -> str:
    args = [f"--model-repository={models}", "--log-verbose=1", "--exit-timeout-secs=120"]
    with harness.tritonserver(host, args, log) as server:
        pass
    return server.log()


def test_warmup(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_warmup")
    failures: list[str] = []

    def expect(log: str, what: str, present: list[str], absent: list[str]) -> None:
        failures.extend(f"{what}: {text!r} not in the log" for text in present if text not in log)
        failures.extend(f"{what}: {text!r} in the log" for text in absent if text in log)

    for backend in ("onnx", "libtorch"):
        log = _log_of(host, _models(work, backend), work / f"{backend}.server.log")
        expect(log, backend, [
            "is running warmup sample 'regular sample'",
            "is running warmup sample 'sequence sample' for iteration 1",
            "is running warmup sample 'sequence sample' for iteration 2",
        ], [FAILED])  # fmt: skip

    log = _log_of(host, _string_models(work), work / "strings.server.log")
    expect(log, "onnx strings", [
        "is running warmup sample 'zero string stateless'",
        "is running warmup sample 'random string stateless'",
        "is running warmup sample 'string statefull'",
    ], [FAILED])  # fmt: skip

    failing = work / "failing_models"
    shutil.copytree(work / "failing_infer", failing / "failing_infer")
    args = [f"--model-repository={failing}", "--log-verbose=1", "--exit-timeout-secs=120"]
    log = harness.start_fails(host, args, work / "failing.server.log")
    expect(
        log, "failing_infer", ["failed to run warmup sample 'zero sample': An Error Occurred;"], []
    )

    decoupled = work / "decoupled_models"
    shutil.copytree(work / "decoupled", decoupled / "decoupled")
    log = _log_of(host, decoupled, work / "decoupled.server.log")
    expect(log, "decoupled", ["is running warmup sample 'decoupled sample'"], [FAILED])
    assert not failures, "\n".join(failures)
