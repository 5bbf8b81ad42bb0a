"""The memory operations the front ends start: forgetting, retention, agent files in and out, and
sync (memdesk.core.sync) with the store's own memory owners and forget."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdesk.app.services import Services, memory_history, snapshot_before
from memdesk.core.storage import Database

if TYPE_CHECKING:
    from memdesk.core.sync.engine import SyncEngine


def open_forgetting(services: Services, backups=None, *, db: Database | None = None, shared: bool = True):
    """Forget (memdesk.core.memory.forget) on this store: its history, graph caches, the prompt KV
    cache folder, and ``backups`` (the store's snapshots, to list and purge; None: none). ``db``: a
    connection the calling thread opened for itself (the window's, so the VACUUM at the end does
    not hold the connection the panels read through). ``shared``: paired devices forget it too (off for
    a forget another device asked for, which it already shares)."""
    from memdesk.core.memory.forget import Forgetting
    from memdesk.core.memory.forget.files import DataFolder

    memory = services.memory
    history = memory.archival.history if db is None else memory_history(db, services.clock)
    forgetting = Forgetting(
        db or services.db,
        services.clock,
        embedder=services.embedder,
        history=history,
        graph=memory.graph,
        kv_cache=services.paths.kv_cache,
        data=DataFolder.of(services.paths, getattr(backups, "folder", None)),
        backups=backups,
        threshold=services.settings.forget_similarity,
    )
    if services.private or not shared:
        return forgetting
    # A paired device forgets it too (sync is off: nothing is recorded).
    return SyncedForgetting(forgetting, open_sync(services, db=db))


def open_retention(services: Services, *, db: Database | None = None):
    """Retention (memdesk.core.memory.forget.retention) on this store, or on ``db``."""
    from memdesk.core.memory.forget.retention import Retention

    history = services.memory.archival.history if db is None else memory_history(db, services.clock)
    return Retention(
        db or services.db,
        services.clock,
        history=history,
        kv_cache=services.paths.kv_cache,
        keep_weekly=services.settings.backup_keep_weekly,
    )


def agent_file_options(services: Services) -> dict:
    """What agent-file exports need from the wiring: the local model, described as Letta's
    LLMConfig, and the knowledge graph's part of the file."""
    from memdesk.core.models.bundled import DEFAULT_FILE
    from memdesk.core.transfer.agentfile import local_llm_config
    from memdesk.core.transfer.agentfile.graph import GraphFileTransfer

    settings = services.settings
    if settings.runtime == "openai":
        model = settings.openai_model or "openai-compatible"
    else:
        model = Path(settings.model_path).name if settings.model_path else DEFAULT_FILE
    return {
        "llm_config": local_llm_config(model, settings.context_size, settings.temperature),
        "graph": GraphFileTransfer(),
    }


def import_agent_path(services: Services, path: Path, *, name: str | None = None):
    """Import an agent file (either format), after a snapshot of the store; returns the summary."""
    from memdesk.core.transfer.agentfile.files import import_path

    path = Path(path)
    snapshot_before(services, f"before import of {path.name}")
    return import_path(services, path, name=name, graph=agent_file_options(services)["graph"])


def open_sync(services: Services, *, db: Database | None = None) -> SyncEngine:
    """Sync on ``services``' store, or on ``db``, a connection the calling thread opened for itself."""
    # imported here: cryptography loads only when sync runs, not at every start
    from memdesk.core.memory.synced import SyncedRows
    from memdesk.core.storage.migrations import MIGRATIONS
    from memdesk.core.sync.engine import SyncEngine

    db = db or services.db
    history = memory_history(db, services.clock)

    def forget(agent_id: int, text: str) -> None:
        # Another device's forget wins everywhere, backups included: purged, not snapshotted first.
        open_forgetting(services, services.backups, db=db, shared=False).apply(agent_id, text, purge_backups=True)

    graph = services.memory.graph if db is services.db else None
    if graph is None:
        from memdesk.core.graph import KnowledgeGraph

        graph = KnowledgeGraph(db, services.clock, services.embedder, history=history)
    rows = SyncedRows(db, services.clock, history, graph)
    return SyncEngine(
        db,
        services.clock,
        rows,
        forget=forget,
        schema=len(MIGRATIONS),
        embed=lambda agent_id: rows.embed_pending(agent_id, services.embedder),
    )


class SyncedForgetting:
    """A forget the user asked for here, which every paired device then forgets too."""

    def __init__(self, forgetting: Any, engine: SyncEngine) -> None:
        self._forgetting = forgetting
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forgetting, name)

    def apply(self, agent_id: int, text: str, **options: Any) -> Any:
        return self._engine.forget_here(agent_id, text, lambda: self._forgetting.apply(agent_id, text, **options))


def import_history(
    services: Services, agent_id: int, path: Path, selection=None, *, apply: bool, progress=None, keep_rows=False
):
    """Preview an export of another assistant's conversations for the agent (weighed against its
    retention setting); with ``apply``, a snapshot of the store is taken and the import begins
    (memdesk.core.transfer.history.plan)."""
    from memdesk.core.transfer.history.plan import prepare
    from memdesk.core.transfer.history.preview import Selection

    path = Path(path)
    return prepare(
        services.memory,
        agent_id,
        path,
        selection or Selection(),
        apply=apply,
        progress=progress,
        before_apply=lambda: snapshot_before(services, f"before importing {path.name}"),
        retention_days=open_retention(services).policy(agent_id).days,
        keep_rows=keep_rows,
    )


def propose_from_imports(services: Services, agent_id: int) -> int:
    """What core memory could learn about the person from imported conversations, proposed for
    review (memdesk.core.transfer.history.learning): how many proposals wait."""
    from memdesk.core.transfer.history.learning import Learning

    return Learning(services.memory, user_name=services.settings.user_name).propose(agent_id)


def export_memory_folder(services: Services, agent_ids: list[int], folder: Path) -> list[Path]:
    """Every agent in ``agent_ids`` into a readable folder (memdesk.core.transfer.folder)."""
    from memdesk.core.transfer.folder.writing import export_folder

    return export_folder(
        services, agent_ids, Path(folder), encrypted=services.key is not None, **agent_file_options(services)
    )


def import_memory_folder(services: Services, folder: Path):
    """A memory folder's agents back into the store, after a snapshot of it; the summary."""
    from memdesk.core.transfer.folder.reading import import_folder

    folder = Path(folder)
    snapshot_before(services, f"before import of {folder.name}")
    return import_folder(services, folder, graph=agent_file_options(services)["graph"])
