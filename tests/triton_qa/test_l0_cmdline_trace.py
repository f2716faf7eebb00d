"""Triton's qa/L0_cmdline_trace (bash around ``trace_client.py`` and
``qa/common/trace_summary.py``): the older trace flags (``--trace-file``,
``--trace-level``, ``--trace-rate``, ``--trace-log-frequency``, ``--trace-count``), their
trace files as ``trace_summary.py`` reads them, an ensemble's steps in them, the flags'
deprecation warnings, and bad batch span processor settings refused at start.

As its test.sh: ``simple`` (``gen_qa_models.py --onnx``'s ``onnx_int32_int32_int32``,
version 1, renamed), ten gRPC and ten HTTP requests a trial on a server of its own, each
trace file summarised and counted as test.sh counts it; then the nested ensemble
(``--ensemble``'s ``fan_onnx_int32_int32_int32`` as ``simple`` over the fan ensemble, its
``nop_TYPE_INT32_-1`` steps the identity backend) with every step's record, and the
start checks. ``TRITON_QA=full`` only (about two minutes).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

FOLDER = "L0_cmdline_trace"
BASE = "onnx_int32_int32_int32"
# trial: its flags, and test.sh's counts of COMPUTE_INPUT_END and of ^simple in each
# summary (its trace file, or the indexed files of a log frequency)
TRIALS = {
    "min": (["--trace-level=MIN", "--trace-rate=1"], {"trace_min.log": 20}),
    "max": (["--trace-level=MAX", "--trace-rate=9"], {"trace_max.log": 2}),
    "1": (["--trace-level=TIMESTAMPS", "--trace-rate=1"], {"trace_1.log": 20}),
    "6": (["--trace-level=TIMESTAMPS", "--trace-rate=6"], {"trace_6.log": 3}),
    "frequency": (["--trace-level=TIMESTAMPS", "--trace-rate=6", "--trace-log-frequency=2"],
                  {"trace_frequency.log.0": 2, "trace_frequency.log.1": 1}),
    "9": (["--trace-level=TIMESTAMPS", "--trace-rate=9"], {"trace_9.log": 2}),
}  # fmt: skip
ENSEMBLE_RECORDS = [
    '{"id":1,"model_name":"simple","model_version":1,"request_id":"1"}',
    '{"id":2,"model_name":"nop_TYPE_INT32_-1","model_version":1,"request_id":"1","parent_id":1}',
    f'{{"id":3,"model_name":"fan_{BASE}","model_version":1,"request_id":"1","parent_id":1}}',
    '{"id":4,"model_name":"nop_TYPE_INT32_-1","model_version":1,"request_id":"1","parent_id":3}',
    f'{{"id":5,"model_name":"{BASE}","model_version":1,"request_id":"1","parent_id":3}}',
    '{"id":6,"model_name":"nop_TYPE_INT32_-1","model_version":1,"request_id":"1","parent_id":3}',
    '{"id":7,"model_name":"nop_TYPE_INT32_-1","model_version":1,"request_id":"1","parent_id":3}',
    '{"id":8,"model_name":"nop_TYPE_INT32_-1","model_version":1,"request_id":"1","parent_id":1}',
    '{"id":9,"model_name":"nop_TYPE_INT32_-1","model_version":1,"request_id":"1","parent_id":1}',
]
DEPRECATED = ["--trace-file", "--trace-rate", "--trace-level", "--trace-log-frequency",
              "--trace-count"]  # fmt: skip
BAD_BSP = [
    ({"OTEL_BSP_MAX_QUEUE_SIZE": "bad_value"}, [], 'Bad option: "OTEL_BSP_MAX_QUEUE_SIZE"'),
    ({"OTEL_BSP_SCHEDULE_DELAY": "bad_value"}, [], 'Bad option: "OTEL_BSP_SCHEDULE_DELAY"'),
    ({"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "bad_value"}, [],
     'Bad option: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"'),
    *(({}, ["--trace-config", f"opentelemetry,{key}=bad_value"],
       f'Bad option: "--trace-config opentelemetry,{key}"')
      for key in ("bsp_max_queue_size", "bsp_schedule_delay", "bsp_max_export_batch_size")),
]  # fmt: skip


def repositories_of(work: Path) -> tuple[Path, Path]:
    """test.sh's ``trace_models`` for the plain trials, and for the ensemble ones."""
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--onnx", f"--models_dir={generated}")
    repositories.generated(work, "gen_qa_models.py", "--ensemble", f"--models_dir={generated}")
    plain = work / "trace_models"
    simple = shutil.copytree(generated / BASE, plain / "simple")
    for version in ("2", "3"):
        shutil.rmtree(simple / version)
    _sed_name(simple / "config.pbtxt", "simple")
    nested = work / "trace_models_ensemble"
    model = shutil.copytree(generated / BASE, nested / BASE)
    for version in ("2", "3"):
        shutil.rmtree(model / version)
    for name in (f"fan_{BASE}", "simple"):
        (nested / name / "1").mkdir(parents=True)
        text = (generated / f"fan_{BASE}" / "config.pbtxt").read_text()
        text = "\n".join("" if line.lstrip().startswith("label_filename:") else line
                         for line in text.split("\n"))  # fmt: skip
        if name == "simple":
            text = "\n".join(line.replace(BASE, f"fan_{BASE}", 1) for line in text.split("\n"))
        (nested / name / "config.pbtxt").write_text(text)
        if name == "simple":
            _sed_name(nested / name / "config.pbtxt", "simple")
    nop = shutil.copytree(generated / "nop_TYPE_INT32_-1", nested / "nop_TYPE_INT32_-1")
    (nop / "1").mkdir(exist_ok=True)
    return plain, nested


