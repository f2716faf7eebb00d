from __future__ import annotations

import zlib
from collections.abc import Iterator

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

# Triton's files (tests/triton_qa/vendor) are run by the tests here, never collected
collect_ignore = ["vendor"]


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
