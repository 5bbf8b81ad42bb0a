"""The agents of a profile: each has its own core memory, conversation and archive."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import AgentExistsError, AgentNotFoundError, MemDeskError
from memdesk.core.memory.core_memory import DEFAULT_LIMIT, CoreMemory
from memdesk.core.memory.history import APP, USER
from memdesk.core.memory.space import delete_agent_vectors
from memdesk.core.prompts import Prompts
from memdesk.core.storage import Database
from memdesk.core.storage.scrubbing import scrub_deleted

#: The agent the window creates on a fresh install; ``memdesk warm`` prepares its prompt beforehand.
FIRST_AGENT = "Companion"


@dataclass(frozen=True)
class AgentRecord:
    id: int
    name: str
    created_at: datetime
    system_prompt: str
    summary: str
    context_start_id: int
    evicted_count: int
    pressure_alert_sent: bool
    last_login: datetime | None
    heartbeats_paused_until: datetime | None
    config: dict
    memory_view: str = ""  # JSON of agent.memory_view.MemoryView
    #: Automatic-recall events with a smaller id are shown as a stub (set at an eviction).
    recall_expired_before: int = 0


_COLUMNS = (
    "id, name, created_at, system_prompt, summary, context_start_id, evicted_count, pressure_alert_sent,"
    " last_login, heartbeats_paused_until, config, memory_view, recall_expired_before"
)


def _record(row, zone: tzinfo) -> AgentRecord:
    return AgentRecord(
        row[0],
        row[1],
        parse_iso(row[2], zone),
        row[3],
        row[4],
        row[5],
        row[6],
        bool(row[7]),
        parse_iso(row[8], zone) if row[8] else None,
        parse_iso(row[9], zone) if row[9] else None,
        json.loads(row[10]),
        row[11],
        row[12],
    )


class AgentStore:
    def __init__(self, db: Database, core: CoreMemory, clock: Clock, files_root: Path | None = None) -> None:
        self._db = db
        self._core = core
        self._clock = clock
        self._files_root = files_root

    def create(
        self,
        name: str,
        *,
        system_prompt: str,
        persona: str,
        human: str,
        limit: int = DEFAULT_LIMIT,
        persona_source: str = USER,
        human_source: str = USER,
    ) -> AgentRecord:
        """``persona_source``/``human_source``: who wrote each block's first text (APP for
        MemDesk's defaults), as its memory history will say."""
        with self._db.transaction():
            agent_id = self.create_empty(name, system_prompt=system_prompt).id
            self._core.create(
                agent_id,
                "persona",
                persona,
                limit=limit,
                description="Who you are: your persona.",
                source=persona_source,
            )
            self._core.create(
                agent_id,
                "human",
                human,
                limit=limit,
                description="What you know about the user: facts they share with you, one per line.",
                source=human_source,
            )
        return self.get(agent_id)

    def create_new(
        self, name: str, prompts: Prompts, *, persona: str | None = None, human: str | None = None
    ) -> AgentRecord:
        """A new agent on MemDesk's prompts: without ``persona``, the default one written for
        ``name``; without ``human``, the default. A block whose text is MemDesk's default (given or
        not) is recorded as written by the app, not by the user."""
        default_persona, default_human = prompts.persona_for(name), prompts.human
        persona, human = persona or default_persona, human or default_human
        return self.create(
            name,
            system_prompt=prompts.system,
            persona=persona,
            human=human,
            persona_source=APP if persona == default_persona else USER,
            human_source=APP if human == default_human else USER,
        )

    def create_empty(self, name: str, *, system_prompt: str, created_at: datetime | None = None) -> AgentRecord:
        """An agent with no memory blocks yet (an import adds the file's own)."""
        name = name.strip()
        if not name:
            raise MemDeskError("An agent needs a name")
        if self.find(name):
            raise AgentExistsError(f"An agent named {name!r} already exists")
        cursor = self._db.execute(
            "INSERT INTO agents(name, created_at, system_prompt) VALUES (?, ?, ?)",
            (name, iso(created_at or self._clock.now()), system_prompt),
        )
        return self.get(cursor.lastrowid)

    def find(self, name: str) -> AgentRecord | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM agents WHERE name = ?", (name,))
        return _record(row, self._clock.zone) if row else None

    def get_by_name(self, name: str) -> AgentRecord:
        record = self.find(name)
        if record is None:
            names = ", ".join(a.name for a in self.list()) or "none yet"
            raise AgentNotFoundError(f"No agent named {name!r} (agents: {names})")
        return record

    def get(self, agent_id: int) -> AgentRecord:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM agents WHERE id = ?", (agent_id,))
        if row is None:
            raise AgentNotFoundError(f"No agent with id {agent_id}")
        return _record(row, self._clock.zone)

    def list(self) -> list[AgentRecord]:
        zone = self._clock.zone
        return [_record(r, zone) for r in self._db.query(f"SELECT {_COLUMNS} FROM agents ORDER BY name")]

    def rename(self, agent_id: int, new_name: str) -> AgentRecord:
        new_name = new_name.strip()
        existing = self.find(new_name)
        if existing and existing.id != agent_id:
            raise AgentExistsError(f"An agent named {new_name!r} already exists")
        self._db.execute("UPDATE agents SET name = ? WHERE id = ?", (new_name, agent_id))
        return self.get(agent_id)

    def delete(self, agent_id: int) -> None:
        with self._db.transaction():
            # Messages, blocks and passages go by ON DELETE CASCADE; vec0 tables cannot.
            delete_agent_vectors(self._db, agent_id)
            self._db.execute("DELETE FROM agents WHERE id = ?", (agent_id,))
        if not self._db.in_transaction:
            # Its words leave the file too: the full-text index's older segments and the WAL.
            scrub_deleted(self._db)
        if self._files_root is not None:
            shutil.rmtree(self._files_root / f"agent-{agent_id}", ignore_errors=True)

    # --- state the loop keeps on the agent row -----------------------------------------------
    def update(self, agent_id: int, **fields) -> None:
        allowed = {
            "summary",
            "context_start_id",
            "evicted_count",
            "pressure_alert_sent",
            "last_login",
            "heartbeats_paused_until",
            "config",
            "memory_view",
            "recall_expired_before",
        }
        if not fields or set(fields) - allowed:
            raise ValueError(f"Cannot update agent fields {sorted(set(fields) - allowed)}")
        values = []
        for value in fields.values():
            if isinstance(value, datetime):
                value = iso(value)
            elif isinstance(value, bool):
                value = int(value)
            elif isinstance(value, dict):
                value = json.dumps(value)
            values.append(value)
        assignments = ", ".join(f"{key} = ?" for key in fields)
        self._db.execute(f"UPDATE agents SET {assignments} WHERE id = ?", (*values, agent_id))
