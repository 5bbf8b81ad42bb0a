"""Migration 007: recall shown."""

from __future__ import annotations


def migrate(db) -> None:
    """Which memories each automatic-recall event showed the model (agent/recall/search.py): what a
    reply had in front of it, and what not to show again while the event is in context."""
    db.run_script(
        """
        CREATE TABLE recall_shown (
            id        INTEGER PRIMARY KEY,
            agent_id  INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            event_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,  -- the memories event
            position  INTEGER NOT NULL,
            source    TEXT NOT NULL,              -- conversation | archival | ...
            ref       TEXT NOT NULL,              -- message:ID | passage:ID | ...
            at        TEXT,                       -- the memory's own date
            place     TEXT NOT NULL DEFAULT '',   -- who said it, or the document
            text      TEXT NOT NULL
        );
        CREATE INDEX recall_shown_event ON recall_shown(agent_id, event_id);
        """
    )
