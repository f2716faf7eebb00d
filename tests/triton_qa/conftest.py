from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

# Triton's files (tests/triton_qa/vendor) are run by the tests here, never collected
collect_ignore = ["vendor"]

# the default run takes each QA file once, within CI's budget; TRITON_QA=full adds the
# repeats test.sh makes (both client types, every header pattern, the long sleepers)
FULL = os.environ.get("TRITON_QA") == "full"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if FULL:
        return
    skip = pytest.mark.skip(reason="a repeat of a Triton QA run: TRITON_QA=full runs it")
    for item in items:
        if item.get_closest_marker("triton_qa_full") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def host(request: pytest.FixtureRequest) -> Iterator[LoopbackHost]:
    """A network namespace of the module's own: its tritonserver listens on the
    localhost:8000/8001/8002 that Triton's files name."""
    reason = harness.unavailable()
    if reason is not None:
        pytest.skip(reason)
    tag = f"qa{zlib.crc32(request.module.__name__.encode()) % 100_000}"
    with LoopbackHost(tag) as made:
        yield made


LANES = 4


@pytest.fixture(scope="module")
def hosts(request: pytest.FixtureRequest) -> Iterator[list[LoopbackHost]]:
    """Four namespaces of the module's own: four tritonservers at a time, for the QA
    files whose test.sh starts a server per test, most of which wait out a delay."""
    reason = harness.unavailable()
    if reason is not None:
        pytest.skip(reason)
    tag = zlib.crc32(request.module.__name__.encode()) % 10_000
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(LoopbackHost(f"qa{tag}l{i}")) for i in range(LANES)]
