"""``python -m bench.faults``: the whole campaign (see bench/faults/__init__.py)."""

import sys

from bench.faults import main

sys.exit(main())
