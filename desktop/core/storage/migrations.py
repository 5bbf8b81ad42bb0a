"""Schema migrations: an ordered list, each applied once in its own transaction and recorded.

Add a migration by appending a function to ``MIGRATIONS``; never edit one that has shipped.
A database whose recorded version is newer than ``len(MIGRATIONS)`` is refused.
"""

from __future__ import annotations

from typing import Callable

from desktop.errors import StoreError

Migration = Callable[["Database"], None]  # noqa: F821 - avoids an import cycle


def m001_initial(db) -> None:
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




def m002_retrieval_indexes(db) -> None:
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


def m003_consolidation(db) -> None:
    """Idle-time consolidation: its passes (the message range each read, so a crashed or
    cancelled pass resumes on the same range and the next one starts after the last finished)
    and every change a pass made or proposed (applied, or waiting for the user in "ask" mode)."""
    db.run_script(
        """
        CREATE TABLE consolidation_runs (
            id               INTEGER PRIMARY KEY,
            agent_id         INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            first_message_id INTEGER NOT NULL,
            last_message_id  INTEGER NOT NULL,   -- the watermark once the run is done
            mode             TEXT NOT NULL,      -- 'apply' | 'ask'
            status           TEXT NOT NULL,      -- 'running' | 'done'
            steps            INTEGER NOT NULL DEFAULT 0,
            started_at       TEXT NOT NULL,
            finished_at      TEXT
        );
        CREATE INDEX consolidation_runs_agent ON consolidation_runs(agent_id, status, last_message_id);

        CREATE TABLE consolidation_changes (
            id         INTEGER PRIMARY KEY,
            run_id     INTEGER NOT NULL REFERENCES consolidation_runs(id) ON DELETE CASCADE,
            agent_id   INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            function   TEXT NOT NULL,
            arguments  TEXT NOT NULL,            -- JSON
            thoughts   TEXT NOT NULL DEFAULT '',
            status     TEXT NOT NULL,            -- applied, failed, pending, accepted, rejected
            result     TEXT NOT NULL DEFAULT '', -- what the function returned, or why it failed
            created_at TEXT NOT NULL,
            decided_at TEXT
        );
        CREATE INDEX consolidation_changes_run ON consolidation_changes(run_id, id);
        CREATE INDEX consolidation_changes_status ON consolidation_changes(agent_id, status);
        """
    )


def m004_knowledge_graph(db) -> None:
    """Per-agent knowledge graph (desktop.core.graph): entities with aliases, their mentions in
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


def m005_memory_history(db) -> None:
    """Every change to what an agent remembers, with its source and cause (desktop.core.memory.history),
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


def m006_memory_view(db) -> None:
    """The memory section as the model last saw it (agent/memory_view.py): rendered once and kept
    stable, so a memory edit does not make the runtime re-evaluate the whole conversation."""
    db.run_script("ALTER TABLE agents ADD COLUMN memory_view TEXT NOT NULL DEFAULT '';")


def m007_recall_shown(db) -> None:
    """Which memories each automatic-recall event showed the model (agent/auto_recall.py): what a
    reply had in front of it, and what not to show again while the event is in context."""
    db.run_script(
        """
        CREATE TABLE recall_shown (
            id        INTEGER PRIMARY KEY,
            agent_id  INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            event_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,  -- the memories event
            position  INTEGER NOT NULL,
            source    TEXT NOT NULL,              -- conversation | archival | ...
            ref       TEXT NOT NULL,              -- message:ID | passage:ID | ...
            at        TEXT,                       -- the memory's own date
            place     TEXT NOT NULL DEFAULT '',   -- who said it, or the document
            text      TEXT NOT NULL
        );
        CREATE INDEX recall_shown_event ON recall_shown(agent_id, event_id);
        """
    )


def m008_recall_expired(db) -> None:
    """Automatic-recall events older than this message id are shown to the model as a one-line stub
    (agent/auto_recall.py, ``expire``): set at an eviction, when the cache below the memory section
    is evaluated again anyway, so old sections stop crowding the window without changing the
    prompt between evictions."""
    db.run_script("ALTER TABLE agents ADD COLUMN recall_expired_before INTEGER NOT NULL DEFAULT 0;")


def m009_stemmed_search(db) -> None:
    """Full-text search matches word forms ("research" finds "researching", "camped" finds
    "camping"): both indexes are rebuilt with the Porter stemmer over the same tokenizer. On LoCoMo
    (``memdesk eval locomo --mode context``) it put the evidence in the prompt for about 3 points
    more of the questions. The triggers name the tables, so they keep feeding the new ones."""
    db.run_script(
        """
        DROP TABLE messages_fts;
        CREATE VIRTUAL TABLE messages_fts USING fts5(
            search_text, content='messages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
        DROP TABLE passages_fts;
        CREATE VIRTUAL TABLE passages_fts USING fts5(
            text, content='passages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO passages_fts(passages_fts) VALUES ('rebuild');
        """
    )


