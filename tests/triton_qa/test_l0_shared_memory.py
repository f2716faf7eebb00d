"""Triton's qa/L0_shared_memory: system shared memory regions, registered, used, refused.

As its test.sh: a fresh server per test and client type (a test leaves regions
registered), serving ``simple``; then ``TestSharedMemoryUnregister`` against the python
model ``execute_delayed_model`` named ``simple``, which holds its regions while it
sleeps. The servers take ``--allow-client-shm=true``: Triton 2.51 has no such flag and
lets clients register regions; Triton since #8721 (and modelyard) need it, and Triton's
own test.sh passes it since.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.conftest import FULL

pytestmark = pytest.mark.slow

TESTS = [
    "test_invalid_create_shm",
    "test_valid_create_set_register",
    "test_unregister_before_register",
    "test_unregister_after_register",
    "test_reregister_after_register",
    "test_unregister_after_inference",
    "test_register_after_inference",
    "test_too_big_shm",
    "test_mixed_raw_shm",
    "test_unregisterall",
    "test_infer_offset_out_of_bound",
    "test_infer_byte_size_out_of_bound",
    "test_register_out_of_bound",
    "test_python_client_leak",
]
# the default run: one test of each kind (a region made, registered again, used with raw
# inputs, too big, out of bounds at registration and at inference), within CI's budget;
# TRITON_QA=full runs all fourteen, as test.sh does
DEFAULT_TESTS = [
    "test_invalid_create_shm", "test_valid_create_set_register",
    "test_reregister_after_register", "test_unregister_after_inference", "test_too_big_shm",
    "test_mixed_raw_shm", "test_infer_byte_size_out_of_bound", "test_register_out_of_bound",
]  # fmt: skip
SERVER_FLAGS = ["--log-verbose=1", "--allow-client-shm=true"]


@pytest.fixture(scope="module")
def simple(tmp_path_factory: pytest.TempPathFactory) -> Path:
    models = tmp_path_factory.mktemp("shm") / "models"
    simple_add_sub(models)
    return models


@pytest.mark.parametrize(
    "client_type", ["http", pytest.param("grpc", marks=pytest.mark.triton_qa_full)]
)
def test_shared_memory(host: LoopbackHost, tmp_path: Path, simple: Path, client_type: str) -> None:
    work = harness.work_directory(tmp_path, "L0_shared_memory")
    for test in TESTS if FULL else DEFAULT_TESTS:
        args = [f"--model-repository={simple}", *SERVER_FLAGS]
        with harness.tritonserver(host, args, tmp_path / f"{test}.log"):
            run = harness.run_qa_file(
                host,
                work,
                "shared_memory_test.py",
                f"SharedMemoryTest.{test}",
                env={"CLIENT_TYPE": client_type},
            )
        run.check(count=1)


@pytest.mark.triton_qa_full  # its model sleeps 15 s
@pytest.mark.parametrize("client_type", ["http", "grpc"])
def test_unregister_during_inference(host: LoopbackHost, tmp_path: Path, client_type: str) -> None:
    work = harness.work_directory(tmp_path, "L0_shared_memory")
    models = work / "python_models"
    source = work.parent / "python_models" / "execute_delayed_model"
    (models / "simple" / "1").mkdir(parents=True)
    shutil.copy(source / "model.py", models / "simple" / "1" / "model.py")
    shutil.copy(source / "config.pbtxt", models / "simple" / "config.pbtxt")
    args = [f"--model-repository={models}", *SERVER_FLAGS]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(
            host,
            work,
            "shared_memory_test.py",
            f"TestSharedMemoryUnregister.test_unregister_shm_during_inference_{client_type}",
            env={"CLIENT_TYPE": client_type},
        )
    run.check(count=1)
