"""Migration 002: retrieval indexes."""

from __future__ import annotations


def migrate(db) -> None:
    """Message vectors (embedded lazily, so the chat step stays fast) and a per-agent generation
    counter that tells in-memory vector caches when the vectors under them changed."""
    db.run_script(
        """
        ALTER TABLE messages ADD COLUMN embedded INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX messages_unembedded ON messages(agent_id, id) WHERE embedded = 0;
        CREATE INDEX documents_status ON documents(agent_id, status);
        CREATE INDEX passages_unembedded ON passages(agent_id, id) WHERE embedded = 0;

        CREATE TABLE vector_generation (
            kind     TEXT NOT NULL,              -- 'passages' | 'messages'
            agent_id INTEGER NOT NULL,
            gen      INTEGER NOT NULL,
            PRIMARY KEY (kind, agent_id)
        ) WITHOUT ROWID;

        CREATE TRIGGER passages_gen_ai AFTER INSERT ON passages WHEN new.embedded = 1 BEGIN
            INSERT INTO vector_generation(kind, agent_id, gen) VALUES ('passages', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET gen = gen + 1;
        END;
        CREATE TRIGGER passages_gen_ad AFTER DELETE ON passages WHEN old.embedded = 1 BEGIN
            INSERT INTO vector_generation(kind, agent_id, gen) VALUES ('passages', old.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET gen = gen + 1;
        END;
        CREATE TRIGGER passages_gen_au AFTER UPDATE OF text, embedded ON passages BEGIN
            INSERT INTO vector_generation(kind, agent_id, gen) VALUES ('passages', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET gen = gen + 1;
        END;

        -- Edited searchable text needs a new vector.
        CREATE TRIGGER messages_text_au AFTER UPDATE OF search_text ON messages BEGIN
            UPDATE messages SET embedded = 0 WHERE id = new.id;
        END;
        CREATE TRIGGER messages_gen_au AFTER UPDATE OF embedded ON messages BEGIN
            INSERT INTO vector_generation(kind, agent_id, gen) VALUES ('messages', new.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET gen = gen + 1;
        END;
        CREATE TRIGGER messages_gen_ad AFTER DELETE ON messages WHEN old.embedded = 1 BEGIN
            INSERT INTO vector_generation(kind, agent_id, gen) VALUES ('messages', old.agent_id, 1)
            ON CONFLICT(kind, agent_id) DO UPDATE SET gen = gen + 1;
        END;
        """
    )
