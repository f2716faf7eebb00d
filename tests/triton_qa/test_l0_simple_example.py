"""Triton's qa/L0_simple_example: tritonclient's HTTP example with custom headers.

As its test.sh's Python half: one server on the example ``simple`` (``--model-repository``
alone), then ``simple_http_infer_client.py -v`` three times: plain, with ``-H
"Host:my_host_"`` and with ``-H"abc:xyz" -H"123:456"``; each must end 0 and its verbose
log hold test.sh's counts (three 200 responses; the host and headers on each of its three
requests: a Host the server does not name is served). Its C++ client half is not built
here.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

CLIENT = harness.CLIENT_EXAMPLES / "simple_http_infer_client.py"
# test.sh's runs: the client's arguments, then each text and how many lines of its log
# hold it (test.sh's grep -c)
RUNS = (
    ((), {"HTTPSocketPoolResponse status=200": 3}),
    (("-H", "Host:my_host_"), {"my_host_": 3}),
    (("-H", "abc:xyz", "-H", "123:456"), {"'abc': 'xyz'": 3, "'123': '456'": 3}),
)


def test_simple_example(host: LoopbackHost, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    simple_add_sub(models)
    failed = []
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        with ThreadPoolExecutor(len(RUNS)) as pool:  # each run is mostly its client's start
            ended = list(pool.map(
                lambda args: harness.run_script(host, CLIENT, "-v", *args, cwd=tmp_path),
                [args for args, _ in RUNS],
            ))  # fmt: skip
        for (args, counts), done in zip(RUNS, ended, strict=True):
            log = done.stdout + done.stderr
            seen = {text: sum(text in line for line in log.splitlines()) for text in counts}
            if done.returncode != 0 or seen != counts:
                failed.append(f"{args}: ended {done.returncode}, {seen} of {counts}: {log[-1500:]}")
    assert not failed, "\n".join(failed)
