"""Migration 001: initial."""

from __future__ import annotations


def migrate(db) -> None:
    db.run_script(
        """
        CREATE TABLE settings (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL               -- JSON
        );

        CREATE TABLE agents (
            id                     INTEGER PRIMARY KEY,
            name                   TEXT NOT NULL UNIQUE,
            created_at             TEXT NOT NULL,
            system_prompt          TEXT NOT NULL,
            summary                TEXT NOT NULL DEFAULT '',
            -- messages with id >= context_start_id are in the context window; older ones were evicted
            context_start_id       INTEGER NOT NULL DEFAULT 0,
            evicted_count          INTEGER NOT NULL DEFAULT 0,
            pressure_alert_sent    INTEGER NOT NULL DEFAULT 0,
            last_login             TEXT,
            heartbeats_paused_until TEXT,
            config                 TEXT NOT NULL DEFAULT '{}'  -- JSON: per-agent options
        );

        CREATE TABLE memory_blocks (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            label       TEXT NOT NULL,
            value       TEXT NOT NULL,
            char_limit  INTEGER NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            read_only   INTEGER NOT NULL DEFAULT 0,
            position    INTEGER NOT NULL DEFAULT 0,
            updated_at  TEXT NOT NULL,
            updated_by  TEXT NOT NULL DEFAULT 'user',   -- 'user' | 'agent'
            version     INTEGER NOT NULL DEFAULT 1,     -- bumped on every write: lost-update detection
            UNIQUE (agent_id, label)
        );

        CREATE TABLE messages (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            created_at  TEXT NOT NULL,               -- ISO 8601, UTC
            role        TEXT NOT NULL,               -- 'user' | 'assistant'
            kind        TEXT NOT NULL,               -- user_message, login, heartbeat, system_alert,
                                                     -- function_result, assistant_call
            author      TEXT,                        -- speaker name for imported conversations
            content     TEXT NOT NULL,               -- exactly what the model sees
            search_text TEXT NOT NULL DEFAULT '',    -- what recall search matches (no JSON noise)
            function_name TEXT,
            step_id     INTEGER                      -- groups an assistant call with its result
        );
        CREATE INDEX messages_agent_id ON messages(agent_id, id);
        CREATE INDEX messages_agent_time ON messages(agent_id, created_at);

        CREATE VIRTUAL TABLE messages_fts USING fts5(
            search_text, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, search_text) VALUES (new.id, new.search_text);
        END;
        CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
        END;
        CREATE TRIGGER messages_au AFTER UPDATE OF search_text ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
            INSERT INTO messages_fts(rowid, search_text) VALUES (new.id, new.search_text);
        END;

        CREATE TABLE documents (
            id           INTEGER PRIMARY KEY,
            agent_id     INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            path         TEXT NOT NULL,
            title        TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            size_bytes   INTEGER NOT NULL,
            mime         TEXT NOT NULL DEFAULT '',
            status       TEXT NOT NULL DEFAULT 'pending',  -- pending, reading, embedding, done, failed
            error        TEXT,
            chunk_count  INTEGER NOT NULL DEFAULT 0,
            created_at   TEXT NOT NULL,
            updated_at   TEXT NOT NULL,
            UNIQUE (agent_id, path)
        );

        CREATE TABLE passages (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            text        TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            tags        TEXT NOT NULL DEFAULT '[]',   -- JSON list
            document_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
            chunk_index INTEGER,
            page        INTEGER,
            section     TEXT,
            char_start  INTEGER,
            char_end    INTEGER,
            embedded    INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX passages_agent ON passages(agent_id, id);
        CREATE INDEX passages_document ON passages(document_id, chunk_index);

        CREATE VIRTUAL TABLE passages_fts USING fts5(
            text, content='passages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
            INSERT INTO passages_fts(rowid, text) VALUES (new.id, new.text);
        END;
        CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
            INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END;
        CREATE TRIGGER passages_au AFTER UPDATE OF text ON passages BEGIN
            INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO passages_fts(rowid, text) VALUES (new.id, new.text);
        END;

        -- Which embedding model made the vectors, so a store is never mixed (see archival.py).
        CREATE TABLE embedding_space (
            id        INTEGER PRIMARY KEY CHECK (id = 1),
            model_id  TEXT NOT NULL,
            dimension INTEGER NOT NULL
        );
        """
    )
