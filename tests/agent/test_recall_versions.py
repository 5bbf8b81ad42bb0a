"""Newest version first: when automatic recall finds an older and a newer statement of one fact,
the section shows both with their dates, the newer first, each marked as an update or a
contradiction; everything else keeps its rank order."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from memdesk.core.agent.recall.sources import Memory, excerpt
from memdesk.core.agent.recall.versions import newest_first
from memdesk.core.runtime.scripted import say


def evicted(services, agent, clock, texts: list[str], gap_days: int = 9) -> None:
    """Old user messages said ``gap_days`` apart, already out of the context window."""
    ids = []
    for text in texts:
        ids.append(
            services.memory.recall.add(
                agent.id,
                role="user",
                kind="user_message",
                content=json.dumps({"type": "user_message", "message": text}),
                created_at=clock.now(),
                search_text=text,
            ).id
        )
        clock.advance(days=gap_days)
    services.agents.update(agent.id, context_start_id=ids[-1] + 1, evicted_count=len(ids))


def section(runtime) -> list[str]:
    return json.loads(runtime.prompts[-1][-1].content)["memories"]


def test_an_update_is_shown_newest_first_with_both_dates(services, runtime, make_agent, clock):
    agent = make_agent()
    old_day = clock.now()
    evicted(
        services,
        agent,
        clock,
        [
            "I pushed the budget tracker to the GitHub repository with 150 commits merged into the main branch.",
            "I like green tea in the morning.",
            "The commits merged into the main branch of the budget tracker repository have now reached 165.",
        ],
    )
    new_day = old_day + timedelta(days=18)
    runtime.enqueue(say("165."))
    agent.send_user_message("How many commits have been merged into the main branch of my repository?")
    lines = [line for line in section(runtime) if "commits" in line]
    day = lambda at: f"{at.day} {at:%b %Y}"  # noqa: E731
    assert lines == [
        f"[{day(new_day)}, user; update of {day(old_day)}] The commits merged into the main branch of the budget"
        " tracker repository have now reached 165.",
        f"[{day(old_day)}, user; updated {day(new_day)}] I pushed the budget tracker to the GitHub repository with 150"
        " commits merged into the main branch.",
    ]


def test_a_contradiction_is_marked_as_one(services, runtime, make_agent, clock):
    agent = make_agent()
    evicted(
        services,
        agent,
        clock,
        [
            "Flask-Login v0.6.2 was integrated for session management in my budget tracker.",
            "I have never integrated Flask-Login for session management in the budget tracker.",
        ],
    )
    runtime.enqueue(say("You said both."))
    agent.send_user_message("Have I integrated Flask-Login for session management?")
    first, second = section(runtime)[:2]
    assert "; contradicts " in first and "never integrated" in first
    assert "; contradicted " in second and "was integrated" in second


def test_hits_without_a_second_version_keep_their_rank_order_unmarked(services, runtime, make_agent, clock):
    agent = make_agent()
    evicted(services, agent, clock, ["My basil wilts in the afternoon sun.", "I water the basil every morning."])
    runtime.enqueue(say("Shade it."))
    agent.send_user_message("Why does my basil wilt?")
    lines = section(runtime)
    assert lines[0].split("] ")[1] == "My basil wilts in the afternoon sun." and all(
        "; update" not in line and "contradict" not in line for line in lines
    )


def test_the_pair_moves_to_the_better_place_of_the_two():
    at = datetime(2024, 5, 3, 12)
    hits = [
        Memory("conversation", "message:1", "I have reached 65% test coverage on my API integration module.", at),
        Memory("conversation", "message:2", "I like green tea.", at),
        Memory("conversation", "message:3", "Something else entirely.", at),
        Memory(
            "conversation", "message:4", "My API integration module test coverage is now 78%.", at + timedelta(days=5)
        ),
    ]
    asked = "What is my API test coverage?"
    assert [m.ref for m in newest_first(asked, hits)] == ["message:4", "message:1", "message:2", "message:3"]
    assert [m.version for m in newest_first(asked, hits)][:2] == ["update of 3 May 2024", "updated 8 May 2024"]
    assert newest_first(asked, hits[1:3]) == hits[1:3]


def test_only_versions_of_what_the_message_asks_about_and_of_one_speaker_are_marked():
    at = datetime(2024, 5, 3, 12)
    old = Memory(
        "conversation", "message:1", "I have reached 65% test coverage on my API integration module.", at, "Ada"
    )
    new = Memory(
        "conversation",
        "message:2",
        "My API integration module test coverage is now 78%.",
        at + timedelta(days=5),
        "Ada",
    )
    assert all(not m.version for m in newest_first("Which colour scheme did I pick for the dashboard?", [old, new]))
    other = Memory("conversation", "message:2", new.text, new.at, "Orla")
    assert all(not m.version for m in newest_first("What is my API test coverage?", [old, other]))


def test_the_note_around_a_long_messages_part_is_not_read_as_a_statement():
    at = datetime(2024, 5, 3, 12)
    notes = [
        excerpt("x" * 900 + "\nI like green tea in the morning.\n" + "y" * 900, (902, 935), at),
        excerpt("z" * 900 + "\nThe garden needs water on Sundays.\n" + "w" * 900, (902, 937), at + timedelta(days=4)),
    ]
    hits = [
        Memory("conversation", f"message:{n}", text, at + timedelta(days=4 * n), "Ada") for n, text in enumerate(notes)
    ]
    # both notes say "part of a 1,8xx-character message; conversation_search_date ... shows it whole"
    assert all(not m.version for m in newest_first("Which conversation_search date shows the whole message?", hits))
