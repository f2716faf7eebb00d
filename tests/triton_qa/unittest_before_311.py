"""Run a QA file whose tearDown reads Python 3.10's unittest internals.

    python -m tests.triton_qa.unittest_before_311 REPORT.json FILE.py [Class.test ...]

L0_model_update's tearDown asks whether its own test failed as Python 3.10 let it
(``self._feedErrorsToResult(result, self._outcome.errors)``, its comment names 3.11's
``self._outcome.result`` instead); Python 3.11 removed both. They are given back here as
3.10 had them, read from 3.11's result (which records a test's failure as it happens,
before its tearDown), and the file runs as ``unittest_report`` runs any.
"""

from __future__ import annotations

import sys
import unittest
from typing import Any

from tests.triton_qa import unittest_report


def _errors(outcome: Any) -> list[tuple[unittest.TestCase, Any]]:
    result = outcome.result
    return [*result.errors, *result.failures]


def _feed_errors_to_result(
    self: unittest.TestCase, result: unittest.TestResult, errors: list[tuple[Any, Any]]
) -> None:
    result.errors.extend(errors)


if __name__ == "__main__":
    outcome = unittest.case._Outcome  # type: ignore[attr-defined]
    if not hasattr(outcome, "errors"):
        outcome.errors = property(_errors)
    if not hasattr(unittest.TestCase, "_feedErrorsToResult"):
        unittest.TestCase._feedErrorsToResult = _feed_errors_to_result  # type: ignore[attr-defined]
    sys.exit(unittest_report.main(sys.argv[1:]))
