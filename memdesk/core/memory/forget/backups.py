"""Backups taken before a forget still hold what was forgotten: list them, and purge on request.

Coded against a Protocol so the agent layer needs no storage details: the store's ``Backups``
(memdesk/core/storage/backup.py) satisfies it. ``rewrite`` opens a snapshot with the store's key,
applies a change, vacuums and verifies it; ``relabel`` gives it a new reason (an old one such as
"before import of eva.af" can name what is forgotten).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memdesk.core.storage import Database

#: Why the snapshot a forget takes first was taken (shown in File > Backups…).
SNAPSHOT_REASON = "before forget"


class Snapshot(Protocol):
    id: Any
    path: Path
    created_at: datetime
    size: int
    reason: str


class SnapshotStore(Protocol):
    def list(self) -> list[Snapshot]: ...

    def create(self, reason: str) -> Snapshot: ...

    def rewrite(self, snapshot_id: Any, change: Callable[[Database], None]) -> Any: ...

    def relabel(self, snapshot_id: Any, reason: str) -> Any: ...
