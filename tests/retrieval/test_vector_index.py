"""The vector index: its search form lives in the store, follows writes without reloading, and
answers as exact search does."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memdesk.core.base.clock import ManualClock
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import PassageRanker, VectorIndex, sign_scan, vector_codes, vector_index
from memdesk.core.storage import open_database

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


class _Named(HashingEmbedder):
    """Vectors are given, not computed: the embedder only names their space and dimension."""

    def __init__(self, dimension: int) -> None:
        super().__init__()
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension


def _unit(rng, n, dim):
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _clustered(rng, n, dim, topics=30):
    """Like embeddings of a person's notes: vectors around a few topics, not uniform noise."""
    centres = _unit(rng, topics, dim)
    matrix = centres[rng.integers(0, topics, n)] + 0.8 * _unit(rng, n, dim)
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _store(db, n, dim=128, seed=0, exact_bytes=0):
    """``n`` clustered vectors stored as passages; the index searches by its sign bits unless
    ``exact_bytes`` lets it hold the float16 rows of a small index."""
    vectors = _clustered(np.random.default_rng(seed), n, dim)
    index = VectorIndex(db, exact_bytes=exact_bytes)
    archival = ArchivalMemory(db, _Named(dim), ManualClock(), ranker=PassageRanker(db, None, index))
    ids = archival.add(1, [NewPassage(f"passage {i}", WHEN) for i in range(n)], vectors)
    return archival, index, np.asarray(ids), vectors


def _exact(ids, vectors, query, k):
    scores = vectors @ query
    return ids[np.argsort(-scores, kind="stable")[:k]].tolist()


def test_results_equal_exact_search_beyond_the_short_list(db):
    archival, index, ids, vectors = _store(db, 3000)  # three times the short list: the sign bits choose
    rng = np.random.default_rng(1)
    for row in (5, 123, 2999):
        probe = vectors[row] + 0.5 * _unit(rng, 1, 128)[0]
        probe /= np.linalg.norm(probe)
        found, scores = index.top_k("passages", 1, probe, 10)
        exact = _exact(ids, vectors, probe, 10)
        # the same ten, in the same order, up to rows whose cosines differ by less than float16 can tell
        true_scores = vectors[np.searchsorted(ids, found)] @ probe
        assert np.allclose(true_scores, np.sort(vectors @ probe)[::-1][:10], atol=1e-3)
        assert found[0] == exact[0] and len(set(found.tolist()) & set(exact)) >= 9
        assert np.allclose(scores, true_scores, atol=1e-3)


def test_a_write_reads_only_what_it_wrote_not_the_whole_index(db):
    archival, index, ids, vectors = _store(db, 5000)
    probe = vectors[42]
    index.top_k("passages", 1, probe, 10)
    new = _unit(np.random.default_rng(9), 1, 128)
    reads_before = index.reads
    [new_id] = archival.add(1, [NewPassage("the newest", WHEN)], new)
    found, _ = index.top_k("passages", 1, new[0], 1)
    assert found.tolist() == [new_id]
    # one search re-scores its short list from the float16 copies; nothing else is read back
    assert index.reads - reads_before <= 1000
    blocks_read = []
    original = vector_codes.blocks
    try:
        vector_codes.blocks = lambda *a, **kw: blocks_read.append(kw.get("after_stamp")) or original(*a, **kw)
        archival.add(1, [NewPassage("one more", WHEN)], _unit(np.random.default_rng(10), 1, 128))
        index.top_k("passages", 1, probe, 10)
    finally:
        vector_codes.blocks = original
    assert blocks_read and all(stamp > 0 for stamp in blocks_read)  # only blocks newer than the loaded ones
    assert len(original(db, "passages", 1, after_stamp=index.loaded("passages", 1).stamp - 1)) == 1


def test_a_write_into_a_loaded_index_is_read_by_the_writer_not_by_the_next_search(db, monkeypatch):
    archival, index, _, vectors = _store(db, 3000)
    index.top_k("passages", 1, vectors[0], 10)
    new = _unit(np.random.default_rng(5), 1, 128)
    [new_id] = archival.add(1, [NewPassage("the newest", WHEN)], new)
    read = []
    original = vector_codes.blocks
    monkeypatch.setattr(vector_codes, "blocks", lambda *a, **kw: read.append(1) or original(*a, **kw))
    assert index.top_k("passages", 1, new[0], 1)[0].tolist() == [new_id]
    assert read == []


