"""Migration 014: row changes."""

from __future__ import annotations


def row_change_triggers(table: str, edited: str) -> str:
    """m014's triggers for one table (passages or messages; ``edited``: the columns whose update
    counts as an edit). The text is the one m014 always created: a store's schema holds it verbatim."""
    return f"""CREATE TRIGGER {table}_rows_ai AFTER INSERT ON {table} BEGIN
            INSERT INTO row_changes(kind, agent_id, added) VALUES ('{table}', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET added = added + 1;
        END;
        CREATE TRIGGER {table}_rows_ad AFTER DELETE ON {table} BEGIN
            INSERT INTO row_changes(kind, agent_id, changed) VALUES ('{table}', old.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET changed = changed + 1;
        END;
        CREATE TRIGGER {table}_rows_au AFTER UPDATE OF {edited} ON {table} BEGIN
            INSERT INTO row_changes(kind, agent_id, changed) VALUES ('{table}', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET changed = changed + 1;
        END;
        """


def migrate(db) -> None:
    """Per agent, how many passages and messages were added and how many removed or edited: the
    searches' caches compare these instead of counting a million rows before every search. The
    counters start from the rows already there."""
    db.run_script(
        """
        CREATE TABLE row_changes (
            kind     TEXT NOT NULL,              -- 'passages' | 'messages'
            agent_id INTEGER NOT NULL,
            added    INTEGER NOT NULL DEFAULT 0,
            changed  INTEGER NOT NULL DEFAULT 0, -- removed or edited
            PRIMARY KEY (kind, agent_id)
        ) WITHOUT ROWID;
        INSERT INTO row_changes(kind, agent_id, added) SELECT 'passages', agent_id, COUNT(*) FROM passages GROUP BY agent_id;
        INSERT INTO row_changes(kind, agent_id, added) SELECT 'messages', agent_id, COUNT(*) FROM messages GROUP BY agent_id;
        """
        + row_change_triggers("passages", "text, agent_id")
        + row_change_triggers("messages", "search_text, author, role, created_at, agent_id")
    )
