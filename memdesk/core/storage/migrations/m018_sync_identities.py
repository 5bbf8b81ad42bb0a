"""Migration 018: sync identities."""

from __future__ import annotations

#: The rows another device may hold too get an id that is the same everywhere: 12 hex digits of
#: milliseconds (so ids sort by creation, as ULIDs do) and 80 random bits. Integer ids stay the
#: local references; the stable id is what a change file names.
SYNCED_ROWS = ("agents", "messages", "passages", "documents", "graph_facts")

_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"


def uid_expression(created_at: str | None = None) -> str:
    """SQL giving a new stable id; from ``created_at`` (a column) when rows already have a date."""
    when = _NOW_MS
    if created_at is not None:
        when = f"COALESCE(CAST((julianday({created_at}) - 2440587.5) * 86400000 AS INTEGER), {_NOW_MS})"
    return f"printf('%012x', {when}) || lower(hex(randomblob(10)))"


#: Capture only while this device syncs and is not itself applying another device's changes: a
#: store that never syncs pays one indexed read per write, and applied changes are not echoed.
CAPTURING = "(SELECT capturing FROM sync_device WHERE id = 1) = 1 AND NOT EXISTS (SELECT 1 FROM sync_applying)"


def _outbox(name: str, event: str, table: str, key: str, op: str, when: str = "") -> str:
    extra = f" AND {when}" if when else ""
    return f"""CREATE TRIGGER {name} AFTER {event} ON {table} WHEN {CAPTURING}{extra} BEGIN
            INSERT INTO sync_outbox(kind, key, op) VALUES ('{table}', {key}, '{op}');
        END;
        """


_BLOCK_KEY = "(SELECT uid FROM agents WHERE id = {row}.agent_id) || '/' || {row}.label"


