"""Whether this machine can run MemDesk and, if not, why: ``memdesk doctor`` and Help -> Diagnostics.

One line per check (``checks.CHECK_NAMES``). Checks that could crash the process (llama.cpp, Qt's
platform plugin) run in a child process, so this package imports neither llama_cpp nor Qt and the
front ends share it: the CLI prints the report, the window shows it. ``selftest`` is the other
diagnostic: ``--self-test`` proves an install carries what it needs by using it.
"""

from memdesk.diagnostics.checks import CHECK_NAMES, Doctor, run_checks
from memdesk.diagnostics.report import Check, Report

__all__ = ["CHECK_NAMES", "Check", "Doctor", "Report", "run_checks"]
