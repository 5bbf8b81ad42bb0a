"""Each memory function, called by the model through the real loop."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import call, say


def result_of(services, agent):
    """The latest function result other than a send_message's."""
    results = [
        m
        for m in services.memory.recall.all(agent.id)
        if m.kind == "function_result" and m.function_name != "send_message"
    ]
    return json.loads(results[-1].content)


def run_call(agent, runtime, function, **arguments):
    """One call; a failure earns a heartbeat, so a reply is queued for the retry step too."""
    runtime.enqueue(call(function, "thinking", False, **arguments), say("ok"))
    result = agent.send_user_message("please")
    runtime.clear()
    return result


# --- core memory -----------------------------------------------------------------------------
def test_core_memory_append_adds_a_line(services, runtime, make_agent):
    agent = make_agent(human="Name: Ana")
    run_call(agent, runtime, "core_memory_append", label="human", content="Likes jazz")
    assert services.memory.core.get(agent.id, "human").value == "Name: Ana\nLikes jazz"


def test_core_memory_replace_needs_an_exact_match_and_can_delete(services, runtime, make_agent):
    agent = make_agent(human="Name: Ana\nLives in Lisbon")
    run_call(agent, runtime, "core_memory_replace", label="human", old_content="Lisbon", new_content="Porto")
    assert services.memory.core.get(agent.id, "human").value == "Name: Ana\nLives in Porto"
    run_call(agent, runtime, "core_memory_replace", label="human", old_content="lives in porto", new_content="x")
    assert result_of(services, agent)["status"] == "Failed"
    run_call(agent, runtime, "core_memory_replace", label="human", old_content="Lives in Porto", new_content="")
    assert services.memory.core.get(agent.id, "human").value == "Name: Ana"


def test_an_edit_over_the_limit_fails_and_leaves_the_block_untouched(services, runtime, make_agent):
    agent = make_agent()
    services.memory.core.configure(agent.id, "human", limit=60)
    before = services.memory.core.get(agent.id, "human").value
    run_call(agent, runtime, "core_memory_append", label="human", content="x" * 100)
    outcome = result_of(services, agent)
    assert outcome["status"] == "Failed" and "over its limit of 60" in outcome["message"]
    assert services.memory.core.get(agent.id, "human").value == before


def test_read_only_blocks_refuse_the_model_but_not_the_user(services, runtime, make_agent):
    agent = make_agent()
    services.memory.core.create(agent.id, "rules", "Never share secrets.", read_only=True)
    run_call(agent, runtime, "core_memory_append", label="rules", content="Share everything.")
    assert "read-only" in result_of(services, agent)["message"]
    block = services.memory.core.set_value(agent.id, "rules", "Be kind.")
    assert block.value == "Be kind." and block.read_only


def test_unknown_block_names_the_existing_ones(services, runtime, make_agent):
    agent = make_agent()
    run_call(agent, runtime, "core_memory_append", label="diary", content="x")
    assert "blocks: persona, human" in result_of(services, agent)["message"]


def test_core_memory_appears_in_the_prompt_with_its_fill_level(services, runtime, make_agent):
    agent = make_agent(human="Name: Ana")
    runtime.enqueue(say("hi"))
    agent.send_user_message("hi")
    memory = runtime.prompts[0][1].content  # the memory section follows the static system message
    assert memory.startswith("### Memory")
    assert (
        '<human characters="9/2000" description="What you know about the user: facts they share with you,'
        ' one per line.">\nName: Ana\n</human>' in memory
    )


def test_a_new_human_block_is_empty_and_appended_facts_stand_alone(services, runtime, make_agent):
    agent = make_agent()
    block = services.memory.core.get(agent.id, "human")
    assert block.value == "" and block.description.startswith("What you know about the user")
    run_call(agent, runtime, "core_memory_append", label="human", content="Name: Ana")
    assert services.memory.core.get(agent.id, "human").value == "Name: Ana"


# --- recall memory ---------------------------------------------------------------------------
def test_conversation_search_puts_exact_matches_first_newest_first_and_pages(services, runtime, make_agent, clock):
    agent = make_agent()
    for day in range(7):
        clock.advance(days=1)
        runtime.enqueue(say(f"Noted, day {day}."))
        agent.send_user_message(f"Day {day}: my DOG Rex did something")
    run_call(agent, runtime, "conversation_search", query="dog rex")
    page0 = result_of(services, agent)["message"].splitlines()
    assert page0[0].startswith("Showing 5 of ") and "(page 1/" in page0[0]
    assert [line.split("Day ")[1][0] for line in page0[1:]] == ["6", "5", "4", "3", "2"]
    run_call(agent, runtime, "conversation_search", query="dog rex", page=1)
    page1 = result_of(services, agent)["message"].splitlines()
    assert "(page 2/" in page1[0]
    assert "Day 1:" in page1[1] and "Day 0:" in page1[2]  # the case-insensitive matches come before related ones


