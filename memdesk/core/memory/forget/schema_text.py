"""Where an agent's text is: found by walking the store's schema, not from a list of places.

Every table the agent owns (``agents`` itself, every table with an ``agent_id``, and a table
whose foreign key points at one of those) and every column in it that can hold text is searched,
so a column a migration adds is searched the day it exists. Left out are the columns that hold
MemDesk's own words (``VOCABULARY``: kinds, states, dates, digests, function names, the agent's
name, the stable ids sync gives rows): forgetting "user" must not rewrite ``messages.role``. The
index tables of virtual tables (FTS5, vec0) follow their owners and are merged and vacuumed by the
scrub.

Tables of the store as a whole (``SHARED``) belong to no agent; a test holds every table with
text to being one or the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from memdesk.core.storage import Database

#: Per table, the columns that hold MemDesk's own words, never anybody's.
VOCABULARY: dict[str, frozenset[str]] = {
    table: frozenset(columns.split())
    for table, columns in {
        "agents": "name created_at last_login heartbeats_paused_until uid",
        "agent_file_extras": "format",
        "consolidation_changes": "function status created_at decided_at",
        "consolidation_runs": "mode status started_at finished_at",
        "documents": "content_hash mime status created_at updated_at uid",
        "graph_entities": "kind author created_at",
        "graph_facts": "valid_from valid_to author created_at uid",
        "graph_mentions": "at",
        "graph_progress": "source_kind",
        "graph_queue": "source_kind stage not_before",
        "history_imports": "fingerprint format status started_at updated_at finished_at",
        "imported_conversations": "source started_at updated_at created_at",
        "imported_tools": "origin created_at",
        "learned_proposals": "kind valid_from sources status created_at decided_at",
        # MCP (issue 30): a pending write's arguments and reason are walked; the rest is MemDesk's
        # (the log keeps counts and refs only, a server's entry its command and its tools' schemas)
        "mcp_access_log": "at app_name operation access summary",
        "mcp_approvals": "app_name operation status created_at decided_at outcome",
        "mcp_servers": "name transport command url origin tools created_at",
        "memory_blocks": "updated_at updated_by",
        "memory_history": "target_kind action source created_at",
        "messages": "created_at role kind function_name uid external_id imported_at",
        "passages": "created_at uid",
        "recall_shown": "source ref at",
        "row_changes": "kind",
        "stopped_replies": "stopped_at",
        "sync_block_versions": "edit_id parents meta",
        "sync_conflicts": "reason created_at resolved_at",
        "vector_blocks": "kind",
        "vector_counts": "kind",
        "vector_generation": "kind",
    }.items()
}
#: Tables of the store as a whole: no agent owns their rows.
SHARED = frozenset({"settings", "schema_migrations", "embedding_space", "sqlite_sequence", "mcp_apps"}) | frozenset(
    # Sync's bookkeeping (memdesk.core.sync): this device, the others, ids, clocks, digests, and a
    # forgotten term only until the change file that carries it to the other devices is written.
    {
        "sync_device",
        "sync_outbox",
        "sync_forget_out",
        "sync_forget_in",
        "sync_peers",
        "sync_problems",
        "sync_aliases",
        "sync_row_clock",
        "sync_tombstones",
        "sync_group_keys",
    }
)


@dataclass(frozen=True)
class TextTable:
    """One table an agent owns rows of, with the columns searched."""

    name: str
    owner: str  # an SQL condition on the table's rows with one ``?``, the agent's id
    key: tuple[str, ...]  # what names one row: ("rowid",), or a WITHOUT ROWID table's primary key
    columns: tuple[str, ...]  # the columns that can hold anybody's words


def _holds_text(declared: str) -> bool:
    """SQLite's affinity rules: CHAR, CLOB or TEXT in the type, or no type at all (any value)."""
    declared = declared.upper()
    return not declared or any(word in declared for word in ("CHAR", "CLOB", "TEXT"))


def _schema(db: Database) -> dict[str, tuple[str, bool]]:
    """Every ordinary table (name -> (sql, without rowid)), without virtual tables' own tables."""
    rows = db.query("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    tables = {}
    for name, sql in rows:
        if name in virtual or any(name.startswith(f"{v}_") for v in virtual):
            continue
        tables[name] = (sql or "", "WITHOUT ROWID" in (sql or "").upper())
    return tables


def _owners(db: Database, tables: dict[str, tuple[str, bool]]) -> dict[str, str]:
    """The condition selecting one agent's rows of every table an agent owns."""
    owners: dict[str, str] = {}
    for name in tables:
        columns = {row[1] for row in db.query(f'PRAGMA table_info("{name}")')}
        if name == "agents":
            owners[name] = "id = ?"
        elif "agent_id" in columns:
            owners[name] = "agent_id = ?"
    changed = True
    while changed:  # rows owned through a foreign key to an owned table (stopped_replies -> messages)
        changed = False
        for name in tables:
            if name in owners:
                continue
            for key in db.query(f'PRAGMA foreign_key_list("{name}")'):
                parent, column, target = key[2], key[3], key[4] or "rowid"
                if parent in owners:
                    owners[name] = f'"{column}" IN (SELECT "{target}" FROM "{parent}" WHERE {owners[parent]})'
                    changed = True
                    break
    return owners


def text_columns(db: Database, table: str) -> tuple[str, ...]:
    """The columns of ``table`` that can hold text, in the table's order."""
    return tuple(row[1] for row in db.query(f'PRAGMA table_info("{table}")') if _holds_text(row[2] or ""))


def text_tables(db: Database) -> list[TextTable]:
    """Every table an agent owns rows of that has a column for anybody's words."""
    tables = _schema(db)
    found = []
    for name, owner in sorted(_owners(db, tables).items()):
        columns = tuple(c for c in text_columns(db, name) if c not in VOCABULARY.get(name, ()))
        if not columns:
            continue
        if tables[name][1]:
            key = tuple(
                row[1] for row in sorted(db.query(f'PRAGMA table_info("{name}")'), key=lambda r: r[5]) if row[5]
            )
        else:
            key = ("rowid",)
        found.append(TextTable(name, owner, key, columns))
    return found


def unowned_text_tables(db: Database) -> list[str]:
    """Tables with text that no agent owns and that are not the store's own (should be none)."""
    tables = _schema(db)
    owners = _owners(db, tables)
    return sorted(name for name in tables if name not in owners and name not in SHARED and text_columns(db, name))


def matching_rows(db: Database, table: TextTable, agent_id: int, match: str) -> Iterator[tuple[tuple, tuple[str, ...]]]:
    """(row key, the columns that match) of the agent's rows of ``table`` whose text matches;
    ``match`` is the SQL function of the phrases (matching.Phrases.register)."""
    keys = ", ".join(_quoted(k) for k in table.key)
    flags = ", ".join(f'{match}("{c}")' for c in table.columns)
    any_match = " OR ".join(f'{match}("{c}")' for c in table.columns)
    width = len(table.key)
    for row in db.query(
        f'SELECT {keys}, {flags} FROM "{table.name}" WHERE ({table.owner}) AND ({any_match})', (agent_id,)
    ):
        yield tuple(row[:width]), tuple(c for c, hit in zip(table.columns, row[width:], strict=True) if hit)


def _quoted(column: str) -> str:
    return column if column == "rowid" else f'"{column}"'


def where_key(table: TextTable) -> str:
    """The WHERE clause naming one row by its key (one ``?`` per key column)."""
    return " AND ".join(f"{_quoted(k)} = ?" for k in table.key)
