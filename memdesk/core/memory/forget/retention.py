"""Retention: "forget conversation messages older than N days", per agent, off by default.

Only the conversation goes: core memory, archival memory, the knowledge graph and the summary are
kept (a fact taken from an expired message stays, without its source; the message's mentions go
with it). What newer rows quote of an expired message (automatic recall's memories, search
results) is blanked with it (quotes.py); the backups taken before keep it until they are pruned,
which the preview says. A message imported from another assistant counts its days from its import,
not from its original date (``OLD``): a person who imports years of history under a 30-day setting
has it for 30 days, long enough for the background work to learn from it, instead of losing it at
the next idle moment (the import's preview says so). The policy lives in the agent's own options
(``agents.config``): ``retention_days`` (0: off) and ``retention_confirmed``. A new or changed
policy is previewed the first time: it applies only once the user has seen what it would remove
and confirmed (the window asks once; the terminal prints it and waits for ``memdesk retention
AGENT --apply``). After that it runs while the user is idle, at most once per ``RUN_EVERY``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import MemDeskError
from memdesk.core.memory.erase import erase_messages
from memdesk.core.memory.forget.quotes import blank_quotes, find_quotes
from memdesk.core.memory.forget.remove import FORGET_KIND, scrub
from memdesk.core.memory.history import DELETE, USER, MemoryHistory
from memdesk.core.storage import Database

DAYS, CONFIRMED, LAST_RUN = "retention_days", "retention_confirmed", "retention_last_run"
#: Idle-time runs are at most this often: each one rewrites the file (VACUUM).
RUN_EVERY = timedelta(hours=12)
BATCH = 500
#: A message past the cutoff (one ``?``): its own time, or its import's when that is later.
OLD = "MAX(created_at, COALESCE(imported_at, created_at)) < ?"


@dataclass(frozen=True)
class RetentionPolicy:
    days: int = 0
    confirmed: bool = False

    @property
    def on(self) -> bool:
        return self.days > 0


@dataclass(frozen=True)
class RetentionPreview:
    agent_id: int
    days: int
    cutoff: datetime
    messages: int
    oldest: datetime | None
    newest: datetime | None  # of those that would go
    quoting: int = 0  # newer recall lines and search results quoting them, blanked too
    keep_weekly: int | None = None  # weeks of snapshots kept (None: no backups known)

    @property
    def empty(self) -> bool:
        return self.messages == 0

    def describe(self) -> str:
        if self.empty:
            return f"No conversation message is older than {self.days} days."
        span = f" (from {self.oldest:%Y-%m-%d} to {self.newest:%Y-%m-%d})" if self.oldest and self.newest else ""
        quoting = (
            f" {self.quoting} newer automatic-recall lines and search results quoting them are blanked too."
            if self.quoting
            else ""
        )
        backups = (
            f" Backups taken before still hold them for up to {self.keep_weekly} weeks, until they are pruned"
            " (or restore none and remove them in File › Backups…)."
            if self.keep_weekly
            else ""
        )
        return (
            f"{self.messages} conversation messages older than {self.days} days{span} would be forgotten; "
            f"core memory, archival memory and the knowledge graph are kept.{quoting}{backups}"
        )

    def as_dict(self) -> dict:
        return {
            "days": self.days,
            "cutoff": iso(self.cutoff),
            "messages": self.messages,
            "oldest": iso(self.oldest) if self.oldest else None,
            "newest": iso(self.newest) if self.newest else None,
            "quoting": self.quoting,
            "backups_keep_weeks": self.keep_weekly,
        }


class Retention:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        history: MemoryHistory | None = None,
        kv_cache: Path | None = None,
        keep_weekly: int | None = None,
    ) -> None:
        """``keep_weekly``: how many weeks of automatic snapshots are kept (the backup_keep_weekly
        setting), which the preview names: they hold the messages that long."""
        self._db = db
        self._clock = clock
        self._history = history or MemoryHistory(db, clock)
        self._kv_cache = kv_cache
        self._keep_weekly = keep_weekly

    # --- the policy ------------------------------------------------------------------------
    def _config(self, agent_id: int) -> dict:
        raw = self._db.scalar("SELECT config FROM agents WHERE id = ?", (agent_id,))
        return json.loads(raw) if raw else {}

    def _save(self, agent_id: int, config: dict) -> None:
        self._db.execute("UPDATE agents SET config = ? WHERE id = ?", (json.dumps(config), agent_id))

    def policy(self, agent_id: int) -> RetentionPolicy:
        config = self._config(agent_id)
        return RetentionPolicy(int(config.get(DAYS, 0) or 0), bool(config.get(CONFIRMED, False)))

    def set_days(self, agent_id: int, days: int) -> RetentionPolicy:
        """Turn retention on (``days`` > 0) or off (0). A changed policy waits for a confirmation."""
        if days < 0:
            raise MemDeskError("Retention needs a number of days (0 turns it off)")
        with self._db.transaction():
            config = self._config(agent_id)
            if int(config.get(DAYS, 0) or 0) != days:
                config[DAYS] = days
                config[CONFIRMED] = False
                self._save(agent_id, config)
        return self.policy(agent_id)

    def confirm(self, agent_id: int) -> None:
        with self._db.transaction():
            config = self._config(agent_id)
            config[CONFIRMED] = True
            self._save(agent_id, config)

    # --- what it removes ---------------------------------------------------------------------
    def cutoff(self, days: int) -> datetime:
        return self._clock.now() - timedelta(days=days)

    def preview(self, agent_id: int, days: int | None = None) -> RetentionPreview:
        days = self.policy(agent_id).days if days is None else days
        cutoff = self.cutoff(days)
        if days <= 0:
            return RetentionPreview(agent_id, days, cutoff, 0, None, None)
        row = self._db.query_one(
            f"SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM messages WHERE agent_id = ? AND {OLD}",
            (agent_id, iso(cutoff)),
        )
        expired = self._expired(agent_id, iso(cutoff))
        return RetentionPreview(
            agent_id,
            days,
            cutoff,
            int(row[0]),
            parse_iso(row[1]) if row[1] else None,
            parse_iso(row[2]) if row[2] else None,
            find_quotes(self._db, agent_id, expired).count,
            self._keep_weekly,
        )

    def _expired(self, agent_id: int, cutoff: str) -> list[int]:
        """The messages older than ``cutoff``, with the other half of every call and result."""
        ids = [
            int(r[0])
            for r in self._db.query(f"SELECT id FROM messages WHERE agent_id = ? AND {OLD}", (agent_id, cutoff))
        ]
        if not ids:
            return ids
        # A call goes with its result and a result with its call, whichever side is older.
        steps = {
            int(r[0])
            for r in self._db.query(
                f"SELECT DISTINCT step_id FROM messages WHERE agent_id = ? AND {OLD} AND step_id IS NOT NULL",
                (agent_id, cutoff),
            )
        }
        paired = {int(r[0]) for r in self._query_in("SELECT id FROM messages WHERE step_id IN ({})", sorted(steps))}
        return sorted(set(ids) | steps | paired)

    def due(self, agent_id: int) -> RetentionPreview | None:
        """What an idle-time run would remove now (None: off, nothing old, or run recently)."""
        policy = self.policy(agent_id)
        if not policy.on:
            return None
        last = self._config(agent_id).get(LAST_RUN)
        if last and self._clock.now() - parse_iso(last) < RUN_EVERY:
            return None
        preview = self.preview(agent_id)
        return None if preview.empty else preview

    def apply(self, agent_id: int) -> int:
        """Forget the agent's messages older than its policy allows (confirmed policies only).
        Returns how many went."""
        policy = self.policy(agent_id)
        if not policy.on:
            return 0
        if not policy.confirmed:
            raise MemDeskError(
                "Retention has not been confirmed yet", hint="look at what it would remove first, then confirm it"
            )
        cutoff = iso(self.cutoff(policy.days))
        with self._db.transaction():
            ids = self._expired(agent_id, cutoff)
            # Newer rows quoting them lose the quotes (and recall_shown its rows of them) first.
            blank_quotes(self._db, find_quotes(self._db, agent_id, ids))
            for start in range(0, len(ids), BATCH):
                chunk = ids[start : start + BATCH]
                marks = ",".join("?" * len(chunk))
                # The graph is kept: its facts lose their source message instead of going with it.
                self._db.execute(f"UPDATE graph_facts SET message_id = NULL WHERE message_id IN ({marks})", chunk)
                self._db.execute(
                    f"DELETE FROM graph_queue WHERE source_kind = 'message' AND source_id IN ({marks})", chunk
                )
                erase_messages(self._db, chunk)
            config = self._config(agent_id)
            config[LAST_RUN] = iso(self._clock.now())
            self._save(agent_id, config)
            if ids:
                self._history.record(
                    agent_id,
                    FORGET_KIND,
                    None,
                    DELETE,
                    source=USER,
                    label=f"messages older than {policy.days} days",
                    after=f"Forgot {len(ids)} conversation messages older than {policy.days} days",
                    after_meta={"counts": {"messages": len(ids)}},
                    note="retention",
                    prune=False,
                )
        if ids:
            scrub(self._db)
            if self._kv_cache is not None and self._kv_cache.is_dir():
                for path in self._kv_cache.iterdir():
                    if path.is_file():
                        path.unlink(missing_ok=True)
        return len(ids)

    def _query_in(self, sql: str, ids: list[int]) -> list:
        rows: list = []
        for start in range(0, len(ids), BATCH):
            chunk = ids[start : start + BATCH]
            rows += self._db.query(sql.format(",".join("?" * len(chunk))), chunk)
        return rows

    def run_if_due(self, agent_id: int) -> int:
        """The idle-time entry point: apply a confirmed, due policy; 0 when there is nothing to do."""
        if self.due(agent_id) is None or not self.policy(agent_id).confirmed:
            return 0
        return self.apply(agent_id)
