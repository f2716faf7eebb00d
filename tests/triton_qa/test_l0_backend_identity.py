"""Triton's qa/L0_backend_identity: ``identity_test.py`` over HTTP and gRPC, and test.sh's
count of the identity backend's ``byte_size`` log lines.

As its test.sh: Triton's ``src/test/models/identity_fp32`` (``Dockerfile.QA``'s copy, with
its version folder) and test.sh's four copies of it (``identity_bytes``,
``identity_nobatch_int8``, ``identity_uint32`` waiting 3 s for a preferred batch of 8,
``identity_bf16``), under ``--log-verbose=1``. The file checks every response's
parameters ``param0`` to ``param3``, four requests executed as one batch (the statistics
and ``nv_inference_*`` counts) and the backend's own counter
``input_byte_size_counter``; test.sh counts the lines of each request's input with
``byte_size = 0`` (8), ``7`` (2), ``16`` (6: ``160``'s lines among them), ``20`` (2) and
``160`` (2) in the server's log. About 10 s, in the default run.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

TEST_MODELS = harness.VENDOR / "server" / "src" / "test" / "models"
# test.sh's copies of identity_fp32: name, max_batch_size (None: as it is), datatype, and
# the line it appends
COPIES = [
    ("identity_bytes", None, "TYPE_STRING", ""),
    ("identity_nobatch_int8", 0, "TYPE_INT8", ""),
    ("identity_uint32", 8, "TYPE_UINT32",
     "dynamic_batching { preferred_batch_size: [8], max_queue_delay_microseconds: 3000000 }"),
    ("identity_bf16", None, "TYPE_BF16", ""),
]  # fmt: skip
# test.sh's byte-size checks: the text grepped and the count of lines holding it
BYTE_SIZES = [("byte_size = 0", 8), ("byte_size = 7", 2), ("byte_size = 16", 6),
              ("byte_size = 20", 2), ("byte_size = 160", 2)]  # fmt: skip


def all_models(work: Path) -> Path:
    models = work / "all_models"
    source = shutil.copytree(TEST_MODELS / "identity_fp32", models / "identity_fp32")
    (source / "1").mkdir()  # Dockerfile.QA's version folder
    for name, max_batch_size, datatype, appended in COPIES:  # test.sh's cp and sed
        model = shutil.copytree(source, models / name)
        text = (model / "config.pbtxt").read_text()
        text = re.sub(r"(?m)^name:.*", f'name: "{name}"', text).replace("TYPE_FP32", datatype)
        if max_batch_size is not None:
            text = re.sub(r"(?m)^max_batch_size:.*", f"max_batch_size: {max_batch_size}", text)
        (model / "config.pbtxt").write_text(text + (appended + "\n" if appended else ""))
    return models


def test_backend_identity(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_backend_identity")
    args = [f"--model-repository={all_models(work)}", "--log-verbose=1"]
    with harness.tritonserver(host, args, tmp_path / "server.log") as server:
        for protocol in ("http", "grpc"):
            done = harness.run_script(
                host, work / "identity_test.py", "-i", protocol, "-v", cwd=work
            )
            assert done.returncode == 0, (protocol, (done.stdout + done.stderr)[-3000:])
    log = server.log()
    for text, count in BYTE_SIZES:
        assert sum(text in line for line in log.splitlines()) == count, (text, log[-3000:])