def test_a_write_loads_no_index_that_no_search_has_used(db, monkeypatch):
    read = []
    original = vector_codes.blocks
    monkeypatch.setattr(vector_codes, "blocks", lambda *a, **kw: read.append(1) or original(*a, **kw))
    _store(db, 500)
    assert read == []


def test_deleted_and_rewritten_vectors_leave_the_index(db):
    archival, index, ids, vectors = _store(db, 1500)
    probe = vectors[7]
    assert index.top_k("passages", 1, probe, 1)[0].tolist() == [ids[7]]
    archival.delete([int(ids[7])])
    assert ids[7] not in index.top_k("passages", 1, probe, 20)[0].tolist()
    archival.store_vectors(1, [int(ids[8])], -vectors[8][None, :])  # re-embedded: the old vector must not be found
    assert ids[8] not in index.top_k("passages", 1, vectors[8], 20)[0].tolist()
    assert index.top_k("passages", 1, -vectors[8], 1)[0].tolist() == [ids[8]]
    assert index.count("passages", 1) == 1499


def test_a_reopened_store_searches_from_its_stored_form_without_reading_vec0(tmp_path, monkeypatch):
    path = tmp_path / "memdesk.sqlite3"
    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    archival, _, ids, vectors = _store(db, 2000)
    archival.delete([int(ids[-1])])
    ids = ids[:-1]
    db.close()
    db = open_database(path)
    checked = []
    monkeypatch.setattr(vector_codes, "missing", lambda *a: checked.append(a) or [])
    index = VectorIndex(db, exact_bytes=0)
    found, _ = index.top_k("passages", 1, vectors[3], 10)
    assert found[0] == ids[3]
    assert index.reads <= 1000  # the short list's float16 copies, no vector from vec0
    assert checked == []  # the counters agree: no row is checked one by one
    db.close()


def test_a_search_form_that_disagrees_with_the_store_is_rebuilt_from_vec0(tmp_path):
    """A store written before the search form existed (or damaged): the index fills in from vec0."""
    path = tmp_path / "memdesk.sqlite3"
    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    _, _, ids, vectors = _store(db, 1200)
    with db.transaction():
        db.execute("DELETE FROM vector_blocks")
        db.execute("DELETE FROM passages_vec16 WHERE id % 3 = 0")
    db.close()
    db = open_database(path)
    index = VectorIndex(db)
    assert index.count("passages", 1) == len(ids) // 3  # the rows that lost their float16 copy were rebuilt
    with db.transaction():
        db.execute("DELETE FROM vector_blocks")
        db.execute("DELETE FROM passages_vec16")
    index = VectorIndex(db)
    for row in (0, 600, 1199):
        assert index.top_k("passages", 1, vectors[row], 10)[0].tolist() == _exact(ids, vectors, vectors[row], 10)
    assert index.count("passages", 1) == 1200
    db.close()


def test_message_cosines_are_exact_for_a_small_conversation(db):
    recall = RecallMemory(db, HashingEmbedder())
    texts = ["owls hunt at night", "the bakery opens at six", "my sister lives in Lyon", "owls and hawks"]
    ids = [recall.add(1, role="user", kind="user_message", content=t, search_text=t, created_at=WHEN).id for t in texts]
    recall.index_pending(1)
    embedder = HashingEmbedder()
    query = embedder.embed(["owls"])[0]
    index = VectorIndex(db)
    got = index.cosines("messages", 1, query, np.asarray(ids + [999]))
    want = embedder.embed(texts) @ query
    assert np.allclose(got[:4], want, atol=2e-3) and got[4] == 0.0


def test_the_search_form_is_kept_inside_the_store_so_encryption_covers_it(tmp_path):
    db = open_database(tmp_path / "memdesk.sqlite3")
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    _, index, _, vectors = _store(db, 1100)
    index.top_k("passages", 1, vectors[0], 5)
    db.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("memdesk.sqlite3")) == []


def test_an_opened_agent_is_loaded_in_the_background_so_its_first_search_reads_nothing_more(tmp_path, monkeypatch):
    path = tmp_path / "memdesk.sqlite3"
    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    _, _, ids, vectors = _store(db, 1500)
    db.close()
    db = open_database(path)
    index = VectorIndex(db)  # small: it holds its float16 rows (exact_rows), read in the background too
    index.warm_in_background(1).join()
    assert index.loaded("passages", 1).exact.rows is not None
    warmed, read = index.reads, []
    original = vector_codes.blocks
    monkeypatch.setattr(vector_codes, "blocks", lambda *a, **kw: read.append(1) or original(*a, **kw))
    assert index.top_k("passages", 1, vectors[9], 1)[0].tolist() == [ids[9]]
    assert read == [] and index.reads == warmed
    db.close()


