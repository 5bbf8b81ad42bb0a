"""A small real backup store over SQLite copies of the store: what memdesk/core/storage/backup.py's
Backups offers forget (list, create, rewrite), for tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memdesk.core.storage import open_database


@dataclass(frozen=True)
class Snapshot:
    id: str
    path: Path
    created_at: datetime
    size: int
    reason: str


class FolderBackups:
    """Snapshots as files in a folder, made with SQLite's own copy (VACUUM INTO)."""

    def __init__(self, db, folder: Path) -> None:
        self._db = db
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.snapshots: list[Snapshot] = []

    def list(self) -> list[Snapshot]:
        return list(self.snapshots)

    def create(self, reason: str) -> Snapshot:
        path = self.folder / f"snapshot-{len(self.snapshots) + 1}.sqlite3"
        self._db.execute("VACUUM INTO ?", (str(path),))
        snapshot = Snapshot(path.stem, path, datetime.now(UTC), path.stat().st_size, reason)
        self.snapshots.append(snapshot)
        return snapshot

    def rewrite(self, snapshot_id, change) -> Snapshot:
        old = next(s for s in self.snapshots if s.id == snapshot_id)
        db = open_database(old.path, migrate=False)
        try:
            change(db)
            db.execute("VACUUM")
            db.query_one("PRAGMA wal_checkpoint(TRUNCATE)")
            assert db.scalar("PRAGMA integrity_check") == "ok"
        finally:
            db.close()
        new = Snapshot(old.id, old.path, old.created_at, old.path.stat().st_size, old.reason)
        self.snapshots[self.snapshots.index(old)] = new
        return new

    def relabel(self, snapshot_id, reason: str) -> Snapshot:
        old = next(s for s in self.snapshots if s.id == snapshot_id)
        new = Snapshot(old.id, old.path, old.created_at, old.size, reason)
        self.snapshots[self.snapshots.index(old)] = new
        return new
