"""Loading sqlite-vec into a connection without importing the ``sqlite_vec`` package.

The package's ``__init__`` imports ``numpy.typing`` for a helper MemDesk does not use, and numpy
costs about 0.16 s of a start on the 2-core development machine: ``memdesk`` reads the store's
settings (memdesk.app.local_model) before it starts the model's process, and the window opens the
store before it shows, so that import would delay both. The extension's file sits in the
package's folder (named ``vec0`` plus the platform's suffix, which SQLite adds itself); only when
it is not found there (an unusual install) is the package asked.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

#: The file's suffixes SQLite tries after ``vec0`` on each platform.
_SUFFIXES = (".so", ".dylib", ".dll")


@cache
def vector_extension_path() -> str:
    """The path SQLite's ``load_extension`` takes (without the suffix, as sqlite_vec gives it)."""
    spec = importlib.util.find_spec("sqlite_vec")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        stem = Path(folder) / "vec0"
        if any(stem.with_suffix(suffix).is_file() for suffix in _SUFFIXES):
            return str(stem)
    import sqlite_vec

    return sqlite_vec.loadable_path()


def load_vector_extension(conn: Any) -> None:
    conn.enable_load_extension(True)
    conn.load_extension(vector_extension_path())
    conn.enable_load_extension(False)
