"""Migration 005: memory history."""

from __future__ import annotations


def migrate(db) -> None:
    """Every change to what an agent remembers, with its source and cause (memdesk.core.memory.history),
    and the tools an imported agent file brought along, kept disabled until the user allows them."""
    db.run_script(
        """
        CREATE TABLE memory_history (
            id           INTEGER PRIMARY KEY,
            agent_id     INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            target_kind  TEXT NOT NULL,              -- block | passage | graph_fact | graph_entity | ...
            target_id    INTEGER,                    -- the row changed (its id may be gone after a delete)
            target_label TEXT NOT NULL DEFAULT '',   -- a block's label; a passage's or fact's short name
            action       TEXT NOT NULL,              -- create | update | delete | configure
            before       TEXT,                       -- NULL when created
            after        TEXT,                       -- NULL when deleted
            before_meta  TEXT,                       -- JSON: limit, read_only, tags, citation...
            after_meta   TEXT,
            source       TEXT NOT NULL,              -- agent | user | import | consolidation | extractor
            created_at   TEXT NOT NULL,
            message_id   INTEGER,                    -- the message (event) the step answered
            step_id      INTEGER,                    -- the assistant call that made the change
            document_id  INTEGER,
            reverts      INTEGER,                    -- the change this one undid
            note         TEXT NOT NULL DEFAULT ''    -- the tool, file or reason, for people
        );
        CREATE INDEX memory_history_agent ON memory_history(agent_id, id);
        CREATE INDEX memory_history_target ON memory_history(agent_id, target_kind, target_id, id);
        CREATE INDEX memory_history_label ON memory_history(agent_id, target_kind, target_label, id);
        CREATE INDEX memory_history_kind ON memory_history(agent_id, target_kind, id);

        CREATE TABLE imported_tools (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            name        TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            source_code TEXT NOT NULL DEFAULT '',
            json_schema TEXT NOT NULL DEFAULT '{}',   -- JSON
            origin      TEXT NOT NULL,                -- e.g. 'letta'
            original    TEXT NOT NULL DEFAULT '{}',   -- JSON: the tool as the file had it, for re-export
            enabled     INTEGER NOT NULL DEFAULT 0,   -- never run until the user allows it
            created_at  TEXT NOT NULL,
            UNIQUE (agent_id, name)
        );

        -- What an imported agent file held that MemDesk does not use (a Letta agent's LLM config,
        -- tool rules, tags...), kept so exporting the agent again gives them back.
        CREATE TABLE agent_file_extras (
            agent_id INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            format   TEXT NOT NULL,                   -- 'letta'
            data     TEXT NOT NULL                    -- JSON
        );
        """
    )
