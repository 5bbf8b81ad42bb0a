"""How many of an agent's passages or messages were added, and how many removed or edited (the
m013 triggers count them): a search's cache compares these two numbers instead of counting rows."""

from __future__ import annotations

from memdesk.core.storage import Database


def row_changes(db: Database, kind: str, agent_id: int) -> tuple[int, int]:
    """(added, removed or edited) for ``kind`` ('passages' or 'messages') of the agent, (0, 0) before any."""
    row = db.query_one("SELECT added, changed FROM row_changes WHERE kind = ? AND agent_id = ?", (kind, agent_id))
    return (int(row[0]), int(row[1])) if row else (0, 0)
