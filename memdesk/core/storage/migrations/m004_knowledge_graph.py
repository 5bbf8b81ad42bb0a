"""Migration 004: knowledge graph."""

from __future__ import annotations


def migrate(db) -> None:
    """Per-agent knowledge graph (memdesk.core.graph): entities with aliases, their mentions in
    messages and passages, and dated facts. A merged entity keeps its row (``merged_into``), so a
    merge can be undone; a contradicted fact is closed (``valid_to``), never deleted; user
    deletions are flags, so they can be undone and the extractor does not bring them back.
    ``graph_progress`` and ``graph_queue`` make extraction resumable: a source is queued and the
    watermark advanced in one transaction, and its results stored and its queue row removed in
    another, so a crash loses nothing and does nothing twice."""
    db.run_script(
        """
        CREATE TABLE graph_entities (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            name        TEXT NOT NULL,
            key         TEXT NOT NULL,                 -- normalised name: the lookup key
            kind        TEXT NOT NULL DEFAULT 'thing', -- person, place, org, concept, ...
            merged_into INTEGER REFERENCES graph_entities(id) ON DELETE SET NULL,
            author      TEXT NOT NULL DEFAULT 'extractor',
            created_at  TEXT NOT NULL,
            deleted     INTEGER NOT NULL DEFAULT 0,
            UNIQUE (agent_id, key)
        );
        CREATE INDEX graph_entities_merged ON graph_entities(merged_into);

        CREATE TABLE graph_mentions (
            id         INTEGER PRIMARY KEY,
            agent_id   INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            entity_id  INTEGER NOT NULL REFERENCES graph_entities(id) ON DELETE CASCADE,
            message_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
            passage_id INTEGER REFERENCES passages(id) ON DELETE CASCADE,
            at         TEXT NOT NULL,
            CHECK ((message_id IS NULL) <> (passage_id IS NULL))
        );
        CREATE INDEX graph_mentions_entity ON graph_mentions(entity_id, at);
        CREATE INDEX graph_mentions_message ON graph_mentions(message_id);
        CREATE INDEX graph_mentions_passage ON graph_mentions(passage_id);
        CREATE INDEX graph_mentions_agent ON graph_mentions(agent_id, at);

        CREATE TABLE graph_facts (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            subject_id  INTEGER NOT NULL REFERENCES graph_entities(id) ON DELETE CASCADE,
            relation    TEXT NOT NULL,
            object_id   INTEGER NOT NULL REFERENCES graph_entities(id) ON DELETE CASCADE,
            message_id  INTEGER REFERENCES messages(id) ON DELETE CASCADE,
            passage_id  INTEGER REFERENCES passages(id) ON DELETE CASCADE,
            valid_from  TEXT NOT NULL,
            valid_to    TEXT,                            -- NULL: still true
            author      TEXT NOT NULL CHECK (author IN ('extractor', 'agent', 'user')),
            created_at  TEXT NOT NULL,
            deleted     INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX graph_facts_subject ON graph_facts(subject_id);
        CREATE INDEX graph_facts_object ON graph_facts(object_id);
        CREATE INDEX graph_facts_message ON graph_facts(message_id);
        CREATE INDEX graph_facts_passage ON graph_facts(passage_id);

        CREATE TABLE graph_progress (
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            source_kind TEXT NOT NULL,                  -- 'message' | 'passage'
            last_id     INTEGER NOT NULL,
            PRIMARY KEY (agent_id, source_kind)
        ) WITHOUT ROWID;

        CREATE TABLE graph_queue (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            source_kind TEXT NOT NULL,
            source_id   INTEGER NOT NULL,
            stage       TEXT NOT NULL,                  -- 'entities' | 'facts'
            attempts    INTEGER NOT NULL DEFAULT 0,
            not_before  TEXT NOT NULL DEFAULT '',
            last_error  TEXT,
            UNIQUE (agent_id, source_kind, source_id, stage)
        );
        """
    )
