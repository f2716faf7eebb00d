"""Run a QA file as ``python FILE`` runs it, its ``if __name__ == "__main__":`` block too,
and write each outcome as JSON (``unittest_report``'s).

    python -m tests.triton_qa.unittest_as_main REPORT.json FILE.py [Class.test ...]

L0_grpc_state_cleanup's ``cleanup_test.py`` reads ``SERVER_PID`` (the server its shutdown
tests stop) from the environment in that block.
"""

from __future__ import annotations

import sys

from tests.triton_qa import unittest_report

if __name__ == "__main__":
    sys.exit(unittest_report.main(sys.argv[1:], as_main=True))
