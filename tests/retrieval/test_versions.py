"""Two versions of one fact among search hits: updates of a quantity and contradictions by
negation are paired, newest known; different facts, undated hits and code are not."""

from __future__ import annotations

from datetime import datetime

from memdesk.core.retrieval.versions import CONTRADICTION, UPDATE, find_versions, newer_values_first

MAY_3, MAY_12, JUNE_1 = datetime(2024, 5, 3, 12), datetime(2024, 5, 12, 12), datetime(2024, 6, 1, 12)


def test_a_changed_count_of_the_same_thing_is_an_update_newest_known():
    pairs = find_versions(
        [
            ("The commits merged into the main branch have now reached 165, so I want a release checklist.", MAY_12),
            (
                "I tagged release v1.0.0 and pushed it to the GitHub repository with 150"
                " commits and 12 branches merged.",
                MAY_3,
            ),
        ]
    )
    assert [(p.newer, p.older, p.kind) for p in pairs] == [(0, 1, UPDATE)]
    assert "commi" in pairs[0].shared or "merge" in pairs[0].shared


def test_percentages_times_and_thousands_are_quantities_too():
    coverage = find_versions(
        [
            ("I have reached 65% test coverage on my API integration module after the first suite.", MAY_3),
            ("The test coverage of my API integration module has recently improved to 78%.", MAY_12),
        ]
    )
    meeting = find_versions(
        [
            ("I have a Zoom meeting with Professor Danielle on March 22 at 3 PM to review my draft.", MAY_3),
            ("Remind me that the Zoom meeting with Professor Danielle is rescheduled to March 22 at 4:30 PM.", MAY_12),
        ]
    )
    words = find_versions(
        [
            ("My writing goal is a weekly target of 1,200 words per week for my essay.", MAY_3),
            ("My weekly writing target was adjusted to 1,350 words for the essay.", MAY_12),
        ]
    )
    assert [(p.newer, p.kind) for p in coverage + meeting + words] == [(1, UPDATE)] * 3


def test_a_never_against_a_plain_statement_is_a_contradiction():
    pairs = find_versions(
        [
            ("I've never submitted my cover letter to Greg for review, should I ask him?", JUNE_1),
            (
                "I've submitted my cover letter to Greg for review on April 10 and I'm anxious about his feedback.",
                MAY_3,
            ),
        ]
    )
    assert [(p.newer, p.older, p.kind) for p in pairs] == [(0, 1, CONTRADICTION)]


def test_the_same_number_or_the_same_polarity_is_no_new_version():
    assert (
        find_versions(
            [
                ("My Zotero library has 45 sources tagged by theme.", MAY_3),
                ("The Zotero library still has 45 sources, tagged by theme and date.", MAY_12),
            ]
        )
        == []
    )
    assert (
        find_versions(
            [
                ("I've never used Gunicorn for production deployments.", MAY_3),
                ("Again: I have never used Gunicorn for production deployments.", MAY_12),
            ]
        )
        == []
    )


def test_numbers_about_different_things_do_not_pair():
    assert (
        find_versions(
            [
                ("I solved 12 geometry problems on triangles last week.", MAY_3),
                ("Our team meeting has 5 people from the marketing department.", MAY_12),
            ]
        )
        == []
    )


def test_versions_years_and_code_are_not_quantities():
    assert (
        find_versions(
            [
                ("I upgraded the budget tracker to Flask 2.3.1 in 2023 with SQLAlchemy.", MAY_3),
                ("The budget tracker runs Flask 2.3.2 since 2024 with SQLAlchemy.", MAY_12),
            ]
        )
        == []
    )
    assert (
        find_versions(
            [
                ("My dashboard API code:\n```python\ncache_timeout = 300  # dashboard API cache seconds\n```", MAY_3),
                ("My dashboard API code:\n```python\ncache_timeout = 600  # dashboard API cache seconds\n```", MAY_12),
            ]
        )
        == []
    )


