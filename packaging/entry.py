"""The bundle's program: ``MemDesk`` opens the window, ``MemDesk chat`` (and every other
sub-command) runs in the terminal, ``MemDesk --self-test`` proves the bundle works."""

import multiprocessing
import sys

if __name__ == "__main__":
    # The model runs in a spawned child process: in a frozen program that child is this same
    # executable, which must hand over to multiprocessing before anything else runs.
    multiprocessing.freeze_support()
    from memdesk.core.tools.tool_process import CHILD_FLAG

    if sys.argv[1:] == [CHILD_FLAG]:  # an imported tool's call (see tool_process): nothing else runs
        from memdesk.core.tools.tool_process import child_main

        sys.exit(child_main())
    from memdesk.cli.main import main

    sys.exit(main())
