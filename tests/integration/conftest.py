from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from modelyard.examples.build import build_example_repository
from tests.support.etcd_server import EtcdServer, running_etcd
from tests.support.models import bytes_echo
from tests.support.servers import ServerProcess, running_server

MAX_BODY_BYTES = 1_000_000
MAX_MESSAGE_BYTES = 1_000_000


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    """A real etcd-server on a free loopback port, one per test module."""
    with running_etcd(tmp_path_factory.mktemp("etcd")) as server:
        yield server


@pytest.fixture(scope="session")
def example_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("examples") / "models"
    build_example_repository(repository, text_models=False)  # test_embedding.py builds those
    bytes_echo(repository)
    return repository


@pytest.fixture(scope="session")
def server(
    example_repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    logs = tmp_path_factory.mktemp("logs")
    with running_server(
        example_repository,
        logs,
        "--http-max-body-bytes",
        str(MAX_BODY_BYTES),
        "--grpc-max-message-bytes",
        str(MAX_MESSAGE_BYTES),
    ) as process:
        yield process
