"""Run a QA file's unittest cases as ``python FILE`` would, and write each outcome as JSON.

    python -m tests.triton_qa.unittest_report REPORT.json FILE.py [Class.test ...]

Triton's QA files are unittest modules run by ``python FILE`` in their own directory
(several collect their results through ``unittest`` itself, which pytest does not
give them). This runs the same loader and runner in the current directory and keeps,
per ``Class::test``, passed / failed / error / skipped with the message.
"""

from __future__ import annotations

import importlib.util
import json
import runpy
import sys
import unittest
from pathlib import Path
from typing import Any


class _Recording(unittest.TextTestResult):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, dict[str, str]] = {}

    @staticmethod
    def _name(test: unittest.TestCase) -> str:
        return f"{type(test).__name__}::{getattr(test, '_testMethodName', str(test))}"

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self.outcomes.setdefault(self._name(test), {"status": "passed", "message": ""})

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self.outcomes[self._name(test)] = {"status": "failed", "message": self.failures[-1][1]}

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        name = self._name(test) if isinstance(test, unittest.TestCase) else str(test)
        self.outcomes[name] = {"status": "error", "message": self.errors[-1][1]}

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is None:
            return
        outcome = self.outcomes.setdefault(self._name(test), {"status": "failed", "message": ""})
        outcome["status"] = "failed"
        text = self._exc_info_to_string(err, test)
        outcome["message"] += f"{subtest.id()}: {text.strip().splitlines()[-1]}\n"

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self.outcomes[self._name(test)] = {"status": "skipped", "message": reason}

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self.outcomes[self._name(test)] = {"status": "passed", "message": ""}

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self.outcomes[self._name(test)] = {"status": "failed", "message": "unexpected success"}


def main(argv: list[str], as_main: bool = False) -> int:
    """``as_main``: run the file as ``__main__``, its ``if __name__ == "__main__":`` block
    too (some set class attributes from the environment there), whose ``unittest.main()``
    runs the chosen tests."""
    report, file, *names = argv
    sys.path.insert(0, str(Path.cwd()))
    if as_main:
        ran: list[int] = []
        original = unittest.main

        def run_chosen(*_: Any, **__: Any) -> None:
            ran.append(_run(sys.modules["__main__"], names, report))

        unittest.main = run_chosen  # type: ignore[assignment,misc]
        try:
            runpy.run_path(file, run_name="__main__")
        finally:
            unittest.main = original  # type: ignore[misc]
        return ran[0] if ran else 1
    spec = importlib.util.spec_from_file_location("__qa_main__", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return _run(module, names, report)


def _run(module: Any, names: list[str], report: str) -> int:
    loader = unittest.TestLoader()
    suite = (
        loader.loadTestsFromNames(names, module) if names else loader.loadTestsFromModule(module)
    )
    runner = unittest.TextTestRunner(resultclass=_Recording, verbosity=2)
    result = runner.run(suite)
    assert isinstance(result, _Recording)
    Path(report).write_text(json.dumps(result.outcomes))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