def test_conversation_search_finds_text_in_any_script(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue(say("ok"))
    agent.send_user_message("Meu cachorro se chama ÉRICO")
    run_call(agent, runtime, "conversation_search", query="érico")
    assert "Meu cachorro se chama ÉRICO" in result_of(services, agent)["message"].splitlines()[1]


def test_conversation_search_date_is_inclusive_and_validates_dates(services, runtime, make_agent, clock):
    agent = make_agent()
    for day in (1, 2, 3):
        clock.set(datetime(2026, 11, day, 12, tzinfo=UTC))
        runtime.enqueue(say("ok"))
        agent.send_user_message(f"message on day {day}")
    run_call(agent, runtime, "conversation_search_date", start_date="2026-11-02", end_date="2026-11-03")
    found = result_of(services, agent)["message"]
    assert "day 2" in found and "day 3" in found and "day 1" not in found
    run_call(agent, runtime, "conversation_search_date", start_date="yesterday", end_date="2026-11-03")
    assert (
        "YYYY-MM-DD" in result_of(services, agent)["message"]
        or "like 2026-11-30" in result_of(services, agent)["message"]
    )


def test_evicted_messages_remain_searchable(services, runtime, make_agent):
    # Without automatic recall: with it, the memories it places make a search idle (chain.py).
    agent = make_agent(settings=Settings(auto_recall=False))
    runtime.enqueue(say("Nice name."))
    agent.send_user_message("My cat is called Zorro")
    services.agents.update(agent.id, context_start_id=10_000, evicted_count=3)  # everything out of context
    run_call(agent, runtime, "conversation_search", query="zorro")
    assert "My cat is called Zorro" in result_of(services, agent)["message"]


# --- archival memory -------------------------------------------------------------------------
def test_archival_insert_then_search_finds_the_passage(services, runtime, make_agent):
    agent = make_agent()
    run_call(agent, runtime, "archival_memory_insert", content="Ana's sister Marta lives in Berlin and plays cello.")
    assert result_of(services, agent)["status"] == "OK"
    run_call(agent, runtime, "archival_memory_search", query="Where does Marta live?")
    found = result_of(services, agent)["message"]
    assert found.startswith("Showing 1 of 1 results") and "Berlin" in found


def test_archival_search_pages_through_results(services, runtime, make_agent):
    agent = make_agent()
    for index in range(12):
        services.memory.archival.insert(agent.id, f"Fact number {index} about gardening and tomatoes.")
    run_call(agent, runtime, "archival_memory_search", query="gardening tomatoes", page=2)
    found = result_of(services, agent)["message"]
    assert found.startswith("Showing 2 of 12 results (page 3/3):")


def test_long_archival_inserts_are_chunked(services, runtime, make_agent):
    agent = make_agent()
    text = " ".join(f"Sentence {i} is about the history of the city." for i in range(200))
    run_call(agent, runtime, "archival_memory_insert", content=text)
    assert services.memory.archival.count(agent.id) > 1
    assert "passages" in result_of(services, agent)["message"]


def test_agents_do_not_see_each_others_memories(services, runtime, make_agent):
    first = make_agent("first")
    second = make_agent("second")
    services.memory.archival.insert(first.id, "The secret word is papaya.")
    runtime.enqueue(say("ok"))
    first.send_user_message("the password is mango")
    run_call(second, runtime, "archival_memory_search", query="secret word")
    assert "No results" in result_of(services, second)["message"]
    run_call(second, runtime, "conversation_search", query="mango")
    assert "No results" in result_of(services, second)["message"]


def test_message_chatgpt_asks_the_same_model_without_memory(services, runtime, make_agent):
    agent = make_agent()
    runtime.enqueue_summary("Paris.")
    run_call(agent, runtime, "message_chatgpt", message="What is the capital of France?")
    assert result_of(services, agent)["message"] == "Paris."
    plain = runtime.text_prompts[-1]
    assert [m.role for m in plain] == ["system", "user"] and "core memory" not in plain[0].content.lower()
