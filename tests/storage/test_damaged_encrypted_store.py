"""A damaged encrypted store: told apart from a wrong passphrase, offered its newest snapshot, and
restored with the passphrase (the damaged file kept beside it). Snapshots asked for without their
passphrase are not marked damaged."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memdesk.app.services import open_services
from memdesk.app.store_opening import backups_at, open_store
from memdesk.core.base.errors import DamagedStoreError, PassphraseRequiredError, WrongPassphraseError
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage import open_database
from memdesk.core.storage.cipher_pages import PAGE_SIZE, authenticated_pages

PASSPHRASE = "correct horse battery staple"
TEXT = "the spare key is under the blue flower pot"
WHEN = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def paths(memdesk_home) -> Paths:
    return Paths.from_environment()


def _store_with_snapshot(paths: Paths, messages: int = 200):
    """An encrypted store with a conversation (several pages) and one snapshot of it."""
    services = open_services(paths, key=PASSPHRASE, embedder=HashingEmbedder())
    agent = services.create_agent("sam")
    for i in range(messages):
        services.memory.recall.add(
            agent.id,
            role="user",
            kind="user_message",
            content=f"{TEXT} {i}",
            search_text=f"{TEXT} {i}",
            created_at=WHEN,
        )
    snapshot = services.backups.create("daily")
    services.close()
    return snapshot


def _damage(path, offset: int, length: int = 64) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        data = bytearray(file.read(length))
        file.seek(offset)
        file.write(bytes(b ^ 0xFF for b in data))


def test_the_page_check_reads_sqlcipher_files_as_sqlcipher_wrote_them(paths):
    _store_with_snapshot(paths)
    good, checked = authenticated_pages(paths.database, PASSPHRASE)
    assert checked > 10 and good == checked
    assert authenticated_pages(paths.database, "not it")[0] == 0


def test_a_damaged_first_page_is_called_damaged_under_the_right_passphrase_and_wrong_under_another(paths):
    _store_with_snapshot(paths)
    _damage(paths.database, 200)  # inside page 1, after the salt
    with pytest.raises(DamagedStoreError):
        open_database(paths.database, key=PASSPHRASE)
    with pytest.raises(WrongPassphraseError):
        open_database(paths.database, key="not it")


def test_at_start_a_damaged_encrypted_store_is_offered_its_snapshot_and_restored_with_the_passphrase(paths):
    snapshot = _store_with_snapshot(paths)
    _damage(paths.database, 200)
    with pytest.raises(DamagedStoreError) as raised:
        open_store(paths, key=PASSPHRASE)
    assert raised.value.snapshot is not None and raised.value.snapshot.id == snapshot.id
    assert raised.value.snapshot.encrypted
    assert backups_at(paths, key=PASSPHRASE).restore(snapshot.id) is None  # the damaged store is moved aside
    kept = [p.name for p in paths.database.parent.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1
    services = open_services(paths, key=PASSPHRASE, embedder=HashingEmbedder())
    try:
        assert services.db.scalar("SELECT count(*) FROM messages WHERE content LIKE ?", (f"{TEXT}%",)) == 200
    finally:
        services.close()


def test_a_truncated_encrypted_store_is_restored_once_its_passphrase_is_given(paths):
    """Cut mid-page, the file no longer looks encrypted (nor like SQLite): it is offered its
    snapshot without a passphrase question, and the snapshot needs the passphrase to restore."""
    snapshot = _store_with_snapshot(paths)
    size = paths.database.stat().st_size
    with open(paths.database, "r+b") as file:
        file.truncate(size - PAGE_SIZE - 100)
    with pytest.raises(DamagedStoreError) as raised:
        open_store(paths)
    assert raised.value.snapshot.id == snapshot.id and raised.value.snapshot.encrypted
    with pytest.raises(PassphraseRequiredError):
        backups_at(paths).restore(snapshot.id)
    backups = backups_at(paths, key=PASSPHRASE)
    assert backups.get(snapshot.id).verified  # asking without the passphrase did not mark it damaged
    assert not backups.opens_with(snapshot, "not it") and backups.opens_with(snapshot, PASSPHRASE)
    backups.restore(snapshot.id)
    services = open_services(paths, key=PASSPHRASE, embedder=HashingEmbedder())
    try:
        assert services.db.scalar("SELECT count(*) FROM messages") >= 200
    finally:
        services.close()


def test_a_snapshot_asked_for_under_another_passphrase_is_refused_but_not_marked_damaged(paths):
    snapshot = _store_with_snapshot(paths)
    backups = backups_at(paths, key=PASSPHRASE)
    backups.key = "an older passphrase"
    with pytest.raises(WrongPassphraseError):
        backups.verify(snapshot.id)
    backups.key = None
    with pytest.raises(PassphraseRequiredError):
        backups.verify(snapshot.id)
    assert backups_at(paths, key=PASSPHRASE).get(snapshot.id).verified
