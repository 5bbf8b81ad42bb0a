"""A question about one speaker shows that speaker's memories first (memdesk.core.agent.recall.speaker)."""

from __future__ import annotations

import json
from datetime import timedelta

from memdesk.core.agent.recall.speaker import OTHERS_FIRST, named_speaker_first
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import ScriptedRuntime, say

SPEAKERS = ["Ana", "Ben"]


def test_the_named_speakers_memories_come_before_all_but_the_others_best():
    found = [f"hit {n}" for n in range(12)]
    said_by = ["Ben"] * 8 + ["Ana"] * 4  # the search ranked Ben's replies first
    arranged = named_speaker_first("What did Ana paint?", found, said_by, SPEAKERS)
    assert arranged == found[:OTHERS_FIRST] + found[8:] + found[OTHERS_FIRST:8]


def test_a_question_naming_no_speaker_or_both_keeps_the_ranking():
    found = ["a", "b", "c"]
    said_by = ["Ben", "Ana", "Ben"]
    assert named_speaker_first("What did we paint?", found, said_by, SPEAKERS) == found
    assert named_speaker_first("What did Ana and Ben both paint?", found, said_by, SPEAKERS) == found


def test_in_the_agent_the_section_leads_with_the_named_speaker(services, make_agent, clock):
    services.settings_store.set("user_name", "Ana")
    runtime = ScriptedRuntime(context_window=8192)
    agent = make_agent("Ben", runtime=runtime, settings=Settings(auto_recall_timeout_ms=60_000))  # not a test of speed
    ids = []
    for n in range(30):
        # Ben's replies match the question's words best: the search ranks them first
        for role, text in (
            ("user", f"Ana's picture {n}: I paint on weekends"),
            ("assistant", f"Paint more, paint lakes, you paint so well ({n})"),
        ):
            content = json.dumps({"type": "user_message", "message": text}) if role == "user" else text
            ids.append(
                services.memory.recall.add(
                    agent.id,
                    role=role,
                    kind="user_message" if role == "user" else "assistant_message",
                    content=content,
                    created_at=clock.now() - timedelta(days=60 - n),
                    search_text=text,
                ).id
            )
    services.agents.update(agent.id, context_start_id=ids[-1] + 1, evicted_count=len(ids))
    runtime.enqueue(say("A lake."))
    agent.send_user_message("What did Ana paint?")
    shown = [m.text for m in agent.last_recall.memories]
    ana = [n for n, text in enumerate(shown) if text.startswith("Ana's")]
    others = [n for n, text in enumerate(shown) if not text.startswith("Ana's")]
    assert ana and others[OTHERS_FIRST:] and max(ana) < others[OTHERS_FIRST]  # Ana's memories before the others' sixth
