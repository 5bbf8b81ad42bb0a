"""Migration 016: stopped replies."""

from __future__ import annotations


def migrate(db) -> None:
    """The user messages whose reply the user stopped (Stop, Esc, Ctrl+C). A turn a close, a kill or
    a crash ended is answered on the next start by itself; one the user stopped is not (that would
    undo the Stop): it is shown "not answered" with Retry, after a restart too."""
    db.run_script(
        """
        CREATE TABLE stopped_replies (
            message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
            stopped_at TEXT NOT NULL
        );
        """
    )