def test_undated_hits_and_one_message_twice_never_pair():
    text = "I have reached 65% test coverage on my API integration module."
    assert find_versions([(text, None), ("My API integration module test coverage is now 78%.", MAY_12)]) == []
    assert find_versions([(text, MAY_3), (text, MAY_12)]) == []


def test_each_hit_is_in_one_pair_at_most():
    pairs = find_versions(
        [
            ("My API integration module test coverage is now 78%.", MAY_12),
            ("I have reached 65% test coverage on my API integration module.", MAY_3),
            ("Test coverage on the API integration module was 50% at the start.", datetime(2024, 4, 1, 12)),
        ]
    )
    assert len(pairs) == 1 and (pairs[0].newer, pairs[0].older) == (0, 1)


def test_with_a_question_only_pairs_about_it_count_and_with_speakers_only_one_persons():
    coverage = [
        ("I have reached 65% test coverage on my API integration module.", MAY_3),
        ("My API integration module test coverage is now 78%.", MAY_12),
    ]
    assert len(find_versions(coverage, about="What is my test coverage?")) == 1
    assert find_versions(coverage, about="Which colour scheme did I pick?") == []
    assert find_versions(coverage, speakers=["Ada", "Orla"]) == []
    assert len(find_versions(coverage, speakers=["Ada", "Ada"])) == 1


def test_odd_text_never_breaks_the_search():
    odd = [
        "",
        "99:99 at 0:00 PM",
        "1,2,3 and 1,234,567.89 items",
        "v2.0.1 version 3",
        "%%% 5% 5 %",
        "```unterminated 5 apples",
        "never",
        "I haven't",
        "12 12 12 12",
        "’s 3’s",
        "10k users 20K users",
        "\n\n\n",
    ]
    statements = [(text, datetime(2024, 5, day + 1, 12)) for day, text in enumerate(odd)]
    assert isinstance(find_versions(statements, about="How many users and apples?"), list)


COMMITS_150 = "I tagged release v1.0.0 with 150 commits merged into the main branch."
COMMITS_165 = "The main branch has 165 commits merged now, so I want a release checklist."
CHECKLIST = "A release checklist should cover tags, notes and a rollback plan."


def test_the_newer_value_of_what_is_asked_goes_right_above_the_older():
    # best first: the older count, something else, the newer count (said a week later)
    hits = [(COMMITS_150, "Ada", MAY_3), (CHECKLIST, "Ada", MAY_12), (COMMITS_165, "Ada", MAY_12)]
    assert newer_values_first("How many commits are merged into the main branch?", hits) == [2, 0, 1]


def test_values_of_what_is_not_asked_or_of_two_speakers_keep_their_order():
    hits = [(COMMITS_150, "Ada", MAY_3), (COMMITS_165, "Ada", MAY_12)]
    assert newer_values_first("What is in my release checklist?", hits) == [0, 1]  # commits not asked
    assert newer_values_first("How many commits?", [hits[0], (COMMITS_165, "Ben", MAY_12)]) == [0, 1]
    assert newer_values_first("How many commits?", [hits[1], hits[0]]) == [0, 1]  # the newer is first already
    same = [(COMMITS_150, "Ada", MAY_3), (COMMITS_150.replace("I tagged", "We tagged"), "Ada", MAY_12)]
    assert newer_values_first("How many commits?", same) == [0, 1]  # the same value twice


def test_a_when_question_orders_two_dates_of_the_same_meeting_and_each_hit_pairs_once():
    first = ("My Zoom call with the creative director is on April 21 at 3 PM.", "Ada", MAY_3)
    moved = ("The Zoom call with the creative director moved to April 22 at 11 AM.", "Ada", MAY_12)
    again = ("Now the Zoom call is on April 23 at 9 AM.", "Ada", JUNE_1)
    assert newer_values_first("When is my Zoom call with the creative director scheduled?", [first, moved]) == [1, 0]
    # the oldest pairs with the next newer one (moved); the third is left where it was
    assert newer_values_first("When is my Zoom call?", [first, again, moved]) == [2, 0, 1]