def migrate(db) -> None:
    """Stable ids and the bookkeeping of sync (memdesk.core.sync): each device writes its own
    numbered change files into a folder the user picks and applies the others'. The change files
    are built from ``sync_outbox``, which triggers fill for every connection and every cascade
    (a session extension would record only the connection it is attached to, and the store has
    one per writing thread); the rest is this device's own state and never travels."""
    parts = []
    for table in SYNCED_ROWS:
        parts.append(f"ALTER TABLE {table} ADD COLUMN uid TEXT;")
        parts.append(f"UPDATE {table} SET uid = {uid_expression('created_at')};")
        parts.append(f"CREATE UNIQUE INDEX {table}_uid ON {table}(uid);")
        parts.append(
            f"""CREATE TRIGGER {table}_uid_ai AFTER INSERT ON {table} WHEN new.uid IS NULL BEGIN
            UPDATE {table} SET uid = {uid_expression()} WHERE rowid = new.rowid;
        END;"""
        )
    db.run_script("\n".join(parts))
    db.run_script(
        """
        -- This device: its id, name and keys, the folder, its hybrid logical clock and next file.
        CREATE TABLE sync_device (
            id          INTEGER PRIMARY KEY CHECK (id = 1),
            device_id   TEXT NOT NULL,
            name        TEXT NOT NULL,
            folder      TEXT NOT NULL,
            group_id    TEXT NOT NULL,
            group_key   BLOB NOT NULL,               -- the key every paired device shares
            signing_key BLOB NOT NULL,               -- this device's Ed25519 private key
            capturing   INTEGER NOT NULL DEFAULT 1,
            hlc         INTEGER NOT NULL DEFAULT 0,  -- milliseconds << 16 | counter
            next_seq    INTEGER NOT NULL DEFAULT 1,
            joined_at   TEXT NOT NULL
        );
        -- A row here while another device's changes are applied: the capture triggers stay quiet.
        CREATE TABLE sync_applying (flag INTEGER PRIMARY KEY);
        CREATE TABLE sync_outbox (
            seq  INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            key  TEXT NOT NULL,
            op   TEXT NOT NULL                       -- 'i' insert, 'u' update, 'd' delete, 'f' forget
        );
        -- Terms to forget, held only until the change file that carries them is written. Sync's
        -- own bookkeeping, not the agent's memory (``agent`` is not an owner's ``agent_id``): a
        -- forget that runs before the file is written must not take the term out of it.
        CREATE TABLE sync_forget_out (
            seq   INTEGER PRIMARY KEY,
            agent INTEGER NOT NULL,
            text  TEXT NOT NULL
        );
        -- A change file taken from the outbox but maybe not yet written: written again after a crash.
        CREATE TABLE sync_pending_file (
            seq     INTEGER PRIMARY KEY,
            payload BLOB NOT NULL
        );
        CREATE TABLE sync_peers (
            device_id   TEXT PRIMARY KEY,
            name        TEXT NOT NULL DEFAULT '',
            public_key  BLOB NOT NULL,
            applied_seq INTEGER NOT NULL DEFAULT 0,
            last_sync   TEXT,
            revoked     INTEGER NOT NULL DEFAULT 0,
            problem     TEXT NOT NULL DEFAULT ''     -- why its next file waits (a newer schema...)
        );
        -- Every refused file, for `memdesk sync status` and File > Devices.
        CREATE TABLE sync_problems (
            id        INTEGER PRIMARY KEY,
            device_id TEXT NOT NULL,
            file      TEXT NOT NULL,
            problem   TEXT NOT NULL,
            at        TEXT NOT NULL,
            UNIQUE (device_id, file, problem)
        );
        -- Core memory blocks as versions with parents (a block's history as a graph): every device
        -- that holds the same versions computes the same text, whatever order they came in.
        CREATE TABLE sync_block_versions (
            edit_id   TEXT PRIMARY KEY,              -- hlc (16 hex) '-' device id
            agent_id  INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            label     TEXT NOT NULL,
            parents   TEXT NOT NULL,                 -- JSON list of edit ids
            value     TEXT,                          -- NULL: the block was deleted
            meta      TEXT NOT NULL,                 -- JSON: limit, description, read_only
            head      INTEGER NOT NULL DEFAULT 1     -- no other version names it as a parent
        );
        CREATE INDEX sync_block_versions_heads ON sync_block_versions(agent_id, label, head);
        CREATE INDEX sync_block_versions_order ON sync_block_versions(agent_id, label, edit_id);
        CREATE TABLE sync_conflicts (
            id          INTEGER PRIMARY KEY,
            agent_id    INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            label       TEXT NOT NULL,
            reason      TEXT NOT NULL,               -- 'both changed the same lines' | 'over the limit'
            ours        TEXT NOT NULL,
            theirs      TEXT NOT NULL,
            merged      TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            resolved_at TEXT
        );
        -- Forgotten terms as keyed digests of their words: a late change that mentions one is
        -- forgotten again on arrival, and the store never holds the term itself.
        CREATE TABLE sync_tombstones (
            digest    TEXT PRIMARY KEY,
            words     INTEGER NOT NULL,
            agent_uid TEXT NOT NULL
        );
        -- An agent both devices created under one name is one agent: the smaller id wins, and
        -- changes naming the other id are read as naming it.
        CREATE TABLE sync_aliases (
            uid    TEXT PRIMARY KEY,
            target TEXT NOT NULL
        );
        -- The clock of the last change applied to a row that can be edited (last writer wins), and
        -- rows deleted for good (a delete wins over an edit or an insert that arrives after it).
        CREATE TABLE sync_row_clock (
            uid     TEXT PRIMARY KEY,
            hlc     INTEGER NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0
        );
        -- Incoming forgets run after their file's transaction; kept here until they have.
        CREATE TABLE sync_forget_in (
            id    INTEGER PRIMARY KEY,
            agent INTEGER NOT NULL,
            text  TEXT NOT NULL
        );
        """
    )
    uid = "new.uid"
    db.run_script(
        _outbox("agents_sync_ai", "INSERT", "agents", uid, "i", "new.uid IS NOT NULL")
        + _outbox("agents_sync_au", "UPDATE OF name, system_prompt, uid", "agents", uid, "u")
        + _outbox("memory_blocks_sync_ai", "INSERT", "memory_blocks", _BLOCK_KEY.format(row="new"), "u")
        + _outbox(
            "memory_blocks_sync_au",
            "UPDATE OF value, char_limit, description, read_only",
            "memory_blocks",
            _BLOCK_KEY.format(row="new"),
            "u",
        )
        + _outbox(
            "memory_blocks_sync_ad",
            "DELETE",
            "memory_blocks",
            _BLOCK_KEY.format(row="old"),
            "d",
            "EXISTS (SELECT 1 FROM agents WHERE id = old.agent_id)",
        )
        # The uid trigger fills a new row's id in an UPDATE right after the INSERT: capture that.
        + _outbox("messages_sync_au", "UPDATE OF uid", "messages", uid, "i", "old.uid IS NULL")
        + _outbox("messages_sync_ai", "INSERT", "messages", uid, "i", "new.uid IS NOT NULL")
        + _outbox("passages_sync_au_uid", "UPDATE OF uid", "passages", uid, "i", "old.uid IS NULL")
        + _outbox("passages_sync_ai", "INSERT", "passages", uid, "i", "new.uid IS NOT NULL")
        + _outbox("passages_sync_au", "UPDATE OF text, tags", "passages", uid, "u")
        + _outbox("passages_sync_ad", "DELETE", "passages", "old.uid", "d")
        + _outbox("documents_sync_au_uid", "UPDATE OF uid", "documents", uid, "i", "old.uid IS NULL")
        + _outbox("documents_sync_au", "UPDATE OF title, status, chunk_count", "documents", uid, "u")
    )
