"""Migration 010: agent ids never reused."""

from __future__ import annotations

from memdesk.core.base.errors import StoreError

AGENT_COLUMNS = (
    "id, name, created_at, system_prompt, summary, context_start_id, evicted_count, pressure_alert_sent, last_login, "
    "heartbeats_paused_until, config, memory_view, recall_expired_before"
)


def migrate(db) -> None:
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
        INSERT INTO agents_rebuilt({AGENT_COLUMNS}) SELECT {AGENT_COLUMNS} FROM agents;
        DROP TABLE agents;
        ALTER TABLE agents_rebuilt RENAME TO agents;
        """
    )
    broken = db.query("PRAGMA foreign_key_check")
    if broken:
        raise StoreError(
            f"Rebuilding the agents table left {len(broken)} rows without their agent",
            hint="restore a snapshot: memdesk backup list, then memdesk backup restore ID",
        )


migrate.rebuilds_tables = True  # type: ignore[attr-defined]
