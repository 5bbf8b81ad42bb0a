"""`memdesk eval beam --mode versions`: on a tiny synthetic chat in BEAM's layout (made here), a
knowledge update and a contradiction are shown newest first and marked by automatic recall with
the ordering, and not without it."""

from __future__ import annotations

import json
from pathlib import Path

from memdesk.cli.main import main
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.evaluation.beam import load_chats
from memdesk.core.evaluation.beam_versions import evaluate_versions
from tests.evaluation.test_beam_eval import message


def write_chat(folder: Path) -> Path:
    folder.mkdir(parents=True)
    chat = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    message(
                        0,
                        "user",
                        "The dashboard API response time averages 400ms on the staging server.",
                        "March-15-2024",
                    ),
                    message(1, "assistant", "That is slow for a dashboard; cache the aggregates."),
                ],
                [
                    message(2, "user", "I deployed the budget tracker to Render with Gunicorn yesterday."),
                    message(3, "assistant", "Nice, keep the worker count small on the free plan."),
                ],
            ],
        },
        {
            "batch_number": 2,
            "time_anchor": None,
            "turns": [
                [
                    message(
                        4, "user", "After caching, the dashboard API response time now averages 250ms.", "April-05-2024"
                    ),
                    message(5, "assistant", "A good gain from caching."),
                ],
                [
                    message(6, "user", "I have never deployed the budget tracker to Render, how should I start?"),
                    message(7, "assistant", "Start with a build command and a start command."),
                ],
            ],
        },
    ]
    questions = {
        "knowledge_update": [
            {
                "question": "What is the average response time of the dashboard API?",
                "source_chat_ids": {"original_info": [0], "updated_info": [4]},
            }
        ],
        "contradiction_resolution": [
            {
                "question": "Have I deployed the budget tracker to Render?",
                "source_chat_ids": {"first_statement": [2], "second_statement": [6]},
            }
        ],
        "information_extraction": [{"question": "What did you suggest for the free plan?", "source_chat_ids": [3]}],
    }
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    (folder / "probing_questions.json").write_text(json.dumps(questions), encoding="utf-8")
    return folder


def test_updates_and_contradictions_are_shown_newest_first_and_marked_only_with_the_ordering(tmp_path):
    report = evaluate_versions(load_chats([write_chat(tmp_path / "1")]), HashingEmbedder())
    before, after = report["before"], report["after"]
    assert after["all"]["questions"] == 2
    assert after["knowledge_update"] == {
        "questions": 1,
        "both_shown": 1.0,
        "newest_first": 1.0,
        "newest_first_marked": 1.0,
        "right_kind": 1.0,
    }
    assert (
        after["contradiction_resolution"]["newest_first_marked"] == 1.0
        and after["contradiction_resolution"]["right_kind"] == 1.0
    )
    assert before["all"]["both_shown"] == 1.0 and before["all"]["newest_first_marked"] == 0.0
    assert after["marked_elsewhere"] is not None  # the other question's section was read too


def test_the_cli_reports_the_versions_mode(tmp_path, capsys, monkeypatch):
    import memdesk.app.services as services

    monkeypatch.setattr(services, "default_embedder", HashingEmbedder)
    write_chat(tmp_path / "chats" / "1")
    assert main(["eval", "beam", str(tmp_path / "chats"), "--mode", "versions", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["data_set"] == "BEAM" and report["after"]["all"]["newest_first_marked"] == 1.0
    assert main(["eval", "beam", str(tmp_path / "chats"), "--mode", "versions"]) == 0
    assert "newest_first_marked" in capsys.readouterr().out
