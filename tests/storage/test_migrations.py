"""The store: a fresh file gets every migration; an old file is upgraded; a newer file is refused."""

from __future__ import annotations

import hashlib

import pytest

from memdesk.core.base.errors import SchemaTooNewError, StoreError
from memdesk.core.storage import migrations, open_database
from memdesk.core.storage.database import Database
from memdesk.core.storage.driver import sqlite_module
from memdesk.core.storage.migrations import MIGRATIONS


def test_a_fresh_file_gets_every_migration_recorded(tmp_path):
    db = open_database(tmp_path / "store.sqlite3")
    assert db.schema_version == len(MIGRATIONS)
    names = [row[0] for row in db.query("SELECT name FROM schema_migrations ORDER BY version")]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert db.scalar("PRAGMA journal_mode") == "wal"
    assert db.scalar("SELECT vec_version()").startswith("v")
    db.close()


def test_an_old_file_is_upgraded_in_order(tmp_path):
    path = tmp_path / "store.sqlite3"
    db = open_database(path, migrate=False)
    db.migrate(MIGRATIONS[:1])
    assert db.schema_version == 1
    db.execute("INSERT INTO settings(key, value) VALUES ('kept', '1')")

    calls = []

    def m_next(database: Database) -> None:
        calls.append(database.schema_version)
        database.execute("CREATE TABLE added_later (x INTEGER)")

    applied = db.migrate([*MIGRATIONS[:1], m_next])
    assert applied == ["m_next"]
    assert calls == [1]
    assert db.schema_version == 2
    assert db.scalar("SELECT value FROM settings WHERE key = 'kept'") == "1"
    db.close()


def test_stemmed_search_covers_what_was_stored_before_the_upgrade(tmp_path):
    db = open_database(tmp_path / "store.sqlite3", migrate=False)
    db.migrate(MIGRATIONS[: MIGRATIONS.index(migrations.m009_stemmed_search.migrate)])
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    db.execute(
        "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text)"
        " VALUES (1, '2026-01-01T00:00:00+00:00', 'user', 'user_message', 'x', 'We went camping')"
    )
    db.execute(
        "INSERT INTO passages(agent_id, text, created_at) VALUES (1, 'Painted sunsets all summer',"
        " '2026-01-01T00:00:00+00:00')"
    )
    match = "SELECT COUNT(*) FROM {0} WHERE {0} MATCH ?"
    assert db.scalar(match.format("messages_fts"), ("camp",)) == 0
    db.migrate(MIGRATIONS)
    assert db.scalar(match.format("messages_fts"), ("camp",)) == 1
    assert db.scalar(match.format("passages_fts"), ("painting sunset",)) == 1
    db.close()


def test_a_failing_migration_leaves_the_file_as_it_was(tmp_path):
    db = open_database(tmp_path / "store.sqlite3")
    version = db.schema_version

    def m_broken(database: Database) -> None:
        database.execute("CREATE TABLE half_done (x INTEGER)")
        database.execute("THIS IS NOT SQL")

    with pytest.raises(sqlite_module().OperationalError, match="syntax error"):
        db.migrate([*MIGRATIONS, m_broken])
    assert db.schema_version == version
    assert db.scalar("SELECT 1 FROM sqlite_master WHERE name = 'half_done'") is None
    db.close()


def test_a_file_from_a_newer_memdesk_is_refused(tmp_path):
    path = tmp_path / "store.sqlite3"
    db = open_database(path)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    db.close()
    with pytest.raises(SchemaTooNewError, match="newer MemDesk"):
        open_database(path)


def test_a_file_that_is_not_a_database_gets_a_clear_error(tmp_path):
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a MemDesk database"):
        open_database(path)


def test_transactions_roll_back_as_a_whole(tmp_path):
    db = open_database(tmp_path / "store.sqlite3")
    with pytest.raises(RuntimeError):
        with db.transaction():
            db.execute("INSERT INTO settings(key, value) VALUES ('a', '1')")
            with db.transaction():
                db.execute("INSERT INTO settings(key, value) VALUES ('b', '1')")
            raise RuntimeError("crash")
    assert db.scalar("SELECT COUNT(*) FROM settings") == 0
    db.close()