def test_rows_deleted_behind_memorys_back_stop_taking_places_in_the_short_list(db):
    archival, index, ids, vectors = _store(db, 1200)
    db.execute(
        "DELETE FROM passages WHERE id = ?", (int(ids[5]),)
    )  # not through ArchivalMemory: vec0 and the bits stay
    found, _ = index.top_k("passages", 1, vectors[5], 3)
    assert ids[5] not in found.tolist() and len(found) == 3
    assert index.count("passages", 1) == 1199


def test_any_dimension_is_searched_even_one_that_is_not_whole_words_of_bits(db):
    _, index, ids, vectors = _store(db, 1100, dim=100)
    assert index.top_k("passages", 1, vectors[17], 1)[0].tolist() == [ids[17]]


def _estimate(vectors, query):
    """The cosine the sign bits tell: pi times the share of differing bits is about the angle."""
    differ = (vectors > 0) != (query > 0)
    return np.cos(np.pi * differ.sum(axis=1) / vectors.shape[1])


def test_cosines_of_a_large_memory_are_exact_near_the_query_and_estimated_elsewhere_whatever_the_order_asked(db):
    archival, index, ids, vectors = _store(db, 3000)  # three times the short list
    probe = vectors[11]
    true = vectors @ probe
    asked = np.concatenate([ids[::-1], [10**9]])  # newest first, and an id the index does not hold
    got = index.cosines("passages", 1, probe, asked)[:-1][::-1]
    assert index.cosines("passages", 1, probe, asked)[-1] == 0.0
    assert np.array_equal(got, index.cosines("passages", 1, probe, ids))  # the order asked changes nothing
    exact = np.isclose(got, true, atol=2e-3)
    estimated = got == _estimate(vectors, probe)
    assert (exact | estimated).all()
    assert exact[np.argsort(-true)[:50]].all()  # the nearest are re-scored from their float16 copies
    assert estimated.sum() >= 3000 - 1000  # the rest only cost a look-up


def test_cosines_follow_deletions_rewrites_and_new_rows_without_a_reload(db):
    archival, index, ids, vectors = _store(db, 2500)
    probe = vectors[3]
    index.cosines("passages", 1, probe, ids)
    archival.delete([int(ids[3]), int(ids[2000])])
    archival.store_vectors(1, [int(ids[4])], -probe[None, :])  # moved to the newest block
    [new_id] = archival.add(1, [NewPassage("the newest", WHEN)], probe[None, :])
    asked = np.concatenate([ids, [new_id]])
    got = index.cosines("passages", 1, probe, asked)
    assert got[3] == 0.0 and got[2000] == 0.0
    assert np.isclose(got[4], -1.0, atol=2e-3) and np.isclose(got[-1], 1.0, atol=2e-3)
    assert index.count("passages", 1) == 2499


def test_cosines_of_rows_deleted_behind_memorys_back_are_zero_once_noticed(db):
    archival, index, ids, vectors = _store(db, 1500)
    db.execute("DELETE FROM passages WHERE id = ?", (int(ids[5]),))  # vec0 and the bits stay
    index.top_k("passages", 1, vectors[5], 3)  # the short list finds its float16 copy gone
    assert index.cosines("passages", 1, vectors[5], ids)[5] == 0.0


def _sizes_asked(monkeypatch):
    """The length of each candidate list a search asks the Hamming scan for."""
    asked: list[int] = []
    closest = sign_scan.closest

    def recording(distance, size):
        asked.append(size)
        return closest(distance, size)

    monkeypatch.setattr(sign_scan, "closest", recording)
    return asked


def test_the_candidate_list_grows_on_noise_like_vectors_and_finds_more_of_their_neighbours(db, monkeypatch):
    n, dim = 12_000, 64  # few bits for noise: the Hamming distance separates the rows poorly
    vectors = _unit(np.random.default_rng(3), n, dim)
    index = VectorIndex(db, exact_bytes=0)
    archival = ArchivalMemory(db, _Named(dim), ManualClock(), ranker=PassageRanker(db, None, index))
    ids = np.asarray(archival.add(1, [NewPassage(f"p {i}", WHEN) for i in range(n)], vectors))
    queries = _unit(np.random.default_rng(4), 20, dim)

    def recall() -> float:
        found = [set(index.top_k("passages", 1, q, 10)[0].tolist()) & set(_exact(ids, vectors, q, 10)) for q in queries]
        return float(np.mean([len(f) for f in found])) / 10

    asked = _sizes_asked(monkeypatch)
    grown = recall()
    assert max(asked) > vector_index.CANDIDATES_MIN
    monkeypatch.setattr(vector_index, "CANDIDATES_MAX", vector_index.CANDIDATES_MIN)
    # the rows re-scored are capped (WIDEN_MIN): on noise, recall is what that cap allows
    assert grown >= 0.95 and grown >= recall()


