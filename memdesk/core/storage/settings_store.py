"""Settings persisted in the store. Each setting is declared once, in
``memdesk/core/base/settings_table.py`` (type, default, allowed values, description, flags); this
module stores and loads them, checking what is set against that declaration."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from memdesk.core.base.settings_table import SETTINGS, Settings, declared
from memdesk.core.storage import Database


class SettingsStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def load(self) -> Settings:
        """The stored values over the defaults. Only the type is checked here: a value stored
        before its range was declared (or by a newer MemDesk) is kept, not lost."""
        stored = dict(self._db.query("SELECT key, value FROM settings"))
        values = {name: SETTINGS[name].convert(json.loads(raw)) for name, raw in stored.items() if name in SETTINGS}
        return replace(Settings(), **values)

    def stored_names(self) -> frozenset[str]:
        """The settings the user has set (the rest are defaults, which a model's catalog entry may refine)."""
        return frozenset(name for (name,) in self._db.query("SELECT key FROM settings") if name in SETTINGS)

    def set(self, name: str, value: Any) -> Settings:
        converted = declared(name).validate(value)
        stored = list(converted) if isinstance(converted, tuple) else converted
        self._db.execute(
            "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (name, json.dumps(stored)),
        )
        return self.load()

    def reset(self, name: str) -> Settings:
        """Back to the declared default: no longer a choice of the user's, so the active model's
        catalog entry may refine it again."""
        declared(name)
        self._db.execute("DELETE FROM settings WHERE key = ?", (name,))
        return self.load()
