"""Restoring a foreign snapshot: what it would change, and what it may not bring.

A snapshot this store did not record (snapshot_records.py) may have been written by anyone who can
write to the backup folder. Restored as it is, it would bring whatever its writer chose: a model
runtime pointing at their server, tools enabled to run their code, document paths to read. So its
restore shows every difference first (``differences``), and the copy that replaces the store has
what it may not bring reset (``reset_what_it_may_not_bring``): the settings declared ``local_only``
keep the store's current values, settings MemDesk does not know are dropped, every imported tool is
disabled, no document is read again from the path the snapshot names until the user picks the file
(documents' ``path_imported``), and triggers and views MemDesk's migrations did not write are
dropped (one could put a setting back at every new message).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from memdesk.core.base.settings_table import SETTINGS
from memdesk.core.storage.database import Database, open_database
from memdesk.core.storage.migrations import MIGRATIONS


@dataclass(frozen=True)
class Difference:
    """One thing the snapshot has otherwise than the store. ``reset``: the restore does not bring it."""

    what: str
    now: str
    snapshot: str
    reset: bool

    def describe(self) -> str:
        after = f"stays {self.now}" if self.reset else f"becomes {self.snapshot}"
        return f"{self.what}: {self.now} now, {self.snapshot} in the snapshot; {after}"


def _has_table(db: Database, name: str) -> bool:
    return db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) > 0


def _settings(db: Database | None) -> dict[str, str]:
    if db is None or not _has_table(db, "settings"):
        return {}
    return {str(key): str(value) for key, value in db.query("SELECT key, value FROM settings")}


def _shown(raw: str | None, name: str) -> str:
    if raw is None:
        declaration = SETTINGS.get(name)
        return "the default" if declaration is None else f"the default ({declaration.default!r})"
    if name in SETTINGS and SETTINGS[name].secret:
        return "a value"
    try:
        return repr(json.loads(raw))
    except ValueError:
        return repr(raw)


def _may_not_bring(name: str) -> bool:
    declaration = SETTINGS.get(name)
    return declaration is None or declaration.local_only


def _schema(db: Database) -> set[tuple[str, str, str]]:
    return {
        (str(kind), str(name), str(sql))
        for kind, name, sql in db.query("SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')")
    }


def _unexpected_code(snapshot: Database) -> list[tuple[str, str]]:
    """The snapshot's triggers and views that MemDesk's migrations (up to its schema version) did not write."""
    version = min(snapshot.schema_version, len(MIGRATIONS))
    expected = open_database(":memory:", migrate=False)
    try:
        expected.migrate(MIGRATIONS[:version])
        known = _schema(expected)
    finally:
        expected.close()
    return sorted((kind, name) for kind, name, sql in _schema(snapshot) - known)


def differences(current: Database | None, snapshot: Database) -> list[Difference]:
    """What restoring ``snapshot`` over ``current`` (None: a store that cannot be read) changes in
    the settings, the enabled imported tools and the document paths it would read."""
    now, then = _settings(current), _settings(snapshot)
    found = [
        Difference(f"setting {name}", _shown(now.get(name), name), _shown(then.get(name), name), _may_not_bring(name))
        for name in sorted(set(now) | set(then))
        if now.get(name) != then.get(name)
    ]
    if _has_table(snapshot, "imported_tools") and _has_table(snapshot, "agents"):
        rows = snapshot.query(
            "SELECT a.name, t.name FROM imported_tools t JOIN agents a ON a.id = t.agent_id "
            "WHERE t.enabled ORDER BY 1, 2"
        )
        found += [Difference(f"imported tool {tool} of {agent}", "-", "enabled", True) for agent, tool in rows]
    if _has_table(snapshot, "documents"):
        columns = {row[1] for row in snapshot.query("PRAGMA table_info(documents)")}
        if "path_imported" in columns:
            paths = snapshot.scalar("SELECT count(*) FROM documents WHERE NOT path_imported")
            if paths:
                found.append(Difference("documents it would read again from their paths", "-", str(paths), True))
    found += [
        Difference(f"{kind} {name} (not MemDesk's)", "-", "present", True) for kind, name in _unexpected_code(snapshot)
    ]
    return found


def reset_what_it_may_not_bring(staged: Database, current: Database | None) -> None:
    """In ``staged`` (the copy of a foreign snapshot about to replace the store): the local-only
    settings as ``current`` has them, unknown settings dropped, imported tools disabled, document
    paths not read until the user picks the file."""
    now = _settings(current)
    unexpected = _unexpected_code(staged)
    with staged.transaction():
        for kind, name in unexpected:
            quoted = '"' + name.replace('"', '""') + '"'
            staged.execute(f"DROP {'TRIGGER' if kind == 'trigger' else 'VIEW'} IF EXISTS {quoted}")
        if _has_table(staged, "settings"):
            for name, _raw in staged.query("SELECT key, value FROM settings"):
                if _may_not_bring(name):
                    staged.execute("DELETE FROM settings WHERE key = ?", (name,))
            for name, raw in now.items():
                if name in SETTINGS and SETTINGS[name].local_only:
                    staged.execute("INSERT INTO settings(key, value) VALUES (?, ?)", (name, raw))
        if _has_table(staged, "imported_tools"):
            staged.execute("UPDATE imported_tools SET enabled = 0")
        if _has_table(staged, "documents"):
            columns = {row[1] for row in staged.query("PRAGMA table_info(documents)")}
            if "path_imported" in columns:
                staged.execute("UPDATE documents SET path_imported = 1")