def test_the_candidate_list_stays_short_where_the_sign_bits_separate_the_rows(db, monkeypatch):
    archival, index, ids, vectors = _store(db, 12_000)
    asked = _sizes_asked(monkeypatch)
    rng = np.random.default_rng(5)
    for row in rng.integers(0, len(ids), 20):
        probe = vectors[row] + 0.5 * _unit(rng, 1, 128)[0]
        found, _ = index.top_k("passages", 1, probe / np.linalg.norm(probe), 10)
        assert len(set(found.tolist()) & set(_exact(ids, vectors, probe, 10))) >= 9
    assert set(asked) == {vector_index.CANDIDATES_MIN}


def test_a_write_keeps_the_empty_slots_known_and_the_scan_covers_only_the_slots_in_use(db):
    """After a write only the rewritten block is looked at: the next search neither finds the empty
    slots again among every slot nor scans room kept for blocks still to come."""
    archival, index, ids, vectors = _store(db, 3000)
    loaded = index.loaded("passages", 1)
    index.top_k("passages", 1, vectors[0], 10)
    assert loaded.empty is not None
    rng = np.random.default_rng(12)
    archival.delete([int(ids[5])])  # block 0 rewritten
    archival.store_vectors(1, [int(ids[6])], vectors[6][None, :])  # moved to the last block
    new = archival.add(1, [NewPassage(f"new {i}", WHEN) for i in range(200)], _unit(rng, 200, 128))  # a new block
    archival.add(1, [NewPassage("one more", WHEN)], _unit(rng, 1, 128))
    loaded = index.loaded("passages", 1)
    assert loaded.empty is not None  # kept up to date, not dropped to be found again
    assert loaded.empty.tolist() == np.flatnonzero(loaded.ids[: loaded.used] < 0).tolist()
    assert loaded.used == 4 * vector_codes.BLOCK_ROWS and index.count("passages", 1) == 3000 - 1 + 200 + 1
    assert len(loaded.hamming(vectors[0])) == loaded.used
    assert index.top_k("passages", 1, vectors[6], 1)[0].tolist() == [ids[6]]
    assert ids[5] not in index.top_k("passages", 1, vectors[5], 20)[0].tolist()
    assert index.top_k("passages", 1, _unit(rng, 1, 128)[0], 5)[0].size == 5
    assert new[-1] in index.top_k("passages", 1, index_vector(db, new[-1]), 1)[0].tolist()


def index_vector(db, passage_id):
    return np.frombuffer(db.scalar("SELECT vector FROM passages_vec16 WHERE id = ?", (passage_id,)), "<f2").astype(
        np.float32
    )


def test_an_index_opens_a_page_of_blocks_at_a_time_and_sees_writes_meanwhile(tmp_path, monkeypatch):
    path = tmp_path / "memdesk.sqlite3"
    db = open_database(path)
    db.execute("INSERT INTO agents(name, created_at, system_prompt) VALUES ('sam', '2026-01-01T00:00:00+00:00', '')")
    archival, _, ids, vectors = _store(db, 3000)
    db.close()
    db = open_database(path)
    archival = ArchivalMemory(db, _Named(128), ManualClock())
    monkeypatch.setattr(vector_codes, "OPEN_PAGE", 2)
    pages = []
    original = db.query

    def query(sql, params=()):
        rows = original(sql, params)
        if "block > ?" in sql:
            pages.append(len(rows))
            if len(pages) == 1:  # another writer between two pages: block 0 rewritten
                archival.delete([int(ids[0])])
        return rows

    monkeypatch.setattr(db, "query", query)
    index = VectorIndex(db, exact_bytes=0)
    loaded = index.loaded("passages", 1)
    assert pages == [2, 1]
    assert len(loaded.ids) == loaded.used == 3 * vector_codes.BLOCK_ROWS  # no room doubled for nothing
    assert index.count("passages", 1) == 2999  # the rewrite made while the pages were read was seen
    assert ids[0] not in index.top_k("passages", 1, vectors[0], 10)[0].tolist()
    assert index.top_k("passages", 1, vectors[2500], 1)[0].tolist() == [ids[2500]]
    db.close()
