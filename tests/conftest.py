"""The order test files run in: the longest first.

pytest-xdist's ``--dist loadfile`` hands whole files to its two workers in collection
order; a file of two minutes handed out last runs alone while the other worker idles. The
files below take a minute or more each (``pytest --durations``); every other file keeps
its place after them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LONGEST_FIRST = (
    "triton_qa/test_l0_rate_limiter.py",
    "triton_qa/test_l0_model_config.py",
    "triton_qa/test_l0_model_update.py",
    "triton_qa/test_l0_sequence_batcher.py",
    "e2e/test_control_plane.py",
    "triton_qa/test_l0_socket.py",
    "integration/test_central_rules.py",
    "e2e/test_demo.py",
    "triton_qa/test_l0_lifecycle.py",
    "triton_qa/test_l0_sagemaker.py",
    "integration/test_platform_apply.py",
    "integration/test_multi_host.py",
    "integration/test_cluster_servers.py",
)
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}

    def place(item: pytest.Item) -> int:
        try:
            relative = item.path.resolve().relative_to(TESTS).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(relative, len(rank))

    items.sort(key=place)  # stable: the rest keep their order
