"""Conversations imported from other assistants, in MemDesk's extension of an agent file: each
with its source, title and times, and its messages with their own ids in the file, so the
knowledge graph and the history that cite them keep citing them in the copy."""

from __future__ import annotations

import json
from typing import Any

from memdesk.core.base.clock import iso, parse_iso
from memdesk.core.base.errors import AgentFileError
from memdesk.core.memory.recall import ImportedMessage
from memdesk.core.memory.services import MemoryServices
from memdesk.core.storage import Database

_COLUMNS = "id, source, external_id, title, assistant, started_at, updated_at, skipped, created_at"


def export_conversations(db: Database, agent_id: int, refs: dict[int, str]) -> list[dict[str, Any]]:
    """The agent's imported conversations; each message's file id is added to ``refs``."""
    out = []
    for row in db.query(f"SELECT {_COLUMNS} FROM imported_conversations WHERE agent_id = ? ORDER BY id", (agent_id,)):
        messages = []
        for m in db.query(
            "SELECT id, external_id, role, author, search_text, created_at, imported_at FROM messages"
            " WHERE conversation_id = ? ORDER BY id",
            (row[0],),
        ):
            ref = f"imported-{len(refs)}"
            refs[m[0]] = ref
            messages.append(
                {
                    "id": ref,
                    "external_id": m[1],
                    "role": m[2],
                    "author": m[3],
                    "text": m[4],
                    "at": m[5],
                    "imported_at": m[6],  # retention counts from it
                }
            )
        out.append(
            {
                "source": row[1],
                "external_id": row[2],
                "title": row[3],
                "assistant": row[4],
                "started_at": row[5],
                "updated_at": row[6],
                "left_out": json.loads(row[7] or "[]"),
                "imported_at": row[8],
                "messages": messages,
            }
        )
    return out


def import_conversations(memory: MemoryServices, agent_id: int, data: Any, stored: dict[str, int]) -> int:
    """Store ``export_conversations`` output for a new agent (the caller holds the transaction);
    each message's file id is mapped to its new id in ``stored``. How many messages."""
    count = 0
    for conversation in data if isinstance(data, list) else []:
        if not isinstance(conversation, dict) or not conversation.get("external_id"):
            continue
        try:
            conversation_id = int(
                memory.db.execute(
                    "INSERT INTO imported_conversations(agent_id, source, external_id, title, assistant, started_at,"
                    " updated_at, message_count, skipped, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        agent_id,
                        str(conversation.get("source", "")),
                        str(conversation["external_id"]),
                        str(conversation.get("title", "")),
                        str(conversation.get("assistant", "")),
                        _text_or_none(conversation.get("started_at")),
                        _text_or_none(conversation.get("updated_at")),
                        len(conversation.get("messages", [])),
                        json.dumps(conversation.get("left_out", []), ensure_ascii=False),
                        _text_or_none(conversation.get("imported_at")) or iso(memory.clock.now()),
                    ),
                ).lastrowid
            )
            messages = [m for m in conversation.get("messages", []) if isinstance(m, dict)]
            ids = memory.recall.add_imported(
                agent_id,
                conversation_id,
                [
                    ImportedMessage(
                        "user" if m.get("role") == "user" else "assistant",
                        str(m.get("text", "")),
                        parse_iso(m["at"]),
                        _text_or_none(m.get("author")),
                        str(m.get("external_id", "")),
                        parse_iso(m["imported_at"]) if m.get("imported_at") else None,
                    )
                    for m in messages
                ],
                # A file from before messages carried their own: the conversation's import.
                imported_at=parse_iso(conversation["imported_at"]) if conversation.get("imported_at") else None,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise AgentFileError(
                f"An imported conversation in the file has a missing or wrong field ({error})",
                hint="the file is damaged",
            ) from None
        for message, new_id in zip(messages, ids, strict=True):
            if message.get("id"):
                stored[str(message["id"])] = new_id
        count += len(ids)
    return count


def _text_or_none(value: Any) -> str | None:
    """A field a hostile or damaged file may give any shape: text, or nothing (never a value
    SQLite cannot bind)."""
    return value if isinstance(value, str) else None
