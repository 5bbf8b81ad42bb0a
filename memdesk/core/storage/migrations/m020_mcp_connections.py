"""Migration 020: MCP connections (issue 30)."""

from __future__ import annotations


def migrate(db) -> None:
    """What other programs may do with the memory through MCP, and what they did.

    ``mcp_apps``: each client program the user connected (Claude Desktop, Cursor...), known by the
    name it declares on stdio or by its bearer token on loopback HTTP (only the token's SHA-256 is
    kept); ``trusted`` apps write without waiting for approval; a revoked app is kept, so the log
    still names it. ``mcp_grants``: which agents an app sees, read-only unless ``can_write``.
    ``mcp_approvals``: writes from apps that are not trusted, waiting for the user (pending), then
    applied, rejected or failed, with the memory history's change once applied. ``mcp_access_log``:
    which app read or wrote what and when, in counts and ids (never memory's text, which a
    forget must be able to take back), pruned by the mcp_log_days setting. ``mcp_servers``: the
    other way round, MCP servers an agent may use the tools of (a stdio command or an HTTP URL),
    disabled until the user enables them, with the tools it offered then (``tools``: their names,
    descriptions and JSON schemas, so an agent opens without starting any server)."""
    db.run_script(
        """
        CREATE TABLE mcp_apps (
            id         INTEGER PRIMARY KEY,
            name       TEXT NOT NULL UNIQUE COLLATE NOCASE,
            token_hash TEXT UNIQUE,
            trusted    INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            last_seen  TEXT,
            revoked_at TEXT
        );
        CREATE TABLE mcp_grants (
            app_id    INTEGER NOT NULL REFERENCES mcp_apps(id) ON DELETE CASCADE,
            agent_id  INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            can_write INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (app_id, agent_id)
        ) WITHOUT ROWID;
        CREATE TABLE mcp_approvals (
            id         INTEGER PRIMARY KEY,
            app_id     INTEGER REFERENCES mcp_apps(id) ON DELETE SET NULL,
            app_name   TEXT NOT NULL,
            agent_id   INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            operation  TEXT NOT NULL,
            arguments  TEXT NOT NULL,
            reason     TEXT NOT NULL,
            status     TEXT NOT NULL DEFAULT 'pending',
            created_at TEXT NOT NULL,
            decided_at TEXT,
            outcome    TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX mcp_approvals_status ON mcp_approvals(status, id);
        CREATE TABLE mcp_access_log (
            id        INTEGER PRIMARY KEY,
            at        TEXT NOT NULL,
            app_id    INTEGER REFERENCES mcp_apps(id) ON DELETE SET NULL,
            app_name  TEXT NOT NULL,
            agent_id  INTEGER REFERENCES agents(id) ON DELETE SET NULL,
            operation TEXT NOT NULL,
            access    TEXT NOT NULL,
            summary   TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX mcp_access_log_at ON mcp_access_log(at);
        CREATE TABLE mcp_servers (
            id         INTEGER PRIMARY KEY,
            agent_id   INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            name       TEXT NOT NULL,
            transport  TEXT NOT NULL,
            command    TEXT NOT NULL DEFAULT '[]',
            url        TEXT NOT NULL DEFAULT '',
            enabled    INTEGER NOT NULL DEFAULT 0,
            origin     TEXT NOT NULL DEFAULT 'user',
            tools      TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            UNIQUE (agent_id, name)
        );
        """
    )