def _sed_name(config: Path, name: str) -> None:
    lines = config.read_text().split("\n")
    config.write_text("\n".join(f'name: "{name}"' if line.startswith("name:") else line
                                for line in lines))  # fmt: skip


def _summary(work: Path, trace: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(work.parent / "common" / "trace_summary.py"), "-t", str(trace)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


def _counts(summary: str) -> tuple[int, int]:
    lines = summary.splitlines()
    return sum("COMPUTE_INPUT_END" in line for line in lines), sum(
        line.startswith("simple") for line in lines
    )


@pytest.mark.triton_qa_full
@pytest.mark.timeout(900)
def test_cmdline_trace(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    plain, nested = repositories_of(work)
    client = work / "trace_client.py"
    wrong: list[str] = []
    with harness.tritonserver(host, ["--trace-file=trace_off.log", "--trace-level=OFF",
                                     "--trace-rate=1", f"--model-repository={plain}"],
                              tmp_path / "off.log", cwd=work):  # fmt: skip
        for _ in range(10):
            for protocol, url in (("grpc", "localhost:8001"), ("http", "localhost:8000")):
                done = harness.run_script(host, client, "-i", protocol, "-u", url, cwd=work)
                assert done.returncode == 0, done.stdout + done.stderr
    if (work / "trace_off.log").exists():
        wrong.append("trace-level OFF wrote a trace file")
    for trial, (flags, expected) in TRIALS.items():
        args = [f"--trace-file=trace_{trial}.log", *flags, f"--model-repository={plain}"]
        with harness.tritonserver(host, args, tmp_path / f"{trial}.log", cwd=work):
            for _ in range(10):
                for protocol, url in (("grpc", "localhost:8001"), ("http", "localhost:8000")):
                    done = harness.run_script(host, client, "-i", protocol, "-u", url, cwd=work)
                    assert done.returncode == 0, done.stdout + done.stderr
        for name, count in expected.items():
            counts = _counts(_summary(work, work / name))
            if counts != (count, count):
                wrong.append(f"{trial} {name}: (COMPUTE_INPUT_END, ^simple) {counts} != {count}")
    for trial, levels in (("ensemble", ["TIMESTAMPS"]), ("ensemble_tensor", ["TIMESTAMPS",
                                                                               "TENSORS"])):
        args = [f"--trace-file=trace_{trial}.log", *(f"--trace-level={lv}" for lv in levels),
                "--trace-rate=1", f"--model-repository={nested}"]  # fmt: skip
        with harness.tritonserver(host, args, tmp_path / f"{trial}.log", cwd=work):
            done = harness.run_script(host, client, "-i", "http", "-u", "localhost:8000",
                                      cwd=work)  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
        written = (work / f"trace_{trial}.log").read_text()
        counts = _counts(_summary(work, work / f"trace_{trial}.log"))
        if counts != (7, 1):
            wrong.append(f"{trial}: (COMPUTE_INPUT_END, ^simple) {counts} != (7, 1)")
        wrong += [f"{trial}: not once: {r}" for r in ENSEMBLE_RECORDS if written.count(r) != 1]
        if trial == "ensemble_tensor":
            tensors = (written.count("TENSOR_QUEUE_INPUT"), written.count("TENSOR_BACKEND_OUTPUT"))
            if tensors != (18, 14):
                wrong.append(f"{trial}: tensor records {tensors} != (18, 14)")
    # test.sh's flags, its file (/tmp/trace.json there) in the work directory
    args = [f"--trace-file={work / 'trace.json'}", "--trace-rate=100", "--trace-level=TIMESTAMPS",
            "--trace-log-frequency=50", "--trace-count=100", f"--model-repository={plain}"]
    with harness.tritonserver(host, args, tmp_path / "flags.log", cwd=work) as server:
        log = server.log()
    for flag in DEPRECATED:
        if log.count(f"Warning: '{flag}' has been deprecated") != 1:
            wrong.append(f"deprecation warning of {flag} not once")
    for number, (environment, flags, words) in enumerate(BAD_BSP):
        args = ["--trace-config", "mode=opentelemetry", f"--model-repository={plain}", *flags]
        log = harness.start_fails(host, args, tmp_path / f"bsp{number}.log", env=environment)
        if log.count(words) != 1:
            wrong.append(f"not once: {words}\n{log[-1500:]}")
    assert not wrong, "\n".join(wrong)
