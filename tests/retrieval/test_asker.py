"""A question about oneself ("what is my deadline?") finds what the asker said before the agent's
replies about it; a question about something else, or naming a speaker, keeps the order it had."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.memory.recall import RecallMemory
from memdesk.core.retrieval import MessageRanker, VectorIndex
from memdesk.core.retrieval.asker import about_oneself

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def conversation(db, user_name: str):
    recall = RecallMemory(
        db, HashingEmbedder(), ranker=MessageRanker(db, HashingEmbedder(), VectorIndex(db), user_name=lambda: user_name)
    )
    db.execute("UPDATE agents SET name = 'Sam' WHERE id = 1")

    def said(role, text, days):
        return recall.add(
            1,
            role=role,
            kind="user_message" if role == "user" else "assistant_message",
            content=text,
            search_text=text,
            created_at=START + timedelta(days=days),
        ).id

    own = said("user", "The deadline of my first sprint is April 5.", 0)
    reply = said(
        "assistant",
        "A sprint deadline: plan the sprint backlog so the sprint deadline of the first sprint holds.",
        0.01,
    )
    for n in range(6):
        said("user" if n % 2 else "assistant", f"Small talk number {n} about the weather", 2 + n)
    return recall, own, reply


def test_the_askers_own_statement_comes_before_the_agents_reply_about_it(db):
    recall, own, reply = conversation(db, "")  # no name set: the user's messages are the ones without an author
    assert [r.id for r in recall.rank(1, "When is the deadline of my first sprint?", dense=False)][:2] == [own, reply]
    assert [r.id for r in recall.rank(1, "When is the deadline of the first sprint?", dense=False)][:2] == [reply, own]


def test_with_the_users_name_set_the_named_users_messages_are_the_askers(db):
    recall, own, reply = conversation(db, "Ana")
    assert recall.rank(1, "When is the deadline of my first sprint?", dense=False)[0].id == own
    assert (
        recall.rank(1, "When did Sam say the deadline of my first sprint is?", dense=False)[0].id == reply
    )  # a named speaker wins


def test_first_person_words_are_recognised_in_any_case_and_apostrophe():
    assert all(
        about_oneself(q) for q in ("What is my deadline?", "Have I ever used Zotero?", "I’ve said what?", "tell me")
    )
    assert not any(
        about_oneself(q) for q in ("What is the deadline?", "Which library is used in this project?", "iMac or PC?")
    )
