"""Migration 015: graph mention changes."""

from __future__ import annotations


def migrate(db) -> None:
    """Per agent, how many knowledge-graph mentions were removed or moved to another message
    (kind 'graph_mentions' in row_changes, cascades included): conversation search keeps how many
    messages mention anything (graph expansion's idf) and adds only new mentions to it while this
    stands still, instead of reading two million mentions before a reply."""
    db.run_script(
        """
        CREATE TRIGGER graph_mentions_rows_ad AFTER DELETE ON graph_mentions BEGIN
            INSERT INTO row_changes(kind, agent_id, changed) VALUES ('graph_mentions', old.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET changed = changed + 1;
        END;
        CREATE TRIGGER graph_mentions_rows_au AFTER UPDATE OF message_id, agent_id ON graph_mentions BEGIN
            INSERT INTO row_changes(kind, agent_id, changed) VALUES ('graph_mentions', old.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET changed = changed + 1;
        END;
        """
    )
