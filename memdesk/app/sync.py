"""Sync on this store (memdesk.core.sync): the engine with the store's own memory owners and its
forget, backups' purge included, for what another device forgot."""

from __future__ import annotations

from typing import Any

from memdesk.app.services import Services, memory_history
from memdesk.core.memory.synced import SyncedRows
from memdesk.core.storage import Database
from memdesk.core.storage.migrations import MIGRATIONS
from memdesk.core.sync.engine import SyncEngine


def open_sync(services: Services, *, db: Database | None = None) -> SyncEngine:
    """Sync on ``services``' store, or on ``db``, a connection the calling thread opened for itself."""
    from memdesk.app.operations import open_forgetting

    db = db or services.db
    history = memory_history(db, services.clock)

    def forget(agent_id: int, text: str) -> None:
        # Another device's forget wins everywhere, backups included: purged, not snapshotted first.
        open_forgetting(services, services.backups, db=db, shared=False).apply(agent_id, text, purge_backups=True)

    return SyncEngine(db, services.clock, SyncedRows(db, services.clock, history), forget=forget,
                      schema=len(MIGRATIONS))


class SyncedForgetting:
    """A forget the user asked for here, which every paired device then forgets too."""

    def __init__(self, forgetting: Any, engine: SyncEngine) -> None:
        self._forgetting = forgetting
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forgetting, name)

    def apply(self, agent_id: int, text: str, **options: Any) -> Any:
        result = self._forgetting.apply(agent_id, text, **options)
        self._engine.record_forget(agent_id, text)
        return result
