"""BEAM as a second data set: a tiny synthetic chat in BEAM's layout (made here, not copied from
BEAM) goes through the loader, the search measure and the replay measure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdesk.cli.main import main
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.evaluation.beam import ASSISTANT, USER, chat_folders, load_chat, load_chats
from memdesk.core.evaluation.locomo import evaluate_samples
from memdesk.core.evaluation.locomo_replay import FIFO, FIFO_RECALL, shown_in_part
from memdesk.core.evaluation.locomo_replay import evaluate_samples as replay_samples
from memdesk.core.retrieval import learned
from memdesk.core.retrieval.features import FEATURES
from memdesk.core.runtime.scripted import ScriptedRuntime
from tests.evaluation.test_locomo_replay import Store

LONG_PLAN = "\n".join(
    f"Step {n}: configure the worker pool and the retry queue for stage {n} of the rollout." for n in range(1, 40)
)


def message(id_: int, role: str, content: str, anchor: str | None = None) -> dict:
    found = {"role": role, "id": id_, "content": content}
    if anchor:
        found["time_anchor"] = anchor
    return found


def write_chat(folder: Path, *, nested_questions: bool = True) -> Path:
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
                        "I'm starting a budget tracker in Flask with a SQLite database. ->-> 1,1",
                        "March-15-2024",
                    ),
                    message(1, "assistant", "Great, let's plan the budget tracker: models first, then routes."),
                ],
                [
                    message(2, "user", "My first sprint ends on March 29 and covers login."),
                    message(3, "assistant", LONG_PLAN),
                ],
            ],
        },
        {
            "batch_number": 2,
            "time_anchor": None,
            "turns": [
                [
                    message(
                        4,
                        "user",
                        "The dashboard API now answers in about 250ms after caching. ->-> 2,1",
                        "April-05-2024",
                    ),
                    message(5, "assistant", "Caching the aggregates was the right call."),
                ],
            ],
        },
    ]
    questions = {
        "information_extraction": [
            {"question": "When does my first sprint end?", "answer": "March 29", "source_chat_ids": [2]}
        ],
        "knowledge_update": [
            {
                "question": "How fast is the dashboard API?",
                "answer": "250ms",
                "source_chat_ids": {"original_info": [1], "updated_info": [4]},
            }
        ],
        "abstention": [{"question": "What did my manager say?", "ideal_response": "No information."}],
    }
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    target = (
        folder / "probing_questions" / "probing_questions.json"
        if nested_questions
        else folder / "probing_questions.json"
    )
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(questions), encoding="utf-8")
    return folder


def test_a_chat_becomes_a_locomo_sample_with_dated_sessions_and_flattened_evidence(tmp_path):
    sample = load_chat(write_chat(tmp_path / "3"))
    conversation = sample["conversation"]
    assert sample["sample_id"] == "3"
    assert (conversation["speaker_a"], conversation["speaker_b"]) == (USER, ASSISTANT)
    assert conversation["session_1_date_time"] == "12:00 pm on 15 March, 2024"
    assert conversation["session_2_date_time"] == "12:00 pm on 5 April, 2024"
    first = conversation["session_1"][0]
    assert first == {
        "speaker": USER,
        "dia_id": "0",
        "text": "I'm starting a budget tracker in Flask with a SQLite database.",
    }
    assert conversation["session_1"][1]["speaker"] == ASSISTANT
    kinds = {qa["category"]: qa for qa in sample["qa"]}
    assert kinds["knowledge_update"]["evidence"] == ["1", "4"]  # both the original and the update
    assert kinds["information_extraction"]["evidence"] == ["2"]
    assert kinds["abstention"]["evidence"] == []


def test_questions_may_sit_beside_the_chat_and_a_parent_folder_lists_chats_in_numeric_order(tmp_path):
    for name in ("10", "2"):
        write_chat(tmp_path / "chats" / name, nested_questions=False)
    assert [f.name for f in chat_folders([tmp_path / "chats"])] == ["2", "10"]
    assert [s["sample_id"] for s in load_chats([tmp_path / "chats"])] == ["2", "10"]
    with pytest.raises(ValueError, match="not a BEAM chat folder"):
        chat_folders([tmp_path])


def test_search_recall_is_reported_per_question_kind_and_development_chats_apart(tmp_path):
    samples = load_chats([write_chat(tmp_path / "1"), write_chat(tmp_path / "11")])
    report = evaluate_samples(samples, HashingEmbedder(), ks=(1, 10), tuned_on=("1",))
    assert report["questions"] == 4 and report["skipped"] == 2  # abstention has no evidence messages
    fused = report["fused"]
    assert fused["information_extraction"]["n"] == 2
    assert fused["information_extraction"]["recall@10"] == 1.0
    # The share of evidence messages found: the update shares the question's words, the original does not.
    assert fused["knowledge_update"]["recall@10"] == 0.5
    assert fused["tuned"]["n"] == 2 and fused["held_out"]["n"] == 2
    assert fused["held_out/knowledge_update"]["n"] == 1


def test_context_mode_counts_a_long_message_shown_in_part(tmp_path):
    samples = load_chats([write_chat(tmp_path / "1")])
    report = replay_samples(
        samples, ScriptedRuntime(context_window=100_000), Store, variants=(FIFO,), tuned_on=("1",), partly=True
    )
    everything = report["variants"][FIFO]
    assert everything["all"]["evidence_in_context"] == 1.0 and everything["all"]["evidence_partly"] == 1.0
    assert report["tuned_on"] == ["1"]
    assert shown_in_part(LONG_PLAN, "memories: " + LONG_PLAN.splitlines()[7])
    assert not shown_in_part(LONG_PLAN, "memories: Step 8")  # too short a piece to count


def test_the_cli_measures_beam_search(tmp_path, capsys, monkeypatch):
    import memdesk.app.services as services

    monkeypatch.setattr(services, "default_embedder", HashingEmbedder)  # the real model is measured in the README
    write_chat(tmp_path / "chats" / "1")
    assert main(["eval", "beam", str(tmp_path / "chats"), "--no-graph", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["data_set"] == "BEAM" and report["chats"] == ["1"]
    assert report["fused"]["tuned"]["n"] == 2
    assert main(["eval", "beam", str(tmp_path / "nowhere")]) == 2


def test_recall_variant_is_measured_beside_fifo(tmp_path):
    samples = load_chats([write_chat(tmp_path / "12")])
    report = replay_samples(
        samples, ScriptedRuntime(context_window=100_000), Store, variants=(FIFO, FIFO_RECALL), partly=True, tuned_on=()
    )
    assert set(report["variants"]) == {FIFO, FIFO_RECALL}
    assert report["variants"][FIFO]["held_out"]["n"] == 2


def test_search_reports_the_learned_ranking_knowledge_updates_and_both_nothing_judges(tmp_path):
    """One JSON holds every figure issue 34 asks for: recall@k per kind for the hand fusion and,
    when a model ranks, the learned ranking; the newer statement above the older for knowledge
    updates; and the "nothing on that" judgement automatic recall uses beside support.py's alone."""
    samples = load_chats([write_chat(tmp_path / "1"), write_chat(tmp_path / "11")])
    report = evaluate_samples(samples, HashingEmbedder(), ks=(1, 10), tuned_on=("1",))
    shipped = learned.shipped()
    assert shipped is not None and report["model"]["name"] == shipped.name and report["model"]["judge"]
    assert ("learned" in report) == shipped.ranks
    # the update (4) against the original (1), one pair per chat
    assert report["newer_above_older"]["fused"] == {"share": 1.0, "pairs": 2}  # the original shares no word
    for judged in (report["nothing_detector"], report["nothing_detector_by_support"]):
        assert judged["all"]["answerable"] == 4 and judged["all"]["unanswerable"] == 2
        assert set(judged["all"]) >= {"auroc", "nothing_for_answerable", "nothing_for_unanswerable"}
    oldest_first = learned.parse(
        {
            "format": learned.FORMAT,
            "version": learned.FORMAT_VERSION,
            "name": "oldest-first",
            "features": list(FEATURES),
            "kind": "linear",
            "linear": {"weights": [1.0 if f == "recency" else 0.0 for f in FEATURES], "bias": 0.0},
        }
    )
    ranked = evaluate_samples(samples, HashingEmbedder(), ks=(10,), tuned_on=("1",), scorer=oldest_first)
    assert ranked["learned"]["knowledge_update"]["n"] == 2 and ranked["model"]["name"] == "oldest-first"
    assert ranked["newer_above_older"]["learned"] == {"share": 0.0, "pairs": 2}  # the model put the older first
    without = evaluate_samples(samples, HashingEmbedder(), ks=(10,), tuned_on=("1",), scorer=None)
    assert "learned" not in without and "model" not in without
    assert without["nothing_detector"] == without["nothing_detector_by_support"]
