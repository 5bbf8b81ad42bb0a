"""Migration 017: graph user names."""

from __future__ import annotations


def migrate(db) -> None:
    """The user's name as each agent's knowledge graph last took it from the ``user_name`` setting
    (memdesk.core.graph.the_user). The graph follows a name set or changed later once, not at every
    extraction: a user who reverts that renaming in the memory history keeps the graph as reverted
    until the setting changes again."""
    db.run_script(
        """
        CREATE TABLE graph_user_names (
            agent_id INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            name     TEXT NOT NULL
        );
        """
    )