_AGENT_COLUMNS = (
    "id, name, created_at, system_prompt, summary, context_start_id, evicted_count, pressure_alert_sent, last_login, "
    "heartbeats_paused_until, config, memory_view, recall_expired_before"
)


def m010_agent_ids_never_reused(db) -> None:
    """An agent's id is never given to another agent: without AUTOINCREMENT SQLite gives the newest
    deleted agent's id to the next one, which then inherited what is keyed by the id outside the
    store ("Always allow" answers, its files folder). SQLite cannot add AUTOINCREMENT to a table,
    so the table is rebuilt, the documented way: foreign keys off (``rebuilds_tables``, or dropping
    the old table would cascade to every row referencing it), copy, drop, rename, check."""
    db.run_script(
        f"""
        CREATE TABLE agents_rebuilt (
            id                     INTEGER PRIMARY KEY AUTOINCREMENT,
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
            config                 TEXT NOT NULL DEFAULT '{{}}',  -- JSON: per-agent options
            memory_view            TEXT NOT NULL DEFAULT '',
            recall_expired_before  INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO agents_rebuilt({_AGENT_COLUMNS}) SELECT {_AGENT_COLUMNS} FROM agents;
        DROP TABLE agents;
        ALTER TABLE agents_rebuilt RENAME TO agents;
        """
    )
    broken = db.query("PRAGMA foreign_key_check")
    if broken:
        raise StoreError(f"Rebuilding the agents table left {len(broken)} rows without their agent", hint="restore a snapshot: memdesk backup list, then memdesk backup restore ID")


m010_agent_ids_never_reused.rebuilds_tables = True  # type: ignore[attr-defined]


def m011_imported_document_paths(db) -> None:
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


#: The default persona every agent got before it was written from the agent's name.
_OLD_DEFAULT_PERSONA = (
    "My name is Sam. I am a warm, curious and attentive companion.\n"
    "I remember what people tell me and bring it up naturally later.\n"
    "I keep my replies short, friendly and honest."
)


def m012_app_written_blocks(db) -> None:
    """A new agent's default persona and empty human block were recorded as created by the user,
    who never wrote them: the history said "created by you". Those creations (the exact default
    text, source 'user') now name the app, and so does the block itself while nobody changed it."""
    db.execute(
        "UPDATE memory_history SET source = 'app' WHERE source = 'user' AND target_kind = 'block' AND action = 'create'"
        " AND ((target_label = 'persona' AND after = ?) OR (target_label = 'human' AND COALESCE(after, '') = ''))",
        (_OLD_DEFAULT_PERSONA,),
    )
    db.execute(
        "UPDATE memory_blocks SET updated_by = 'app' WHERE updated_by = 'user' AND EXISTS ("
        " SELECT 1 FROM memory_history h WHERE h.target_kind = 'block' AND h.target_id = memory_blocks.id AND h.source = 'app')"
        " AND NOT EXISTS (SELECT 1 FROM memory_history h WHERE h.target_kind = 'block' AND h.target_id = memory_blocks.id"
        " AND h.action != 'create')"
    )


def _vector_count_triggers(table: str) -> str:
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


def m013_vector_search_form(db) -> None:
    """The vectors' search form beside vec0 (see desktop.core.retrieval.vector_codes): sign bits in
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
        + _vector_count_triggers("passages")
        + _vector_count_triggers("messages")
    )


def _row_change_triggers(table: str, edited: str) -> str:
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


def m014_row_changes(db) -> None:
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
        + _row_change_triggers("passages", "text, agent_id")
        + _row_change_triggers("messages", "search_text, author, role, created_at, agent_id")
    )


def m015_graph_mention_changes(db) -> None:
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


def m016_stopped_replies(db) -> None:
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


def m017_graph_user_names(db) -> None:
    """The user's name as each agent's knowledge graph last took it from the ``user_name`` setting
    (desktop.core.graph.the_user). The graph follows a name set or changed later once, not at every
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


MIGRATIONS: list[Migration] = [
    m001_initial,
    m002_retrieval_indexes,
    m003_consolidation,
    m004_knowledge_graph,
    m005_memory_history,
    m006_memory_view,
    m007_recall_shown,
    m008_recall_expired,
    m009_stemmed_search,
    m010_agent_ids_never_reused,
    m011_imported_document_paths,
    m012_app_written_blocks,
    m013_vector_search_form,
    m014_row_changes,
    m015_graph_mention_changes,
    m016_stopped_replies,
    m017_graph_user_names,
]
