"""NVIDIA's perf_analyzer, the binary ``tritonclient`` installs, and the environment it
starts in without a GPU: ``libcudart.so.12`` from the ``nvidia-cuda-runtime-cu12`` wheel
on its ``LD_LIBRARY_PATH`` (``libb64.so.0d`` is apt's ``libb64-0d``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PERF_ANALYZER = Path(sys.executable).parent / "perf_analyzer"


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    import nvidia.cuda_runtime

    env = dict(os.environ if base is None else base)
    (package,) = nvidia.cuda_runtime.__path__
    libraries = [str(Path(package) / "lib"), env.get("LD_LIBRARY_PATH", "")]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, libraries))
    return env


# what Triton's QA scripts' check_perf_analyzer_error greps for (a literal, in grep's BRE)
ERROR_STRING = "error | Request count: 0 | : 0 infer/sec"


def checked(done: subprocess.CompletedProcess[str]) -> str:
    """perf_analyzer's output, once it is known to have succeeded as Triton's QA scripts
    check it: exit code 0, no error line."""
    said = done.stdout + done.stderr
    assert done.returncode == 0 and ERROR_STRING not in said, said[-4000:]
    return said
