"""The apps connected to memory over MCP, and what each may reach (OpenMemory's model).

An app is a client program (Claude Desktop, Cursor, a script). On stdio it is known by the name it
declares (or the ``--app`` its configuration passes); on loopback HTTP by its bearer token, of
which only the SHA-256 is stored. A stdio name is not a secret: any program of this user can
start ``memdesk mcp`` anyway, so names only keep apps apart, and HTTP, which other users and
web pages could reach, needs the token.

An app sees only the agents the user granted it, read-only unless the grant says it may write; a
write from an app that is not ``trusted`` waits for the user's approval (approvals.py). An app
seen for the first time is registered with no grant: it sees nothing until the user says so.
A revoked app keeps its row, so the access log still names it, and reaches nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import ConnectionRefused
from memdesk.core.storage import Database

#: Longest app name kept: a declared name is the client's to choose.
NAME_CHARS = 80
#: Token bytes (URL-safe base64 of 32 bytes: 43 characters).
TOKEN_BYTES = 32
TOKEN_PREFIX = "mdk_"


@dataclass(frozen=True)
class Grant:
    agent_id: int
    agent: str
    can_write: bool


@dataclass(frozen=True)
class App:
    id: int
    name: str
    trusted: bool
    created_at: datetime
    last_seen: datetime | None
    revoked_at: datetime | None
    has_token: bool

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


def clean_name(name: str) -> str:
    """An app's name as shown: printable, one line, bounded (it is the client's to choose)."""
    shown = "".join(c for c in " ".join(str(name).split()) if c.isprintable())
    return shown[:NAME_CHARS] or "unnamed app"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


_COLUMNS = "id, name, trusted, created_at, last_seen, revoked_at, token_hash IS NOT NULL"


def _app(row) -> App:
    return App(
        row[0],
        row[1],
        bool(row[2]),
        parse_iso(row[3]),
        parse_iso(row[4]) if row[4] else None,
        parse_iso(row[5]) if row[5] else None,
        bool(row[6]),
    )


class Apps:
    """Owns ``mcp_apps`` and ``mcp_grants``."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    # --- reading ---------------------------------------------------------------------------
    def all(self) -> list[App]:
        return [_app(r) for r in self._db.query(f"SELECT {_COLUMNS} FROM mcp_apps ORDER BY name")]

    def get(self, app_id: int) -> App | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM mcp_apps WHERE id = ?", (app_id,))
        return _app(row) if row else None

    def find(self, name: str) -> App | None:
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM mcp_apps WHERE name = ?", (clean_name(name),))
        return _app(row) if row else None

    def named(self, name: str) -> App:
        app = self.find(name)
        if app is None:
            known = ", ".join(a.name for a in self.all()) or "none yet"
            raise ConnectionRefused(
                f"No app named {name!r} is connected (apps: {known})",
                hint="connect one with: memdesk mcp config CLIENT",
            )
        return app

    def by_token(self, token: str) -> App | None:
        """The app holding ``token`` (None: no app does). Compared by hash, in SQL: the token
        itself is never stored."""
        if not token:
            return None
        row = self._db.query_one(f"SELECT {_COLUMNS} FROM mcp_apps WHERE token_hash = ?", (token_hash(token),))
        return _app(row) if row else None

    def grants(self, app_id: int) -> list[Grant]:
        rows = self._db.query(
            "SELECT g.agent_id, a.name, g.can_write FROM mcp_grants g JOIN agents a ON a.id = g.agent_id"
            " WHERE g.app_id = ? ORDER BY a.name",
            (app_id,),
        )
        return [Grant(r[0], r[1], bool(r[2])) for r in rows]

    # --- changing --------------------------------------------------------------------------
    def register(self, name: str) -> App:
        """The app of this name, added (with no grant) when it is new."""
        name = clean_name(name)
        with self._db.transaction():
            self._db.execute(
                "INSERT INTO mcp_apps(name, created_at) VALUES (?, ?) ON CONFLICT(name) DO NOTHING",
                (name, iso(self._clock.now())),
            )
        return self.named(name)

    def new_token(self, app_id: int) -> str:
        """A fresh bearer token for the app (the old one stops working); shown once, stored hashed."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        with self._db.transaction():
            self._db.execute(
                "UPDATE mcp_apps SET token_hash = ?, revoked_at = NULL WHERE id = ?", (token_hash(token), app_id)
            )
        return token

    def grant(self, app_id: int, agent_id: int, *, can_write: bool = False) -> None:
        with self._db.transaction():
            self._db.execute(
                "INSERT INTO mcp_grants(app_id, agent_id, can_write) VALUES (?, ?, ?)"
                " ON CONFLICT(app_id, agent_id) DO UPDATE SET can_write = excluded.can_write",
                (app_id, agent_id, int(can_write)),
            )
            self._db.execute("UPDATE mcp_apps SET revoked_at = NULL WHERE id = ?", (app_id,))

    def ungrant(self, app_id: int, agent_id: int) -> None:
        self._db.execute("DELETE FROM mcp_grants WHERE app_id = ? AND agent_id = ?", (app_id, agent_id))

    def set_trusted(self, app_id: int, trusted: bool) -> None:
        self._db.execute("UPDATE mcp_apps SET trusted = ? WHERE id = ?", (int(trusted), app_id))

    def revoke(self, app_id: int) -> None:
        """The app reaches nothing from now on: its grants, trust and token go; its row stays for the log."""
        with self._db.transaction():
            self._db.execute("DELETE FROM mcp_grants WHERE app_id = ?", (app_id,))
            self._db.execute(
                "UPDATE mcp_apps SET token_hash = NULL, trusted = 0, revoked_at = ? WHERE id = ?",
                (iso(self._clock.now()), app_id),
            )

    def touch(self, app_id: int) -> None:
        self._db.execute("UPDATE mcp_apps SET last_seen = ? WHERE id = ?", (iso(self._clock.now()), app_id))
