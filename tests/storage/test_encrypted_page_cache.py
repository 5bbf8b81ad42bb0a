"""An encrypted store keeps what it decrypted: its connections get a page cache large enough for
conversation search's working set (every message's text, the float16 short list), so a search does
not decrypt the same pages again. A plain store leaves that to the operating system's file cache."""

from __future__ import annotations

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.storage import open_database
from memdesk.core.storage.database import ENCRYPTED_CACHE_KIB


def _cache_kib(db) -> int:
    value = int(db.scalar("PRAGMA cache_size"))
    return -value if value < 0 else value * int(db.scalar("PRAGMA page_size")) // 1024


def test_every_connection_to_an_encrypted_store_caches_its_decrypted_pages(tmp_path):
    services = open_services(Paths(tmp_path), key="correct horse", embedder=HashingEmbedder())
    worker = open_database(tmp_path / "memdesk.sqlite3", key="correct horse")  # a thread's own connection
    try:
        assert ENCRYPTED_CACHE_KIB >= 32 * 1024  # a 20,000-message store's messages and float16 rows
        assert _cache_kib(services.db) == ENCRYPTED_CACHE_KIB
        assert _cache_kib(worker) == ENCRYPTED_CACHE_KIB
    finally:
        worker.close()
        services.close()


def test_a_plain_store_keeps_the_drivers_default_cache(tmp_path):
    db = open_database(tmp_path / "memdesk.sqlite3")
    try:
        assert _cache_kib(db) < ENCRYPTED_CACHE_KIB
    finally:
        db.close()


def test_an_in_memory_copy_needs_no_larger_cache(tmp_path):
    """A private chat's copy of an encrypted store is in memory already: nothing to decrypt."""
    db = open_database(":memory:", key="correct horse")
    try:
        assert _cache_kib(db) < ENCRYPTED_CACHE_KIB
    finally:
        db.close()