def test_a_failed_inner_savepoint_keeps_the_outer_work(tmp_path):
    db = open_database(tmp_path / "store.sqlite3")
    with db.transaction():
        db.execute("INSERT INTO settings(key, value) VALUES ('outer', '1')")
        with pytest.raises(RuntimeError):
            with db.transaction():
                db.execute("INSERT INTO settings(key, value) VALUES ('inner', '1')")
                raise RuntimeError("inner failure")
    assert [r[0] for r in db.query("SELECT key FROM settings")] == ["outer"]
    db.close()


#: sha256 of ``_schema_text`` after m014, as released (computed on the code before m013/m014 shared
#: their trigger text through helpers).
SCHEMA_M014_SHA256 = "e6edc29e2199d49d7d4cbd01e216d4f9d835d734339981f18b942b293ceaba52"


def _schema_text(db) -> str:
    """The schema as the migrations wrote it: shadow tables that SQLite's modules make (FTS5's,
    quoted names) and automatic indexes depend on the SQLite build, not on the migrations."""
    rows = db.query(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND sql NOT LIKE 'CREATE TABLE ''%'"
        " ORDER BY type, name"
    )
    return "\n".join("\t".join(str(part) for part in row) for row in rows)


def test_the_schema_that_m001_to_m014_create_never_changes(tmp_path):
    """A migration, once released, creates the same schema text forever (stores hold it verbatim):
    sharing the trigger text of m013 and m014 through helpers changed none of it."""
    db = open_database(tmp_path / "store.sqlite3", migrate=False)
    db.migrate(MIGRATIONS[: MIGRATIONS.index(migrations.m014_row_changes.migrate) + 1])
    assert hashlib.sha256(_schema_text(db).encode()).hexdigest() == SCHEMA_M014_SHA256


def test_passages_and_messages_get_the_same_counting_triggers_but_for_their_names(tmp_path):
    db = open_database(tmp_path / "store.sqlite3", migrate=False)
    db.migrate(MIGRATIONS[: MIGRATIONS.index(migrations.m014_row_changes.migrate) + 1])
    triggers = dict(
        db.query(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND (name LIKE '%count%'"
            " OR name LIKE '%vec16%' OR name LIKE '%rows%')"
        )
    )
    for suffix in ("count_ai", "count_ad", "count_au", "vec16_ai", "vec16_ad", "rows_ai", "rows_ad"):
        assert triggers[f"passages_{suffix}"].replace("passages", "messages") == triggers[f"messages_{suffix}"]
    assert "UPDATE OF text, agent_id ON passages" in triggers["passages_rows_au"]
    assert "UPDATE OF search_text, author, role, created_at, agent_id ON messages" in triggers["messages_rows_au"]


def test_sync_identities_give_existing_rows_stable_ids_and_keep_every_reference(tmp_path):
    db = open_database(tmp_path / "store.sqlite3", migrate=False)
    db.migrate(MIGRATIONS[: MIGRATIONS.index(migrations.m018_sync_identities.migrate)])
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2025-03-01T10:00:00+00:00', '')")
    for n in range(3):
        db.execute(
            "INSERT INTO messages(agent_id, created_at, role, kind, content, search_text)"
            f" VALUES (1, '2025-03-0{n + 1}T10:00:00+00:00', 'user', 'user_message', 'm{n}', 'm{n}')"
        )
    db.execute("INSERT INTO passages(agent_id, text, created_at) VALUES (1, 'p', '2025-03-01T10:00:00+00:00')")
    db.execute("UPDATE messages SET step_id = 1 WHERE id = 2")
    db.migrate()
    uids = [row[0] for row in db.query("SELECT uid FROM messages ORDER BY id")]
    assert len(set(uids)) == 3 and all(len(uid) == 32 for uid in uids)
    assert uids == sorted(uids)  # ids sort by creation time, as ULIDs do
    assert db.scalar("SELECT step_id FROM messages WHERE id = 2") == 1
    assert db.scalar("SELECT uid FROM agents") and db.scalar("SELECT uid FROM passages")
    # a row written later gets its own, from any writer, without a word from the writer
    db.execute(
        "INSERT INTO messages(agent_id, created_at, role, kind, content) VALUES (1, '2026-01-01', 'user', 'x', 'new')"
    )
    assert db.scalar("SELECT uid FROM messages WHERE content = 'new'") > uids[-1]
    # nothing is captured for sync until this device syncs
    assert db.scalar("SELECT COUNT(*) FROM sync_outbox") == 0
    with pytest.raises(sqlite_module().IntegrityError):
        db.execute("UPDATE messages SET uid = ? WHERE id = 1", (uids[1],))
    db.close()
