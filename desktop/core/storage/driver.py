"""Pick a SQLite binding that can load extensions.

Many Pythons (pyenv and macOS builds among them, and this project's CI machine) ship a ``sqlite3``
without ``enable_load_extension``. ``sqlean.py`` is a drop-in replacement with the same DB-API and
extension loading built in, so it is the default; the standard module is used only when it can load
extensions itself.
"""

from __future__ import annotations

from types import ModuleType


def sqlite_module() -> ModuleType:
    try:
        import sqlean

        return sqlean
    except ImportError:  # pragma: no cover - sqlean.py is a pinned dependency
        import sqlite3

        if not hasattr(sqlite3.Connection, "enable_load_extension"):
            raise
        return sqlite3
