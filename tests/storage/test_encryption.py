"""Encryption at rest: an encrypted store opens only with its passphrase, holds no readable text,
and converting a store either way or to a new passphrase never leaves it half-made."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdesk.app.services import open_services
from memdesk.core.base.errors import NotEncryptedError, PassphraseRequiredError, StoreBusyError, WrongPassphraseError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage import open_database
from memdesk.core.storage.driver import cipher_module
from memdesk.core.storage.encryption import CONVERTING, change_key, decrypt_store, encrypt_store, is_encrypted

WORD = "zebrafishcamping"
WHEN = datetime(2026, 3, 1, tzinfo=UTC)
ODD_PASSPHRASE = "it's a \"quoted\" pass'; DROP TABLE agents; -- ünï"


def make_store(path: Path, *, key: str | None = None, messages: int = 3) -> Path:
    """A real store with an agent, messages (FTS rows) and their vectors (vec0 rows)."""
    services = open_services(Paths(path.parent), embedder=HashingEmbedder(), key=key)
    agent = services.create_agent("sam")
    for i in range(messages):
        text = f"we went {WORD} by the river, day {i}"
        services.memory.recall.add(
            agent.id, role="user", kind="user_message", content=text, search_text=text, created_at=WHEN
        )
    services.memory.recall.index_pending(agent.id)
    services.close()
    return path


def contents(path: Path, key: str | None) -> dict:
    db = open_database(path, key=key)
    try:
        return {
            "messages": db.query("SELECT id, search_text FROM messages ORDER BY id"),
            "fts": db.query("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (WORD,)),
            "vectors": db.scalar("SELECT count(*) FROM messages_vec"),
            "agents": db.query("SELECT name FROM agents"),
        }
    finally:
        db.close()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if CONVERTING in p.name)


@pytest.fixture
def store(tmp_path) -> Path:
    return tmp_path / "memdesk.sqlite3"


def test_an_encrypted_store_keeps_messages_search_and_vectors_behind_its_passphrase(store):
    make_store(store, key="correct horse")
    assert is_encrypted(store)
    found = contents(store, "correct horse")
    assert len(found["messages"]) == 3 and len(found["fts"]) == 3 and found["vectors"] == 3
    db = open_database(store, key="correct horse")
    assert db.key == "correct horse" and db.encrypted
    db.close()


def test_a_passphrase_with_quotes_and_non_ascii_letters_works(store):
    make_store(store, key=ODD_PASSPHRASE)
    assert contents(store, ODD_PASSPHRASE)["agents"] == [("sam",)]


def test_a_wrong_passphrase_is_a_clear_error_and_leaves_the_store_as_it_was(store):
    make_store(store, key="right")
    before = store.read_bytes()
    with pytest.raises(WrongPassphraseError, match="Wrong passphrase") as caught:
        open_database(store, key="wrong")
    assert caught.value.hint
    assert store.read_bytes() == before
    assert contents(store, "right")["agents"] == [("sam",)]


def test_an_encrypted_store_without_a_passphrase_and_a_plain_one_with_one_are_refused_clearly(tmp_path):
    encrypted = make_store(tmp_path / "a" / "memdesk.sqlite3", key="secret")
    plain = make_store(tmp_path / "b" / "memdesk.sqlite3")
    with pytest.raises(PassphraseRequiredError, match="is encrypted"):
        open_database(encrypted)
    with pytest.raises(NotEncryptedError, match="is not encrypted"):
        open_database(plain, key="secret")
    assert not is_encrypted(plain)


def test_an_in_memory_store_is_never_encrypted_but_can_copy_an_encrypted_one(store):
    """A private chat works on an in-memory copy: given the key, the copy can read the store."""
    make_store(store, key="secret")
    db = open_database(":memory:", key="secret", migrate=False)
    assert db.key is None
    db.execute("DROP TABLE schema_migrations")
    db.execute("ATTACH DATABASE ? AS saved KEY ?", (str(store), "secret"))
    db.query("SELECT sqlcipher_export('main', 'saved')")
    db.execute("DETACH DATABASE saved")
    db.execute("PRAGMA writable_schema = RESET")
    assert db.query("SELECT name FROM agents") == [("sam",)]
    assert len(db.query("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (WORD,))) == 3
    db.close()


def test_neither_the_encrypted_file_nor_its_wal_contains_a_word_of_a_message(store):
    make_store(store, key="secret")
    db = open_database(store, key="secret")  # kept open: the last writes are still in the WAL
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES (?, '2026', '')", (WORD + "agent",))
    wal = Path(f"{store}-wal")
    assert wal.exists() and wal.stat().st_size > 0
    for path in (store, wal):
        raw = path.read_bytes()
        assert WORD.encode() not in raw and b"river" not in raw and b"SQLite format 3" not in raw
    db.close()


def test_the_store_opens_with_its_passphrase_in_any_sqlcipher_4_tool(store):
    """The key is SQLCipher 4's own derivation of the passphrase, so the file is not MemDesk's prisoner."""
    make_store(store, key=ODD_PASSPHRASE)
    conn = cipher_module().connect(str(store))
    conn.execute("PRAGMA key = '" + ODD_PASSPHRASE.replace("'", "''") + "'")
    assert conn.execute("SELECT name FROM agents").fetchall() == [("sam",)]
    conn.close()


def test_encrypting_then_decrypting_a_store_keeps_every_row(store):
    make_store(store)
    plain = contents(store, None)
    assert WORD.encode() in store.read_bytes()
    encrypt_store(store, "secret")
    assert is_encrypted(store)
    assert WORD.encode() not in store.read_bytes()
    assert contents(store, "secret") == plain
    decrypt_store(store, "secret")
    assert not is_encrypted(store)
    assert contents(store, None) == plain
    assert leftovers(store.parent) == []


def test_changing_the_passphrase_locks_out_the_old_one(store):
    make_store(store, key="old")
    expected = contents(store, "old")
    change_key(store, "old", "new")
    with pytest.raises(WrongPassphraseError):
        open_database(store, key="old")
    assert contents(store, "new") == expected


def test_a_conversion_given_the_wrong_passphrase_changes_nothing(store):
    make_store(store, key="right")
    before = store.read_bytes()
    with pytest.raises(WrongPassphraseError):
        decrypt_store(store, "wrong")
    with pytest.raises(WrongPassphraseError):
        change_key(store, "wrong", "new")
    assert store.read_bytes() == before and leftovers(store.parent) == []


class Crash(Exception):
    pass


def crash_at(step: str):
    def hook(name: str) -> None:
        if name == step:
            raise Crash(step)

    return hook


@pytest.mark.parametrize("step", ["exported", "verified", "synced", "closed"])
@pytest.mark.parametrize("conversion", ["encrypt", "decrypt", "change"])
def test_a_crash_before_the_swap_leaves_the_old_store_readable_with_its_old_passphrase(store, step, conversion):
    old_key = None if conversion == "encrypt" else "old"
    make_store(store, key=old_key)
    expected = contents(store, old_key)
    run = {
        "encrypt": lambda: encrypt_store(store, "new", hook=crash_at(step)),
        "decrypt": lambda: decrypt_store(store, "old", hook=crash_at(step)),
        "change": lambda: change_key(store, "old", "new", hook=crash_at(step)),
    }[conversion]
    with pytest.raises(Crash):
        run()
    assert is_encrypted(store) == (old_key is not None)
    assert contents(store, old_key) == expected
    assert leftovers(store.parent) == []


def test_a_crash_right_after_the_swap_leaves_the_new_store_complete(store):
    make_store(store)
    expected = contents(store, None)
    with pytest.raises(Crash):
        encrypt_store(store, "new", hook=crash_at("replaced"))
    assert contents(store, "new") == expected
    assert leftovers(store.parent) == []


def test_a_half_made_copy_left_by_a_killed_conversion_is_removed_by_the_next(store):
    make_store(store)
    expected = contents(store, None)
    # What kill -9 during the export would leave: a partial copy beside the untouched store.
    (store.parent / (store.name + CONVERTING)).write_bytes(b"partial copy " * 100)
    (store.parent / (store.name + CONVERTING + "-journal")).write_bytes(b"journal")
    assert contents(store, None) == expected  # the store itself opens meanwhile
    encrypt_store(store, "secret")
    assert leftovers(store.parent) == []
    assert contents(store, "secret") == expected


def test_a_write_by_another_connection_during_the_conversion_is_refused_and_kept(store):
    make_store(store)

    def write_meanwhile(name: str) -> None:
        if name == "exported":
            other = open_database(store)
            other.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('late', '2026', '')")
            other.close()

    with pytest.raises(StoreBusyError, match="nothing was lost"):
        encrypt_store(store, "secret", hook=write_meanwhile)
    assert not is_encrypted(store)
    assert ("late",) in contents(store, None)["agents"]
    assert leftovers(store.parent) == []
