"""Unit tests of the pure fusion and query functions."""

from __future__ import annotations

import numpy as np

from memdesk.core.retrieval import fusion
from memdesk.core.retrieval.query import fts_query, mentioned_names, terms


def test_scale_by_max_and_no_match():
    assert fusion.scale_by_max(np.array([2.0, 1.0, 0.0])).tolist() == [1.0, 0.5, 0.0]
    assert fusion.scale_by_max(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_centre_cosine_maps_mean_to_zero_and_best_to_one():
    centred = fusion.centre_cosine(np.array([0.2, 0.3, 0.4, 0.5]))
    assert abs(centred.mean()) < 1e-9 and centred.max() == 1.0
    assert fusion.centre_cosine(np.full(3, 0.4)).tolist() == [0.0, 0.0, 0.0]


def test_neighbour_boost_stays_inside_a_session():
    scores = np.array([0.0, 1.0, 0.0, 0.0])
    same = np.array([False, True, False, True])  # sessions: [0, 1] and [2, 3]
    boosted = fusion.neighbour_boost(scores, same, 0.5)
    assert boosted.tolist() == [0.5, 1.0, 0.0, 0.0]


def test_rank_puts_exact_matches_first_and_breaks_ties_newest_first():
    scores = np.array([0.9, 0.1, 0.5, 0.5])
    exact = np.array([False, True, False, False])
    assert fusion.rank(scores, first=exact).tolist() == [1, 0, 3, 2]
    assert fusion.rank(scores, limit=2).tolist() == [0, 3]


def test_query_terms_drop_stop_words_and_quote_for_fts():
    assert terms("When did Caroline go to the LGBTQ support group?") == ["caroline", "go", "lgbtq", "support", "group"]
    assert fts_query('what about "NEAR" AND x*') == '"near" OR "x"'
    assert fts_query("what is it") == '"what" OR "is" OR "it"'  # only stop words: still searchable
    assert mentioned_names("What did Melanie paint?", ["Caroline", "Melanie"]) == {"Melanie"}
