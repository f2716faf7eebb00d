"""Run a QA file under boofuzz as test.sh pins it (0.3.0): one mutation per test case.

    python -m tests.triton_qa.boofuzz_single_mutations REPORT.json FILE.py [Class.test ...]

boofuzz 0.4.0 made combinatorial fuzzing the default (``Session.fuzz(max_depth=None)``
mutates pairs, then triples, ... without end); 0.3.0, which Triton's L0_http_fuzz
installs on a Python 3.8 of its own, fuzzed each primitive alone. 0.3.0 does not run on
the Python the tests run on, so the file runs on 0.4.2 with ``max_depth=1`` as the
default: the same cases 0.3.0 sends.
"""

from __future__ import annotations

import functools
import sys

import boofuzz

from tests.triton_qa import unittest_report

_fuzz = boofuzz.Session.fuzz


@functools.wraps(_fuzz)
def _fuzz_single_mutations(
    self: boofuzz.Session, name: str | None = None, max_depth: int | None = 1
) -> None:
    _fuzz(self, name, max_depth=max_depth)


if __name__ == "__main__":
    boofuzz.Session.fuzz = _fuzz_single_mutations
    sys.exit(unittest_report.main(sys.argv[1:]))
