"""Imported conversations and what was learned from them, as a front end lists them: the agent's
conversations by source, title and date (apart from its own chat), one conversation's messages,
the agent's imports with their state, and the proposals waiting for review with the messages
each came from and the sources they were learned from ("your ChatGPT history")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from memdesk.core.base.clock import parse_iso
from memdesk.core.memory.services import MemoryServices
from memdesk.core.storage import Database
from memdesk.core.transfer.history.learning import Learning, Proposal
from memdesk.core.transfer.history.model import SOURCE_NAMES

#: Conversations a list shows at once (the newest that match; a filter narrows them).
LISTED = 1000


@dataclass(frozen=True)
class ImportedConversation:
    id: int
    source: str  # chatgpt, claude, open-webui, transcript
    title: str
    assistant: str
    started_at: datetime | None
    updated_at: datetime | None
    messages: int

    @property
    def source_name(self) -> str:
        return SOURCE_NAMES.get(self.source, self.source)


@dataclass(frozen=True)
class ConversationList:
    conversations: list[ImportedConversation]
    total: int  # of the agent, whatever the filter


def conversations(db: Database, agent_id: int, text: str = "", limit: int = LISTED) -> ConversationList:
    """The agent's imported conversations whose title or source holds ``text`` (any case), the
    newest first."""
    rows = db.query(
        "SELECT id, source, title, assistant, started_at, updated_at, message_count FROM imported_conversations"
        " WHERE agent_id = ? AND (? = '' OR memdesk_contains(title || ' ' || source || ' ' || assistant, ?))"
        " ORDER BY COALESCE(updated_at, started_at, created_at) DESC, id DESC LIMIT ?",
        (agent_id, text.strip(), text.strip(), limit),
    )
    total = int(db.scalar("SELECT COUNT(*) FROM imported_conversations WHERE agent_id = ?", (agent_id,)))
    return ConversationList(
        [
            ImportedConversation(
                int(r[0]),
                str(r[1]),
                str(r[2]),
                str(r[3]),
                parse_iso(r[4]) if r[4] else None,
                parse_iso(r[5]) if r[5] else None,
                int(r[6]),
            )
            for r in rows
        ],
        total,
    )


@dataclass(frozen=True)
class LearnedItem:
    """A proposal with where it came from: (when, the conversation and its source, what was said)."""

    proposal: Proposal
    sources: list[tuple[datetime, str, str]]
    source_names: tuple[str, ...]  # the tools its messages were imported from


@dataclass(frozen=True)
class Learned:
    items: list[LearnedItem]

    @property
    def source_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for item in self.items for name in item.source_names))

    @property
    def title(self) -> str:
        """ "What MemDesk learned from your ChatGPT history" (the sources named)."""
        names = self.source_names
        if not names:
            return "What MemDesk learned from your imported conversations"
        joined = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"What MemDesk learned from your {joined} history"


def learned(memory: MemoryServices, agent_id: int) -> Learned:
    """The proposals waiting for the person's review, each with its sources."""
    learning = Learning(memory)
    items = []
    for proposal in learning.pending(agent_id):
        items.append(LearnedItem(proposal, learning.sources(proposal), _sources_of(memory.db, proposal)))
    return Learned(items)


def _sources_of(db: Database, proposal: Proposal) -> tuple[str, ...]:
    if not proposal.sources:
        return ()
    marks = ",".join("?" * len(proposal.sources))
    rows = db.query(
        f"SELECT DISTINCT c.source FROM messages m JOIN imported_conversations c ON c.id = m.conversation_id"
        f" WHERE m.id IN ({marks}) ORDER BY c.source",
        tuple(proposal.sources),
    )
    return tuple(SOURCE_NAMES.get(r[0], r[0]) for r in rows)


@dataclass(frozen=True)
class ImportState:
    """One import of the agent, as a list shows it."""

    id: int
    path: str
    source_name: str
    status: str  # running, stopped, paused, done
    conversations_added: int
    messages_added: int
    started_at: datetime
    finished_at: datetime | None

    @property
    def resumable(self) -> bool:
        return self.status != "done"


def import_states(db: Database, agent_id: int, limit: int = 20) -> list[ImportState]:
    rows = db.query(
        "SELECT id, path, format, status, conversations_added, messages_added, started_at, finished_at"
        " FROM history_imports WHERE agent_id = ? ORDER BY id DESC LIMIT ?",
        (agent_id, limit),
    )
    return [
        ImportState(
            int(r[0]),
            str(r[1]),
            SOURCE_NAMES.get(r[2], r[2]),
            str(r[3]),
            int(r[4]),
            int(r[5]),
            parse_iso(r[6]),
            parse_iso(r[7]) if r[7] else None,
        )
        for r in rows
    ]


def skipped_of(db: Database, conversation_id: int) -> list[str]:
    """What was left out of one imported conversation, and why."""
    raw = db.scalar("SELECT skipped FROM imported_conversations WHERE id = ?", (conversation_id,))
    try:
        pairs = json.loads(raw or "[]")
    except ValueError:
        return []
    return [f"{count} × {why}" if isinstance(count, int) and count > 1 else str(why) for why, count in pairs]
