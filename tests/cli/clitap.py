"""The TAP runner of the CLI test scripts (suite 'cli'): tests/tap.py.

    from clitap import Skip, case, check, eq, run_cases

The rules (every case runs; raise Skip to skip; RELAY_TEST_ONLY) are
tests/tap.py's, the same as for the daemon scripts.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))
from tap import Skip, case, check, eq, run_cases  # noqa: E402,F401
