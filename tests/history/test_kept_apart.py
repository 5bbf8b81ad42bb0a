"""Imported conversations in recall memory: found by every search, automatic recall included,
never part of the chat the agent holds (its context window, its transcript, the replies it owes);
imported once however often the export comes in, a newer export adding only what is new."""

from __future__ import annotations

import json

from memdesk.core.agent.conversation_view import conversation_entries
from memdesk.core.agent.recall.sources import ConversationSource
from memdesk.core.agent.unanswered import owed_on_open
from memdesk.core.runtime.scripted import say
from memdesk.core.transfer.history.preview import Selection
from tests.history.conftest import DATA, imported, zipped


def test_imported_messages_are_searchable_and_out_of_the_chat(services, make_agent, runtime, chatgpt_zip, run_import):
    agent = make_agent("sam")
    runtime.enqueue(say("Hello!"))
    agent.send_user_message("Hi there")
    run_import(chatgpt_zip, agent=agent.id)
    recall = services.memory.recall
    assert recall.search_text(agent.id, "stroganoff").hits  # conversation_search finds it
    record = services.agents.get(agent.id)
    in_context = recall.since(agent.id, record.context_start_id)
    assert [m.search_text for m in in_context if m.kind == "user_message"] == ["Hi there"]
    assert not any(m.imported for m in recall.all(agent.id))
    assert all("Lisbon" not in e.text for e in conversation_entries(recall.all(agent.id)))  # the transcript
    assert recall.count(agent.id) == len(recall.all(agent.id)) and recall.imported_count(agent.id) == 9
    assert owed_on_open(services.db, recall, agent.id) is None  # nobody is owed a reply for ChatGPT's questions


def test_automatic_recall_finds_imported_conversations_of_a_new_agent(services, make_agent, chatgpt_zip, run_import):
    agent = make_agent("sam")
    run_import(chatgpt_zip, agent=agent.id)
    record = services.agents.get(agent.id)
    found = ConversationSource(services.memory.recall).find(
        agent.id, "what do I like to cook with mushrooms?", first_in_context=record.context_start_id, limit=5
    )
    assert found and "mushroom" in found[0].text.lower()
    assert found[0].where in ("user, imported chat", "ChatGPT, imported chat")


def test_a_reply_after_the_import_brings_the_imported_memory_into_the_prompt(
    services, make_agent, runtime, chatgpt_zip, run_import
):
    agent = make_agent("sam")
    run_import(chatgpt_zip, agent=agent.id)
    runtime.enqueue(say("Stroganoff it is."))
    agent.send_user_message("Remind me: which mushroom dish did you suggest?")
    prompt = "\n".join(m.content for m in runtime.prompts[-1])
    assert "mushroom stroganoff" in prompt.lower() and "imported chat" in prompt


def test_importing_the_same_export_again_adds_nothing(services, agent_id, chatgpt_zip, run_import):
    run_import(chatgpt_zip)
    first = imported(services, agent_id)
    again = run_import(chatgpt_zip).run()
    assert imported(services, agent_id) == first and again.messages_added == 0


def test_a_newer_export_adds_only_what_is_new(services, agent_id, tmp_path, run_import):
    conversations = json.loads((DATA / "chatgpt_conversations.json").read_text(encoding="utf-8"))
    run_import(zipped(tmp_path, conversations, "old.zip"))
    moving = conversations[0]
    moving["mapping"]["a1"]["children"] = ["u2"]
    moving["mapping"]["u2"] = {
        "id": "u2",
        "parent": "a1",
        "children": [],
        "message": {
            "id": "u2",
            "author": {"role": "user", "name": None, "metadata": {}},
            "create_time": moving["create_time"] + 86400,
            "content": {"content_type": "text", "parts": ["The new flat has a balcony."]},
            "recipient": "all",
            "metadata": {},
        },
    }
    moving["current_node"] = "u2"
    before = len(imported(services, agent_id))
    progress = run_import(zipped(tmp_path, conversations, "new.zip")).run()
    after = imported(services, agent_id)
    assert len(after) == before + 1 and after[-1] == ("Moving day", "user", None, "The new flat has a balcony.")
    assert progress.messages_added == 1


def test_conversations_are_chosen_by_title_or_dates(services, agent_id, chatgpt_zip, run_import):
    run_import(chatgpt_zip, Selection(titles=("dinner",)))
    assert {title for title, *_ in imported(services, agent_id)} == {"Dinner ideas"}
    run_import(chatgpt_zip, Selection(since=__import__("datetime").date(2024, 6, 1)))
    assert {title for title, *_ in imported(services, agent_id)} == {"Dinner ideas", "Moving day"}
