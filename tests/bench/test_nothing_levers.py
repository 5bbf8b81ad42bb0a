"""The levers measured for the "nothing on that" detector (bench/nothing_levers.py): reading the
detail a question asks for, judging it in the hits, and scoring every lever from cached rankings."""

from __future__ import annotations

import json

from bench import nothing_levers as levers


def _conversation(turns: list[str], questions: list[tuple[str, bool, list[str]]]) -> levers.Conversation:
    """A cached conversation whose questions' hits are the given texts, best first, with falling scores."""
    return levers.Conversation(
        {
            "sample_id": "1",
            "turns": [{"text": t} for t in turns],
            "questions": [
                {
                    "question": q,
                    "unanswerable": unanswerable,
                    "speakers": ["Ada", "Orla"],
                    "hits": [{"score": 1.0 - i / 20, "text": t, "speaker": "Ada"} for i, t in enumerate(hits)],
                }
                for q, unanswerable, hits in questions
            ],
        }
    )


def test_the_detail_asked_is_the_noun_the_question_asks_for_not_its_topic():
    assert levers.asked_detail("What specific criteria did I use to prioritize tasks on the Trello board?") == [
        ("criteria",)
    ]
    assert levers.asked_detail("What was the agenda for the Montserrat Writers' Festival?") == [("agenda",)]
    assert levers.asked_detail("Can you share the agenda or structure of the sessions where I practiced?") == [
        ("agenda",),
        ("structure",),
    ]


def test_a_value_or_no_shape_at_all_asks_for_no_detail_word():
    assert levers.asked_detail("How many days passed between the two deadlines?") == []
    assert levers.asked_detail("How did I organize the tasks over the sprint?") == []


def test_the_detail_counts_only_when_one_sentence_tells_it_beside_the_topic():
    trello = "I moved the Trello board to a new workspace. My criteria were effort and risk for each task."
    apart = "We set up the Trello board today.\nSeparately, criteria for hiring are listed in the handbook."
    conversation = _conversation(
        [trello, apart],
        [
            ("What specific criteria did I use to prioritize tasks on the Trello board?", False, [trello]),
            ("What specific criteria did I use to prioritize tasks on the Trello board?", True, [apart]),
        ],
    )
    told, scattered = conversation.questions
    assert levers.detail_beside_topic(told) == 0.0
    assert levers.detail_beside_topic(scattered) == -1.0


def test_words_about_the_conversation_are_not_words_that_must_have_been_said():
    conversation = _conversation(
        ["I deployed the weather app on Friday."],
        [
            (
                "Across our conversations, what did I mention about the weather app?",
                False,
                ["I deployed the weather app on Friday."],
            ),
            ("What did I decide about the weather app's pricing?", True, ["I deployed the weather app on Friday."]),
        ],
    )
    frame, pricing = conversation.questions
    assert levers.never_said(frame) == 0.0
    assert levers.never_said(pricing) < 0.0


def test_every_lever_is_scored_from_a_cache_without_ranking_again(tmp_path, capsys):
    answered = "My Flask app uses SQLAlchemy for the database."
    cached = {
        "beam": [],
        "locomo": [
            {
                "sample_id": "conv-1",
                "turns": [{"text": answered}],
                "questions": [
                    {
                        "question": "Which database does my Flask app use?",
                        "unanswerable": False,
                        "speakers": ["Ada"],
                        "hits": [{"score": 0.9, "text": answered, "speaker": "Ada"}],
                    },
                    {
                        "question": "What specific rationale did I give for choosing Flask?",
                        "unanswerable": True,
                        "speakers": ["Ada"],
                        "hits": [{"score": 0.5, "text": answered, "speaker": "Ada"}],
                    },
                ],
            }
        ],
    }
    cache = tmp_path / "rankings.json"
    cache.write_text(json.dumps(cached), encoding="utf-8")
    levers.main(["--cache", str(cache), "--json"])
    report = json.loads(capsys.readouterr().out)
    locomo = report["locomo"]
    assert (locomo["answerable"], locomo["unanswerable"]) == (1, 1)
    assert set(levers.LEVERS) <= set(locomo)
    assert locomo["asked detail told beside its topic"]["auroc"] == 1.0  # "rationale" is told nowhere
    assert locomo["asked detail told beside its topic"]["nothing_for_unanswerable"] == 1.0
    assert report["beam development"]["answerable"] == 0
