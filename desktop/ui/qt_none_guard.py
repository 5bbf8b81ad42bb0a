"""A guard against a reference-count bug of the Qt bindings on Python 3.11.

PySide6 6.12's wheels (``cp310-abi3``) are built against the limited API of a Python whose ``None``
is immortal (3.12+), where returning ``None`` without a new reference is correct. On Python 3.11
each call of a Qt method that returns nothing (``setText``, ``insertBlock``, ``setPosition``...)
then takes one reference from ``None``; once its count reaches zero the interpreter aborts with
"Fatal Python error: none_dealloc". A window of a few thousand references goes in seconds when the
transcript renders a long conversation, in hours of ordinary use otherwise.

``keep_none_alive`` does on 3.11 what 3.12 does for every program: it gives ``None`` a count no
run can use up (2**60 references; a count is a 64-bit integer), at start, before any Qt call.
"""

from __future__ import annotations

import ctypes
import sys

#: References given to None: more than a program can take in its lifetime, far from overflow.
RESERVE = 1 << 60


def keep_none_alive() -> bool:
    """Make ``None`` effectively immortal where the interpreter does not (before 3.12). Returns
    whether it did anything. Idempotent: a count already above the reserve is left alone."""
    if sys.version_info >= (3, 12) or hasattr(sys, "gettotalrefcount"):  # immortal already; or a debug build's layout
        return False
    count = ctypes.c_ssize_t.from_address(id(None))  # ob_refcnt, the first field of every object
    if count.value >= RESERVE:
        return False
    count.value += RESERVE
    return True
