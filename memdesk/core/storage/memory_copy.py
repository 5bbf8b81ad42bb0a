"""A copy of the whole store in memory, for a private chat: every write path works unchanged on it,
and none of them can reach the file.

A plain store is copied page by page with SQLite's online backup API. SQLCipher refuses a backup
between an encrypted store and a plain target, so an encrypted one is attached to the in-memory
connection with its key and exported with ``sqlcipher_export``; the export writes the schema rows
of virtual tables (full-text and vector indexes) directly, so the connection re-reads its schema
afterwards, and it leaves ``user_version`` (the schema version) behind, so that is copied too.
"""

from __future__ import annotations

from memdesk.core.storage.database import Database, open_database

_SAVED = "memdesk_saved"


def copy_to_memory(db: Database) -> Database:
    """A new connection to an in-memory database holding what ``db`` holds now (committed rows).
    The copy lives as long as that connection: closing it discards everything written to it."""
    # Given the key, the in-memory database runs on SQLCipher (never encrypted itself), which can
    # attach the encrypted store and export it.
    copy = open_database(":memory:", migrate=False, key=db.key)
    try:
        if db.key is None:
            db.copy_into(copy)
        else:
            _export_encrypted(db, copy)
    except BaseException:
        copy.close()
        raise
    return copy


def _export_encrypted(db: Database, copy: Database) -> None:
    version = db.schema_version
    # The export creates every table itself, the bookkeeping one that opening made included.
    copy.execute("DROP TABLE IF EXISTS schema_migrations")
    # Tables are filled in schema order, which is not the order of their references (a rebuilt
    # table comes last): the copy is of a consistent store, so nothing is checked meanwhile.
    copy.execute("PRAGMA foreign_keys = OFF")
    copy.execute(f"ATTACH DATABASE ? AS {_SAVED} KEY ?", (str(db.path), db.key))
    try:
        copy.query(f"SELECT sqlcipher_export('main', '{_SAVED}')")
    finally:
        copy.execute(f"DETACH DATABASE {_SAVED}")
        copy.execute("PRAGMA foreign_keys = ON")
    copy.execute("PRAGMA writable_schema = RESET")
    copy.execute(f"PRAGMA user_version = {int(version)}")
