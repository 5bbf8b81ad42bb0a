"""Migration 019: imported conversations."""

from __future__ import annotations

from memdesk.core.storage.migrations.m018_sync_identities import _outbox


def migrate(db) -> None:
    """Conversations brought in from other assistants (ChatGPT, Claude, Open WebUI, transcripts).

    Their messages live in ``messages`` like any other, so every search finds them, but marked
    with the conversation they belong to (``conversation_id``): the agent's own chat is the rows
    where it is NULL, and the context window, the transcript and the reply rules read only those.
    ``external_id`` is the message's id in the export, so importing it again adds nothing and a
    newer export adds only what is new. ``imported_at`` is when the message came into MemDesk:
    retention counts an imported message's days from then, not from its original date, so years
    of history imported under a short retention setting are not forgotten at the next idle moment,
    before anything could be learned from them. ``history_imports`` keeps an import's progress in the
    store, so a stopped or killed import resumes where it stopped; ``learned_proposals`` holds
    what the background work proposes core memory should say about the person, with the messages
    it came from, until the person accepts, edits or rejects it."""
    db.run_script(
        """
        CREATE TABLE history_imports (
            id                  INTEGER PRIMARY KEY,
            agent_id            INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            path                TEXT NOT NULL,
            fingerprint         TEXT NOT NULL,            -- size and hashes of the file's ends
            format              TEXT NOT NULL,
            selection           TEXT NOT NULL DEFAULT '{}',  -- JSON: the dates and titles chosen
            status              TEXT NOT NULL,            -- running, stopped, done
            conversations_total INTEGER NOT NULL DEFAULT 0,
            messages_total      INTEGER NOT NULL DEFAULT 0,
            conversations_done  INTEGER NOT NULL DEFAULT 0,
            messages_done       INTEGER NOT NULL DEFAULT 0,
            conversations_added INTEGER NOT NULL DEFAULT 0,
            messages_added      INTEGER NOT NULL DEFAULT 0,
            skipped             TEXT NOT NULL DEFAULT '[]',  -- JSON: [what, reason]
            seconds             REAL NOT NULL DEFAULT 0,
            started_at          TEXT NOT NULL,
            updated_at          TEXT NOT NULL,
            finished_at         TEXT
        );
        CREATE INDEX history_imports_agent ON history_imports(agent_id, status);

        CREATE TABLE imported_conversations (
            id            INTEGER PRIMARY KEY,
            agent_id      INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            source        TEXT NOT NULL,                  -- chatgpt, claude, open-webui, transcript
            external_id   TEXT NOT NULL,
            title         TEXT NOT NULL DEFAULT '',
            assistant     TEXT NOT NULL DEFAULT '',       -- the other assistant's name
            started_at    TEXT,
            updated_at    TEXT,
            message_count INTEGER NOT NULL DEFAULT 0,
            skipped       TEXT NOT NULL DEFAULT '[]',     -- JSON: [what, reason] within it
            import_id     INTEGER REFERENCES history_imports(id) ON DELETE SET NULL,
            created_at    TEXT NOT NULL,
            UNIQUE (agent_id, source, external_id)
        );

        ALTER TABLE messages ADD COLUMN conversation_id INTEGER REFERENCES imported_conversations(id);
        ALTER TABLE messages ADD COLUMN external_id TEXT;
        ALTER TABLE messages ADD COLUMN imported_at TEXT;
        CREATE INDEX messages_imported ON messages(conversation_id, external_id) WHERE conversation_id IS NOT NULL;

        CREATE TABLE learned_proposals (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            kind        TEXT NOT NULL,                    -- name, place, people, work, preference, fact
            label       TEXT NOT NULL,                    -- the core memory block it would go to
            text        TEXT NOT NULL,
            key         TEXT NOT NULL,                    -- what it is about: a newer version replaces it
            valid_from  TEXT,
            sources     TEXT NOT NULL DEFAULT '[]',       -- JSON: message ids
            status      TEXT NOT NULL DEFAULT 'pending',  -- pending, accepted, rejected, superseded
            change_id   INTEGER,                          -- the memory history entry of an accepted one
            created_at  TEXT NOT NULL,
            decided_at  TEXT,
            UNIQUE (agent_id, text)
        );
        CREATE INDEX learned_proposals_agent ON learned_proposals(agent_id, status);
        """
    )
    # Sync (m018) sends every new message to the other devices. An imported conversation's messages
    # stay on the device that imported them: their conversation, export ids and import time belong to
    # this device's import (a message without them would land in the other device's own chat).
    own_chat = "new.conversation_id IS NULL"
    db.run_script(
        "DROP TRIGGER messages_sync_au;\nDROP TRIGGER messages_sync_ai;\n"
        + _outbox("messages_sync_au", "UPDATE OF uid", "messages", "new.uid", "i", f"old.uid IS NULL AND {own_chat}")
        + _outbox("messages_sync_ai", "INSERT", "messages", "new.uid", "i", f"new.uid IS NOT NULL AND {own_chat}")
    )
