"""Migration 003: consolidation."""

from __future__ import annotations


def migrate(db) -> None:
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
