"""Triton's qa/L0_http_fuzz: boofuzz mutates the request line of an HTTP request to each
of twenty of the server's paths (the method, the path, the version and the delimiters
between them), one connection per case; no case may fail (boofuzz records a failure when
the server stops taking connections).

As its test.sh: one server on the identity model ``savedmodel_zero_1_object`` (here the
ONNX model Triton's generator makes with the same tensors, renamed; no case reaches it)
and ``fuzztest.py``. test.sh installs boofuzz 0.3.0 on a Python 3.8 of its own (0.3.0's
dependencies did not yet work with 3.10); here boofuzz 0.4.2 sending 0.3.0's cases
(boofuzz_single_mutations.py): 4,021 a path, about 80,000 in all, about 26 minutes here,
so ``TRITON_QA=full`` only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow


def repository(work: Path) -> Path:
    """test.sh's ``models``: the one identity model of strings."""
    generated = repositories.identity_models(work, work / "identity", ensembles=False)
    models = work / "models"
    models.mkdir()
    model = repositories.renamed(generated / "onnx_zero_1_object", "savedmodel_zero_1_object")
    shutil.move(model, models / model.name)
    shutil.rmtree(generated)
    return models


@pytest.mark.triton_qa_full
def test_http_fuzz(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_http_fuzz")
    models = repository(work)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        run = harness.run_qa_file(
            host,
            work,
            "fuzztest.py",
            timeout=3000,
            runner="tests.triton_qa.boofuzz_single_mutations",
        )
    run.check(count=1)
