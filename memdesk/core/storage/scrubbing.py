"""Making deleted text leave the file, not only the rows.

Every connection runs with ``secure_delete`` (database.py), so SQLite overwrites a deleted row's
bytes and the pages it frees. Two copies survive that: an FTS5 index keeps a deleted row's terms in
its older segments until they are merged (``'optimize'``), and the WAL keeps the pages as they were
written until a TRUNCATE checkpoint empties it. ``scrub_deleted`` takes care of both, on every
full-text table the store has (read from its schema, so a new one is not forgotten).
"""

from __future__ import annotations

from memdesk.core.storage.database import Database


def fts5_tables(db: Database) -> list[str]:
    """The store's FTS5 tables (not their shadow tables)."""
    rows = db.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' "
        "AND lower(sql) LIKE '%using fts5%' ORDER BY name"
    )
    return [row[0] for row in rows]


def merge_fts_segments(db: Database) -> None:
    for table in fts5_tables(db):
        quoted = '"' + table.replace('"', '""') + '"'
        db.execute(f"INSERT INTO {quoted}({quoted}) VALUES ('optimize')")


def empty_wal(db: Database) -> bool:
    """Move the WAL into the file and truncate it; False when another connection's read kept it."""
    row = db.query_one("PRAGMA wal_checkpoint(TRUNCATE)")
    return row is None or int(row[0]) == 0


def scrub_deleted(db: Database) -> bool:
    """After rows were deleted (outside any transaction): their text leaves the full-text index and
    the WAL. Returns whether the WAL was emptied."""
    previous = db.scalar("PRAGMA secure_delete")
    db.execute("PRAGMA secure_delete = ON")
    try:
        merge_fts_segments(db)
    finally:
        db.execute(f"PRAGMA secure_delete = {int(previous or 0)}")
    return empty_wal(db)
