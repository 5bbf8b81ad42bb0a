"""The "nothing on that" signal: how well the best hits of a search answer a question, judged by
the words the question asks about and who said them (memdesk.core.retrieval.support)."""

from __future__ import annotations

import pytest

from memdesk.core.retrieval.support import NOTHING_BELOW, auroc, says_nothing, support

SPEAKERS = {"Caroline", "Melanie"}
RACE = ("Since my charity race I realize self-care matters.", "Caroline")
POTTERY = ("I signed up for a pottery class yesterday, it's like therapy.", "Melanie")


def test_a_question_about_the_speaker_who_said_it_is_supported():
    assert support("What did Caroline realize after her charity race?", [RACE, POTTERY], SPEAKERS) == 1.0
    assert not says_nothing(support("What did Caroline realize after her charity race?", [RACE, POTTERY], SPEAKERS))


def test_the_same_question_asked_of_the_other_speaker_falls_below_the_bar():
    """LoCoMo's adversarial questions: the words match, but the other speaker said them."""
    score = support("What did Melanie realize after her charity race?", [RACE, POTTERY], SPEAKERS)
    assert score < NOTHING_BELOW and says_nothing(score)


def test_without_a_named_speaker_it_is_the_share_of_asked_words_one_hit_holds():
    assert support("charity race", [POTTERY, RACE], SPEAKERS) == 1.0
    assert support("charity marathon", [POTTERY, RACE], SPEAKERS) == 0.5
    assert support("quantum chromodynamics", [POTTERY, RACE], SPEAKERS) == 0.0
    assert support("races", [RACE], SPEAKERS) == 1.0  # a plural matches its singular


def test_only_the_best_hits_count():
    far = [("nothing relevant here", "Melanie")] * 10 + [RACE]
    assert support("charity race", far, SPEAKERS) == 0.0


def test_a_question_of_stop_words_only_is_not_judged_either_way():
    assert support("what is it?", [RACE], SPEAKERS) == 0.0


@pytest.mark.parametrize(
    "answerable, unanswerable, expected",
    [
        ([1.0, 0.9], [0.1, 0.0], 1.0),
        ([0.0], [1.0], 0.0),
        ([0.5], [0.5], 0.5),
        ([1.0, 0.0], [0.5], 0.5),
        ([], [0.5], None),
    ],
)
def test_auroc_is_the_chance_an_answerable_question_scores_higher(answerable, unanswerable, expected):
    assert auroc(answerable, unanswerable) == expected
