"""Migration 011: imported document paths."""

from __future__ import annotations


def migrate(db) -> None:
    """A document row an agent file brings names a path on the machine it came from, chosen by
    whoever wrote the file: here it may name any file or folder. Such rows are marked, and nothing
    reads them from that path until the user picks the file (documents/catalog.py; ingesting the
    path explicitly counts). Rows already in the store are marked unless the memory history shows
    that the user's own ingestion read them last (the ingestor records a 'user' document change;
    an import records 'import', and carried history never names a document row): a row of the
    user's that never read successfully asks for its file once, a planted row is never read."""
    db.run_script(
        """
        ALTER TABLE documents ADD COLUMN path_imported INTEGER NOT NULL DEFAULT 0;
        UPDATE documents SET path_imported = 1 WHERE COALESCE((
            SELECT h.source FROM memory_history h
            WHERE h.agent_id = documents.agent_id AND h.target_kind = 'document' AND h.target_id = documents.id AND h.action = 'create'
            ORDER BY h.id DESC LIMIT 1
        ), '') != 'user';
        """
    )
