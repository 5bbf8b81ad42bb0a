"""Forget a person or topic: preview what would go (changing nothing), then remove it everywhere.

The front ends (``memdesk forget``, Memory > Forget…) use this and nothing below it. A forget:

1. unless the user chose to purge backups too, takes a snapshot first ("before forget"), so a
   mistaken forget can be undone from File > Backups… (with the purge, keeping a copy of the text
   would defeat the purpose);
2. finds and removes, in one transaction (finder.py, remove.py), and records in the memory history
   that something was forgotten (how many of each kind), never what;
3. scrubs the file (FTS merge, secure_delete, VACUUM, WAL truncate);
4. deletes the saved prompt KV states (they hold the old core memory and conversation; the runtime
   rebuilds them);
5. removes the lines that name it from the data folder's other files (files.py: logs, messages
   not yet delivered, the agent's own files), and names the user's own tool files that do (the
   user's code is not changed);
6. with ``purge_backups``, does 2-3 inside every snapshot taken before, and takes it out of the
   snapshots' descriptions (a reason such as "before import of eva.af").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memdesk.core.base.clock import Clock
from memdesk.core.base.errors import MemDeskError
from memdesk.core.embedding import Embedder
from memdesk.core.graph.store import KnowledgeGraph
from memdesk.core.memory.forget.backups import SNAPSHOT_REASON, Snapshot, SnapshotStore
from memdesk.core.memory.forget.files import DataFolder, find_in_files, scrub_files, user_code_naming
from memdesk.core.memory.forget.finder import KINDS, LABELS, Finder, samples
from memdesk.core.memory.forget.other_text import scrubbed as scrubbed_text
from memdesk.core.memory.forget.remove import Removed, remove, scrub
from memdesk.core.memory.history import MemoryHistory
from memdesk.core.storage import Database

#: (what is happening, fraction done 0..1)
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class KindPreview:
    kind: str
    label: str
    count: int
    samples: tuple[str, ...]


@dataclass(frozen=True)
class ForgetPreview:
    agent_id: int
    text: str
    kinds: tuple[KindPreview, ...]  # only kinds with something to forget, in finder.KINDS order
    similar: int  # of the messages and passages, how many were found by meaning alone
    backups: tuple[Snapshot, ...]  # snapshots that may still hold the text
    kv_cache_files: int
    user_code: tuple[str, ...] = ()  # the user's own tool files naming it (never changed)

    @property
    def total(self) -> int:
        return sum(k.count for k in self.kinds)

    @property
    def empty(self) -> bool:
        return self.total == 0

    def counts(self) -> dict[str, int]:
        return {k.kind: k.count for k in self.kinds}

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "total": self.total,
            "kinds": {k.kind: {"label": k.label, "count": k.count, "samples": list(k.samples)} for k in self.kinds},
            "found_by_meaning": self.similar,
            "backups": [
                {"id": str(b.id), "created_at": b.created_at.isoformat(), "reason": b.reason, "size": b.size}
                for b in self.backups
            ],
            "kv_cache_files": self.kv_cache_files,
            "user_code": list(self.user_code),
        }


@dataclass(frozen=True)
class ForgetResult:
    removed: Removed
    snapshot: Snapshot | None  # taken before, unless backups were purged
    backups_purged: int
    kv_cache_files_removed: int
    checkpointed: bool
    backup_errors: tuple[str, ...] = field(default_factory=tuple)
    file_lines_removed: int = 0
    file_errors: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict:
        return {
            "removed": self.removed.counts,
            "snapshot": None if self.snapshot is None else str(self.snapshot.id),
            "backups_purged": self.backups_purged,
            "kv_cache_files_removed": self.kv_cache_files_removed,
            "wal_emptied": self.checkpointed,
            "backup_errors": list(self.backup_errors),
            "file_lines_removed": self.file_lines_removed,
            "file_errors": list(self.file_errors),
        }


def _kv_files(folder: Path | None) -> list[Path]:
    if folder is None or not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if p.is_file()]


class Forgetting:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        embedder: Embedder | None = None,
        history: MemoryHistory | None = None,
        graph: KnowledgeGraph | None = None,
        kv_cache: Path | None = None,
        data: DataFolder | None = None,
        backups: SnapshotStore | None = None,
        threshold: float,
    ) -> None:
        """``graph``: the store's knowledge-graph object, whose in-memory caches are dropped after a
        forget. ``kv_cache``: the folder of saved prompt KV states. ``data``: the data folder, whose
        files' lines naming what is forgotten are removed too (files.py). ``backups``: the store's
        snapshots (None: no backups to list or purge). ``threshold``: how similar in meaning what is
        removed must be (the forget_similarity setting)."""
        self._db = db
        self._clock = clock
        self._embedder = embedder
        self._history = history or MemoryHistory(db, clock)
        self._graph = graph
        self._kv_cache = kv_cache
        self._data = data
        self._backups = backups
        self.threshold = threshold

    def _finder(self, db: Database) -> Finder:
        return Finder(db, self._embedder, threshold=self.threshold)

    def preview(self, agent_id: int, text: str, *, per_kind: int = 3) -> ForgetPreview:
        """What a forget of ``text`` would remove; reads only."""
        text = _checked(text)
        found = self._finder(self._db).find(agent_id, text)
        found.files = find_in_files(self._data, agent_id, found.phrases)
        shown = samples(self._db, found, per_kind)
        counts = found.counts()
        kinds = tuple(KindPreview(k, LABELS[k], counts[k], tuple(shown.get(k, ()))) for k in KINDS if counts[k])
        backups = tuple(self._backups.list()) if self._backups is not None else ()
        return ForgetPreview(
            agent_id,
            text,
            kinds,
            len(found.similar),
            backups,
            len(_kv_files(self._kv_cache)),
            tuple(user_code_naming(self._data, found.phrases)),
        )

    def apply(
        self, agent_id: int, text: str, *, purge_backups: bool = False, progress: Progress = lambda what, done: None
    ) -> ForgetResult:
        text = _checked(text)
        snapshot = None
        if self._backups is not None and not purge_backups:
            progress("Taking a backup first…", 0.0)
            snapshot = self._backups.create(SNAPSHOT_REASON)
        progress("Removing…", 0.1)
        # Found by reading, then removed in one short write transaction: the search (a scan of
        # every vector on a large store) must not hold the write lock other connections wait on.
        found = self._finder(self._db).find(agent_id, text)
        removed = remove(self._db, found, self._clock, history=self._history)
        if self._graph is not None:
            self._graph.drop_cached(agent_id)
        progress("Wiping the freed space…", 0.4)
        scrubbed = scrub(self._db)
        progress("Removing saved prompt states…", 0.6)
        kv_removed = 0
        for path in _kv_files(self._kv_cache):
            path.unlink(missing_ok=True)
            kv_removed += 1
        file_lines, file_errors = scrub_files(self._data, agent_id, found.phrases)
        purged, errors = 0, []
        if purge_backups and self._backups is not None:
            snapshots = [s for s in self._backups.list() if snapshot is None or s.id != snapshot.id]
            for n, old in enumerate(snapshots):
                progress(f"Purging backup {n + 1} of {len(snapshots)}…", 0.6 + 0.4 * n / max(1, len(snapshots)))
                try:
                    self._backups.rewrite(old.id, self._purge_change(agent_id, text))
                    if found.phrases.matches(old.reason):
                        self._backups.relabel(old.id, scrubbed_text(old.reason, found.phrases) or "forgotten")
                    purged += 1
                except MemDeskError as error:  # one damaged snapshot must not stop the others
                    errors.append(f"{old.id}: {error.user_message}")
        progress("Done", 1.0)
        return ForgetResult(
            removed,
            snapshot,
            purged,
            kv_removed,
            scrubbed.checkpointed,
            tuple(errors),
            file_lines,
            tuple(file_errors),
        )

    def _purge_change(self, agent_id: int, text: str) -> Callable[[Database], None]:
        name = self._db.scalar("SELECT name FROM agents WHERE id = ?", (agent_id,))

        def change(snapshot_db: Database) -> None:
            # The same agent in the snapshot (ids are kept across snapshots; the name is checked).
            row = snapshot_db.query_one("SELECT id FROM agents WHERE id = ? AND name = ?", (agent_id, name))
            row = row or snapshot_db.query_one("SELECT id FROM agents WHERE name = ?", (name,))
            if row is None:
                return
            with snapshot_db.transaction():
                found = self._finder(snapshot_db).find(int(row[0]), text)
                remove(snapshot_db, found, self._clock, history=self._history.on(snapshot_db))
            from memdesk.core.memory.forget.remove import optimize_indexes

            optimize_indexes(snapshot_db)  # the rewrite vacuums; merged FTS segments make that enough

        return change


def _checked(text: str) -> str:
    text = " ".join(text.split())
    if not any(ch.isalnum() for ch in text):
        raise MemDeskError("Say what to forget: a name or a few words")
    return text
