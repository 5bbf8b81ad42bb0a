"""Replies that copy, on the real bundled model (issue 35, found as a new user). Small models
answer with the user's message or say their previous reply again; the bundled model does it in
the issue's own conversation (without the check it answered three of the four messages with the
first one, word for word).
With the check on, no reply it gives copies the user's message or a recent reply: the copy is
generated once more with llama.cpp's DRY sampler primed with what it copied. The prompt is
MemDesk's, untouched: nothing here is tuned to this model."""

from __future__ import annotations

import dataclasses

import pytest

from memdesk.core.agent.observer import AgentObserver
from memdesk.core.agent.repetition import REPEATED, copied
from tests.conftest import PATIENT_RECALL_MS

pytestmark = pytest.mark.model

CONVERSATION = (
    "Hi, I am Ada. I live in Lisbon and I love gardening. My sister Ines is a doctor in Porto.",
    "What does my sister do?",
    "Where do I live, and what is my sister's name?",
    "What do you remember about me?",
)


#: The recent messages checked (the repeat_check_messages setting's default).
RECENT = 6


class Regenerations(AgentObserver):
    def __init__(self) -> None:
        self.count = 0

    def on_event(self, kind: str, text: str) -> None:
        self.count += kind == REPEATED


def test_no_reply_of_the_bundled_model_copies_the_user_or_itself(services, make_agent, bundled_runtime):
    settings = dataclasses.replace(services.settings, seed=1, auto_recall_timeout_ms=PATIENT_RECALL_MS)
    observer = Regenerations()
    agent = make_agent("sam", runtime=bundled_runtime, settings=settings, observer=observer)
    said: list[str] = []  # newest first, as the check reads them
    copies = []
    for text in CONVERSATION:
        said.insert(0, text)
        replies = agent.send_user_message(text).replies
        copies += [reply for reply in replies[:1] if copied(reply, said[:RECENT])]
        said[:0] = reversed(replies)
    assert copies == []
    # How often it copied first (observer.count) is not asserted: seeded sampling still follows the
    # CPU's arithmetic (which SIMD path llama.cpp takes), so on some machines this conversation
    # draws no copy at all. The regeneration itself is specified with a scripted model in
    # test_copied_replies.py; here the claim is the real model's replies.
