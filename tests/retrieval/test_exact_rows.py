"""A small vector index holds its float16 rows in memory and scores every one: exact on any
vectors, kept up to date a block at a time, and let go once the index outgrows its budget."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memdesk.core.base.clock import ManualClock
from memdesk.core.memory.archival import ArchivalMemory, NewPassage
from memdesk.core.retrieval import PassageRanker, VectorIndex, vector_codes
from memdesk.core.retrieval.exact_rows import EXACT_BYTES, ExactRows
from tests.retrieval.test_vector_index import _exact, _Named, _unit

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _noise_store(db, n, dim=64, exact_bytes=EXACT_BYTES, seed=3):
    """``n`` uniformly random vectors: few sign bits for noise, which separate neighbours poorly."""
    vectors = _unit(np.random.default_rng(seed), n, dim)
    index = VectorIndex(db, exact_bytes=exact_bytes)
    archival = ArchivalMemory(db, _Named(dim), ManualClock(), ranker=PassageRanker(db, None, index))
    ids = np.asarray(archival.add(1, [NewPassage(f"p {i}", WHEN) for i in range(n)], vectors))
    return archival, index, ids, vectors


def _same_ten(found, ids, vectors, query) -> bool:
    """The exact ten, in order, up to rows whose cosines differ by less than float16 can tell."""
    truth = np.sort(vectors @ query)[::-1][:10]
    return np.allclose(vectors[np.searchsorted(ids, found)] @ query, truth, atol=2e-3)


def test_a_small_index_finds_exactly_the_nearest_even_among_noise(db):
    _, index, ids, vectors = _noise_store(db, 4000)
    queries = _unit(np.random.default_rng(4), 20, 64)
    for query in queries:
        found, scores = index.top_k("passages", 1, query, 10)
        assert _same_ten(found, ids, vectors, query)
        assert np.allclose(scores, vectors[np.searchsorted(ids, found)] @ query, atol=2e-3)
    assert index.memory_bytes() >= 4000 * 64 * 2  # the float16 rows, held


def test_a_write_is_read_by_the_writer_a_block_at_most_and_the_next_search_reads_nothing(db):
    archival, index, _, _ = _noise_store(db, 5000)
    index.top_k("passages", 1, _unit(np.random.default_rng(5), 1, 64)[0], 10)
    before = index.reads
    new = _unit(np.random.default_rng(6), 1, 64)
    [new_id] = archival.add(1, [NewPassage("the newest", WHEN)], new)
    assert 0 < index.reads - before <= vector_codes.BLOCK_ROWS  # the block it rewrote, not 5,000 rows
    after_write = index.reads
    assert index.top_k("passages", 1, new[0], 1)[0].tolist() == [new_id]
    assert index.reads == after_write


def test_deleted_rewritten_and_vanished_rows_leave_the_exact_search(db):
    archival, index, ids, vectors = _noise_store(db, 2500)
    assert index.top_k("passages", 1, vectors[7], 1)[0].tolist() == [ids[7]]
    archival.delete([int(ids[7])])
    assert ids[7] not in index.top_k("passages", 1, vectors[7], 20)[0].tolist()
    archival.store_vectors(1, [int(ids[8])], -vectors[8][None, :])  # re-embedded: the old vector must not be found
    assert ids[8] not in index.top_k("passages", 1, vectors[8], 20)[0].tolist()
    assert index.top_k("passages", 1, -vectors[8], 1)[0].tolist() == [ids[8]]
    db.execute("DELETE FROM passages WHERE id = ?", (int(ids[9]),))  # not through memory: the bits stay
    archival.add(1, [NewPassage("a write elsewhere", WHEN)], _unit(np.random.default_rng(7), 1, 64))
    assert ids[9] not in index.top_k("passages", 1, vectors[9], 20)[0].tolist()
    assert index.count("passages", 1) == 2499


def test_an_index_grown_past_its_budget_lets_its_rows_go_and_searches_by_its_bits(db):
    budget = 3000 * 64 * 2  # the rows of 3,000 vectors
    archival, index, ids, vectors = _noise_store(db, 2048, exact_bytes=budget)
    index.top_k("passages", 1, vectors[0], 10)
    held = index.memory_bytes()
    assert index.loaded("passages", 1).exact.rows is not None
    more = _unit(np.random.default_rng(8), 2048, 64)
    more_ids = archival.add(1, [NewPassage(f"q {i}", WHEN) for i in range(len(more))], more)
    assert index.top_k("passages", 1, more[5], 1)[0].tolist() == [more_ids[5]]  # found by the sign bits
    assert index.loaded("passages", 1).exact.rows is None and index.memory_bytes() < held


def test_exact_rows_answer_like_numpys_product_on_real_dimensions(db):
    """384-d, the embedder's: the sign-bit search's budget case (a few thousand rows)."""
    _, index, ids, vectors = _noise_store(db, 3000, dim=384)
    for query in _unit(np.random.default_rng(11), 5, 384):
        assert _same_ten(index.top_k("passages", 1, query, 10)[0], ids, vectors, query)
    assert _exact(ids, vectors, vectors[3], 1) == index.top_k("passages", 1, vectors[3], 1)[0].tolist()


def test_the_indexes_of_a_store_hold_two_indexes_worth_of_rows_the_others_search_by_their_bits(db):
    budget = 2048 * 64 * 2  # one index's rows: 2,048 vectors of 64 values
    index = VectorIndex(db, exact_bytes=budget)
    archival = ArchivalMemory(db, _Named(64), ManualClock(), ranker=PassageRanker(db, None, index))
    stored = {}
    for agent in (1, 2, 3):
        if agent > 1:
            db.execute(
                "INSERT INTO agents(name, created_at, system_prompt) VALUES (?, '2026-01-01T00:00:00+00:00', '')",
                (f"agent {agent}",),
            )
        vectors = _unit(np.random.default_rng(agent), 1500, 64)
        stored[agent] = (
            np.asarray(archival.add(agent, [NewPassage(f"p {i}", WHEN) for i in range(1500)], vectors)),
            vectors,
        )
    for agent, (ids, vectors) in stored.items():
        assert index.top_k("passages", agent, vectors[4], 1)[0].tolist() == [ids[4]]
    held = [index.loaded("passages", agent).exact.rows is not None for agent in (1, 2, 3)]
    assert held == [True, True, False] and index.memory_bytes() < 2 * budget + 3 * 1500 * 64


def test_the_float16_rows_are_summed_in_float32_on_this_machine():
    """Whatever kernel this CPU gets (on Sapphire Rapids SimSIMD would add in float16), the scores
    are the float32 sums of the float16 products, to float32's precision."""
    rng = np.random.default_rng(12)
    rows = ExactRows()
    rows.rows = _unit(rng, 500, 384).astype(np.float16)
    query = _unit(rng, 1, 384)[0]
    want = rows.rows.astype(np.float32) @ query.astype(np.float16).astype(np.float32)
    assert np.allclose(rows.scores(query, 500), want, atol=1e-5)
    assert np.allclose(rows.rescored(np.arange(500), query), rows.rows.astype(np.float32) @ query, atol=1e-6)
