"""Triton's qa/L0_grpc: its Python test files, with the servers its test.sh starts.

- ``python_grpc_aio_test.py``: the asyncio client against Triton's example models
  (``counted_example_models``: the eight its repository holds);
- ``grpc_client_plugin_test.py``: client plugins through a python model that reads the
  headers forwarded to it (``--grpc-header-forward-pattern=.*``);
- ``python_unit_test.py`` ``RestrictedProtocolTest``: ``--grpc-restricted-protocol``,
  after the two command lines test.sh expects to stop the server.

The client examples test.sh runs are tests/triton_qa/test_client_examples.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow


def test_aio_client(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_grpc")
    models = repositories.counted_example_models(work / "models", grpc=True)
    args = [f"--model-repository={models}", "--allow-client-shm=true"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "python_grpc_aio_test.py")
    run.check(count=18)


def test_client_plugin(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_grpc")
    models = work / "client_plugin_models"
    (models / "client_plugin_test" / "1").mkdir(parents=True, exist_ok=True)
    args = [
        f"--model-repository={models}",
        "--http-header-forward-pattern=.*",
        "--grpc-header-forward-pattern=.*",
    ]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "grpc_client_plugin_test.py")
    run.check(count=2)


def test_restricted_protocol(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_grpc")
    models = repositories.counted_example_models(work / "models", grpc=True)
    repository = f"--model-repository={models}"
    for groups, expected in (
        (["model-repository,health:k1=v1", "metadata,health:k2=v2"],
         "protocol 'health' can not be specified in multiple config groups"),
        (["model-reposit,health:k1=v1", "metadata,health:k2=v2"],
         "unknown restricted protocol 'model-reposit'"),
    ):  # fmt: skip
        flags = [f"--grpc-restricted-protocol={group}" for group in groups]
        log = harness.start_fails(host, [repository, *flags], tmp_path / "refused.log")
        assert log.count(expected) == 1, log
        (tmp_path / "refused.log").unlink()
    flags = [
        "--grpc-restricted-protocol=model-repository:admin-key=admin-value",
        "--grpc-restricted-protocol=inference,health:infer-key=infer-value",
    ]
    with harness.tritonserver(host, [repository, *flags], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "python_unit_test.py", "RestrictedProtocolTest")
    run.check(count=5)
