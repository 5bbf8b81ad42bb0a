"""A batch of passages (a document's chunks) is stored in one pass: every row written once, with
the ids, stable ids, counters and sync records a row-by-row insert gave it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from memdesk.core.base.clock import ManualClock
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.retrieval import PassageRanker, VectorIndex
from memdesk.core.storage import open_database

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def db(tmp_path, new_store):
    database = open_database(new_store(tmp_path / "memdesk.sqlite3"))
    database.execute(
        "INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')"
    )
    # this device syncs: every new passage must reach the outbox
    database.execute(
        "INSERT INTO sync_device(id, device_id, name, folder, group_id, group_key, signing_key, joined_at)"
        " VALUES (1, 'd1', 'laptop', '/nowhere', 'g', x'00', x'00', '2026-01-01T00:00:00+00:00')"
    )
    yield database
    database.close()


def _archival(db):
    embedder = HashingEmbedder()
    return ArchivalMemory(db, embedder, ManualClock(), ranker=PassageRanker(db, embedder, VectorIndex(db))), embedder


def test_a_batch_writes_each_passage_row_once_with_everything_a_row_by_row_insert_gave_it(db):
    archival, embedder = _archival(db)
    archival.add(1, [NewPassage("an older note", WHEN)], embedder.embed(["an older note"]))
    [newest] = archival.add(1, [NewPassage("the newest note", WHEN)], embedder.embed(["the newest note"]))
    archival.delete([newest])  # its id is free again, as SQLite gives the largest id plus one
    db.execute("CREATE TEMP TABLE rewrites(id INTEGER)")
    db.execute(
        "CREATE TEMP TRIGGER count_rewrites AFTER UPDATE ON main.passages"
        " BEGIN INSERT INTO rewrites VALUES (new.id); END"
    )
    texts = [f"chunk {i} about owls and the night" for i in range(5)]
    outbox_before = db.scalar("SELECT COUNT(*) FROM sync_outbox WHERE kind = 'passages' AND op = 'i'")

    ids = archival.add(1, [NewPassage(t, WHEN, chunk_index=i) for i, t in enumerate(texts)], embedder.embed(texts))

    assert ids == list(range(newest, newest + 5))
    assert db.scalar("SELECT COUNT(*) FROM rewrites") == 0  # inserted complete: no second write of a row
    uids = [r[0] for r in db.query(f"SELECT uid FROM passages WHERE id IN ({','.join('?' * 5)})", ids)]
    assert len(set(uids)) == 5 and all(re.fullmatch(r"[0-9a-f]{32}", u) for u in uids)
    outbox = db.scalar("SELECT COUNT(*) FROM sync_outbox WHERE kind = 'passages' AND op = 'i'")
    assert outbox - outbox_before == 5
    assert db.query_one("SELECT embedded, formed FROM vector_counts WHERE kind = 'passages' AND agent_id = 1") == (6, 6)
    assert db.scalar("SELECT added FROM row_changes WHERE kind = 'passages' AND agent_id = 1") == 7
    assert db.scalar("SELECT COUNT(*) FROM passages WHERE embedded = 1") == 6
    found_by_words = {hit.passage.id for hit in archival.search(1, "owls", page_size=10).hits}
    assert found_by_words == set(ids)
    found, _ = VectorIndex(db).top_k("passages", 1, embedder.embed([texts[3]])[0], 1)
    assert found.tolist() == [ids[3]]


def test_a_batch_that_fails_leaves_nothing_behind(db):
    archival, embedder = _archival(db)
    texts = ["one", "two", "three"]
    passages = [NewPassage("one", WHEN), NewPassage("two", WHEN), NewPassage("three", WHEN, document_id=999)]
    with pytest.raises(Exception, match="FOREIGN KEY"):  # the last chunk names no document
        archival.add(1, passages, embedder.embed(texts))
    assert db.scalar("SELECT COUNT(*) FROM passages") == 0
    assert db.scalar("SELECT COUNT(*) FROM passages_fts WHERE passages_fts MATCH 'two'") == 0
    assert db.scalar("SELECT COUNT(*) FROM passages_vec16") == 0
