"""Triton's qa/L0_perf_analyzer_report, as its test.sh runs it: perf_analyzer
(tritonclient's binary, unchanged) over HTTP and gRPC against an ensemble
(``gen_qa_models.py --ensemble``'s ``simple_onnx_float32_float32_float32``) and its
composing ONNX model (``--onnx``'s ``onnx_float32_float32_float32``), each with its
response cache on and off, on a server of ``--response-cache-byte-size=8192``: every run
succeeds, and a cached model's report shows its cache hits (the statistics extension's
cache counts, as perf_analyzer reads them), not all of them zero.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.support.perf_analyzer import PERF_ANALYZER, checked, environment
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

FOLDER = "L0_perf_analyzer_report"
ENSEMBLE = "simple_onnx_float32_float32_float32"
COMPOSING = "onnx_float32_float32_float32"
STABILITY_THRESHOLD = "15"  # test.sh's


def _models(work: Path) -> list[str]:
    """test.sh's ``models``: the ensemble and its composing model, each with its cache on
    and off (``<name>_cache_enabled`` / ``_disabled``)."""
    generated = work / "generated"
    for flag in ("--onnx", "--ensemble"):
        repositories.generated(work, "gen_qa_models.py", flag, f"--models_dir={generated}")
    names = []
    for state, enable in (("enabled", "True"), ("disabled", "False")):
        for base in (ENSEMBLE, COMPOSING):
            name = f"{base}_cache_{state}"
            model = shutil.copytree(generated / base, work / "models" / name)
            (model / "1").mkdir(exist_ok=True)
            config = model / "config.pbtxt"
            text = re.sub(r"(?m)^name:.*\n", "", config.read_text())
            if base == ENSEMBLE:
                text = text.replace(COMPOSING, f"{COMPOSING}_cache_{state}")
            text += f"response_cache {{ enable: {enable} }}\n"
            if base == COMPOSING:
                text += "instance_group [{ kind: KIND_CPU, count: 1 }]\n"
            config.write_text(text)
            names.append(name)
    return names


@pytest.mark.triton_qa_full
@pytest.mark.timeout(900)
def test_perf_analyzer_report(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    names = _models(work)
    args = [f"--model-repository={work / 'models'}", "--response-cache-byte-size=8192"]
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=work):
        for protocol in ("http", "grpc"):
            for name in names:
                done = subprocess.run(
                    host.command([str(PERF_ANALYZER), "-v", "-i", protocol, "-m", name,
                                  "-s", STABILITY_THRESHOLD]),
                    cwd=work, env=harness.environment(environment()), capture_output=True,
                    text=True, timeout=240,
                )  # fmt: skip
                said = checked(done)  # test.sh's check_perf_analyzer_error
                if "cache_enabled" in name:  # test.sh's check_cache_output
                    hits = [line for line in said.lower().splitlines()
                            if "cache hit count" in line]  # fmt: skip
                    assert hits, (protocol, name, said[-3000:])
                    zero = [line for line in hits if "cache hit count: 0" in line]
                    assert len(zero) < len(hits), (protocol, name, said[-3000:])
