"""The scan under the vector index: Hamming distances over packed sign bits in one blocked pass, the
closest few found without sorting, and the query's values scored against a short list's bits."""

from __future__ import annotations

import numpy as np
import pytest

from memdesk.core.retrieval import sign_scan, vector_codes


def _codes(rng, n, dim):
    """Sign bits of ``n`` random vectors as the index holds them: (words, n) uint64, one row a word."""
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    bits = vector_codes.sign_bits(vectors)
    width = -(-dim // 64)
    padded = np.zeros((n, width * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    return vectors, np.ascontiguousarray(padded.view(np.uint64).T)


def _naive_hamming(words, query):
    return np.array(
        [sum(bin(int(w) ^ int(q)).count("1") for w, q in zip(column, query, strict=True)) for column in words.T]
    )


@pytest.mark.parametrize("dim", [384, 100, 64, 8])
@pytest.mark.parametrize("n", [0, 1, 5, sign_scan.BLOCK - 1, sign_scan.BLOCK + 3])
def test_hamming_counts_the_differing_bits_of_every_code(n, dim):
    rng = np.random.default_rng(n + dim)
    _, words = _codes(rng, n, dim)
    _, query = _codes(rng, 1, dim)
    distance = sign_scan.hamming(words, query[:, 0])
    assert distance.dtype == np.uint16 and distance.shape == (n,)
    if n <= 5:
        assert distance.tolist() == _naive_hamming(words, query[:, 0]).tolist()
    else:  # the same count through NumPy's bit unpacking, whole arrays at once
        bytes_ = np.ascontiguousarray(words.T).view(np.uint8) ^ np.ascontiguousarray(query.T).view(np.uint8)
        assert (distance == np.unpackbits(bytes_, axis=1).sum(axis=1)).all()


def test_hamming_of_a_code_with_itself_is_zero_and_with_its_opposite_is_every_bit():
    rng = np.random.default_rng(3)
    vectors, words = _codes(rng, 50, 384)
    assert sign_scan.hamming(words, words[:, 7])[7] == 0
    opposite = vector_codes.sign_bits(-vectors[7:8]).view(np.uint64)[0]
    assert sign_scan.hamming(words, opposite)[7] == 384


@pytest.mark.parametrize("size", [1, 10, 999, 1000, 5000])
def test_closest_finds_the_smallest_distances_without_sorting_them(size):
    rng = np.random.default_rng(size)
    distance = rng.integers(0, 385, 5000).astype(np.uint16)  # many ties, as real distances have
    picked = sign_scan.closest(distance, size)
    assert len(picked) == size == len(set(picked.tolist()))
    rest = np.setdiff1d(np.arange(len(distance)), picked)
    if len(rest):
        assert distance[picked].max() <= distance[rest].min()


def test_closest_of_more_than_there_are_is_every_position():
    assert sign_scan.closest(np.array([3, 1, 2], dtype=np.uint16), 10).tolist() == [0, 1, 2]


@pytest.mark.parametrize("dim", [384, 100, 65, 8])
def test_asymmetric_is_the_query_summed_over_each_rows_set_bits(dim):
    rng = np.random.default_rng(dim)
    vectors, words = _codes(rng, 300, dim)
    query = rng.standard_normal(dim).astype(np.float32)
    slots = rng.choice(300, 40, replace=False)
    expected = (vectors[slots] > 0).astype(np.float64) @ query.astype(np.float64)
    assert np.allclose(sign_scan.asymmetric(words, slots, query), expected, atol=1e-4)


def test_asymmetric_orders_rows_as_their_sign_vectors_product_with_the_query():
    """2 * score - sum(query) is the product with the row's +-1 sign vector: same order."""
    rng = np.random.default_rng(11)
    vectors, words = _codes(rng, 500, 384)
    query = rng.standard_normal(384).astype(np.float32)
    slots = np.arange(500)
    scores = sign_scan.asymmetric(words, slots, query)
    signs = np.where(vectors > 0, 1.0, -1.0) @ query
    assert np.allclose(2 * scores - query.sum(), signs, atol=1e-3)
    assert np.argsort(-scores, kind="stable")[:20].tolist() == np.argsort(-signs, kind="stable")[:20].tolist()


def _depth(order, truth):
    """How far down ``order`` the last of ``truth`` comes."""
    return max(np.flatnonzero(np.isin(order, list(truth)))) + 1


def test_asymmetric_ranks_true_neighbours_closer_than_hamming_does():
    """Why the second stage exists: on vectors whose dimensions are not centred (as MiniLM's are
    not), the query's own values find the exact top 10 inside a far shorter list than its signs."""
    rng = np.random.default_rng(5)
    mean = rng.standard_normal(384).astype(np.float32) * 0.08
    raw = rng.standard_normal((20000, 384)).astype(np.float32) / np.sqrt(384) + mean
    vectors = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    bits = vector_codes.sign_bits(vectors)
    words = np.ascontiguousarray(bits.view(np.uint64).T)
    worse = 0
    for q in range(20):
        query = vectors[q] + rng.standard_normal(384).astype(np.float32) * 0.03
        truth = set(np.argsort(-(vectors @ query))[:10].tolist())
        by_hamming = np.argsort(
            sign_scan.hamming(words, vector_codes.sign_bits(query[None]).view(np.uint64)[0]), kind="stable"
        )
        by_values = np.argsort(-sign_scan.asymmetric(words, np.arange(len(vectors)), query), kind="stable")
        worse += _depth(by_values, truth) > _depth(by_hamming, truth)
    assert worse <= 4


def test_the_list_widens_only_to_rows_whose_estimates_cannot_rule_them_out():
    scored = np.linspace(10.0, 5.0, 50)  # estimates of the rows already scored, best first
    exact = 0.1 * scored  # a perfect line: no error
    rest = np.array([8.9, 4.0, 9.9, 1.0])
    # the 10th best exact cosine is 0.1 * scored[9] (0.908): only an estimate at least as high can reach it
    assert sign_scan.beyond(scored, exact, rest, k=10).tolist() == [2]
    noisy = exact + np.random.default_rng(0).normal(0, 0.05, 50)
    widened = sign_scan.beyond(scored, noisy, rest, k=10).tolist()
    assert 0 in widened and 2 in widened and 3 not in widened  # the error widens it, not to everything


def test_without_a_usable_fit_every_remaining_row_stays_in():
    rest = np.array([1.0, 2.0])
    assert sign_scan.beyond(np.ones(20), np.ones(20), rest, k=10).tolist() == [0, 1]  # no spread
    assert sign_scan.beyond(np.arange(5.0), np.arange(5.0), rest, k=10).tolist() == [0, 1]  # fewer than k
    assert sign_scan.beyond(np.arange(20.0), -np.arange(20.0), rest, k=10).tolist() == [0, 1]  # falling line
    assert sign_scan.beyond(np.arange(20.0), np.arange(20.0), np.zeros(0), k=10).tolist() == []


@pytest.mark.parametrize("seed", range(5))
def test_closest_on_a_million_distances_is_exact_whatever_the_sample_guesses(seed):
    rng = np.random.default_rng(seed)
    distance = rng.binomial(384, 0.5, 1_000_000).astype(np.uint16)
    distance[rng.choice(len(distance), 50, replace=False)] = 3  # a few very close rows the sample misses
    for size in (10, 8000, 100_000):
        picked = sign_scan.closest(distance, size)
        assert len(picked) == size == len(np.unique(picked))
        assert distance[picked].max() <= np.partition(distance, size - 1)[size - 1]


@pytest.mark.parametrize("seed", range(4))
def test_floor_is_the_least_squares_line_plus_its_error_as_polyfit_draws_it(seed):
    rng = np.random.default_rng(seed)
    scored = rng.normal(0, 1, 200)
    exact = 0.3 * scored + 0.1 + rng.normal(0, 0.05 * (seed + 1), 200)
    slope, intercept = np.polyfit(scored, exact, 1)
    error = float(np.std(exact - (slope * scored + intercept)))
    kth = float(np.sort(exact)[-10])
    # the estimate at which the line plus three errors reaches the 10th best exact cosine
    assert sign_scan.floor(scored, exact, k=10) == pytest.approx((kth - intercept - 3 * error) / slope, abs=1e-9)


def test_floor_has_nothing_to_judge_by_without_a_rising_line_over_enough_rows():
    assert sign_scan.floor(np.ones(20), np.arange(20.0), k=10) is None  # no spread
    assert sign_scan.floor(np.arange(5.0), np.arange(5.0), k=10) is None  # fewer rows than k
    assert sign_scan.floor(np.arange(20.0), -np.arange(20.0), k=10) is None  # a falling line
