"""Migration 013: vector search form."""

from __future__ import annotations


def vector_count_triggers(table: str) -> str:
    """m013's triggers for one table (passages or messages; the same for both), keeping
    ``vector_counts`` right for every writer. The text is the one m013 always created: a store's
    schema holds it verbatim."""
    return f"""CREATE TRIGGER {table}_count_ai AFTER INSERT ON {table} WHEN new.embedded = 1 BEGIN
            INSERT INTO vector_counts(kind, agent_id, embedded) VALUES ('{table}', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET embedded = embedded + 1;
        END;
        CREATE TRIGGER {table}_count_ad AFTER DELETE ON {table} WHEN old.embedded = 1 BEGIN
            UPDATE vector_counts SET embedded = embedded - 1 WHERE kind = '{table}' AND agent_id = old.agent_id;
        END;
        CREATE TRIGGER {table}_count_au AFTER UPDATE OF embedded ON {table} WHEN old.embedded != new.embedded BEGIN
            INSERT INTO vector_counts(kind, agent_id, embedded) VALUES ('{table}', new.agent_id, new.embedded - old.embedded)
            ON CONFLICT(kind, agent_id) DO UPDATE SET embedded = embedded + new.embedded - old.embedded;
        END;
        CREATE TRIGGER {table}_vec16_ai AFTER INSERT ON {table}_vec16 BEGIN
            INSERT INTO vector_counts(kind, agent_id, formed) VALUES ('{table}', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET formed = formed + 1;
        END;
        CREATE TRIGGER {table}_vec16_ad AFTER DELETE ON {table}_vec16 BEGIN
            UPDATE vector_counts SET formed = formed - 1 WHERE kind = '{table}' AND agent_id = old.agent_id;
        END;
        """


def migrate(db) -> None:
    """The vectors' search form beside vec0 (see memdesk.core.retrieval.vector_codes): sign bits in
    blocks that a loaded index re-reads one at a time by ``stamp``, and a float16 copy per row for
    re-scoring. Existing vectors get theirs when an index first loads them (read from vec0 once)."""
    db.run_script(
        """
        CREATE TABLE vector_blocks (
            kind     TEXT NOT NULL,              -- 'passages' | 'messages'
            agent_id INTEGER NOT NULL,
            block    INTEGER NOT NULL,
            stamp    INTEGER NOT NULL,           -- raised at each rewrite: loaded indexes re-read newer blocks only
            ids      BLOB NOT NULL,              -- int64 row ids
            bits     BLOB NOT NULL,              -- sign bits, dimension / 8 bytes per row
            PRIMARY KEY (kind, agent_id, block)
        );
        CREATE INDEX vector_blocks_stamp ON vector_blocks(kind, agent_id, stamp);
        CREATE TABLE passages_vec16 (
            id       INTEGER PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
            agent_id INTEGER NOT NULL,
            block    INTEGER NOT NULL,
            vector   BLOB NOT NULL               -- float16
        );
        CREATE TABLE messages_vec16 (
            id       INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
            agent_id INTEGER NOT NULL,
            block    INTEGER NOT NULL,
            vector   BLOB NOT NULL
        );
        -- How many of an agent's rows the store says have a vector, and how many have their search
        -- form: equal, an index opens without checking rows one by one. Kept by triggers, so every
        -- writer (and every cascade) counts.
        CREATE TABLE vector_counts (
            kind     TEXT NOT NULL,
            agent_id INTEGER NOT NULL,
            embedded INTEGER NOT NULL DEFAULT 0,
            formed   INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (kind, agent_id)
        ) WITHOUT ROWID;
        INSERT INTO vector_counts(kind, agent_id, embedded) SELECT 'passages', agent_id, COUNT(*) FROM passages WHERE embedded = 1 GROUP BY agent_id;
        INSERT INTO vector_counts(kind, agent_id, embedded) SELECT 'messages', agent_id, COUNT(*) FROM messages WHERE embedded = 1 GROUP BY agent_id;
        """
        + vector_count_triggers("passages")
        + vector_count_triggers("messages")
    )
