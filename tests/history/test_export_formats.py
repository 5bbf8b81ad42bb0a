"""Each tool's export, recognised from its content and read as the tool wrote it: the branch a
conversation ended on, the original times, the speakers, and what is left out and why."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

from memdesk.core.transfer.history.reading import Export
from tests.history.conftest import DATA, imported


def test_a_chatgpt_zip_imports_the_branch_the_conversation_ended_on(services, agent_id, chatgpt_zip, run_import):
    job = run_import(chatgpt_zip)
    said = [(title, role, text) for title, role, _author, text in imported(services, agent_id)]
    dinner = [s for s in said if s[0] == "Dinner ideas"]
    assert [text for _t, _r, text in dinner] == [
        "Hi! My name is Dana and I live in Lisbon.",
        "Nice to meet you, Dana. Lisbon is lovely.",
        "What should I cook tonight? I'm vegetarian and I love mushrooms.",  # the edited question
        "A mushroom stroganoff would suit you.",  # the regenerated answer the conversation went on from
        "Here is a photo of my fridge.",
        "I see leeks and cream: a leek tart would work too.",
        "The tart serves four.",
    ]
    lines = job.tally.skipped_lines()
    assert "3 × messages on other branches (edited or regenerated) are not imported" in lines
    assert "images and files are not imported" in lines
    assert "tool calls are not imported" in lines and "tool output is not imported" in lines


def test_chatgpt_messages_keep_their_times_and_speakers(services, agent_id, chatgpt_zip, run_import):
    run_import(chatgpt_zip)
    first = services.memory.recall.search_text(agent_id, "My name is Dana").hits[0]
    assert first.created_at == datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
    assert first.role == "user" and first.author is None and first.imported  # the person
    reply = services.memory.recall.search_text(agent_id, "stroganoff").hits[0]
    assert reply.role == "assistant" and reply.author == "ChatGPT"


def test_a_claude_export_keeps_words_and_leaves_tools_and_attachments_out(services, agent_id, run_import):
    job = run_import(DATA / "claude_conversations.json")
    said = imported(services, agent_id)
    assert said[0] == (
        "Trip planning",
        "user",
        None,
        "I'm planning a trip to Kyoto in April. My daughter Mia is coming.",
    )
    assert said[1] == ("Trip planning", "assistant", "Claude", "Kyoto in April means cherry blossoms.")
    assert ("", "user", None, "I'm allergic to peanuts, remember that for recipes.") in said  # text without blocks
    lines = job.tally.skipped_lines()
    assert "tool calls are not imported" in lines and "tool output is not imported" in lines
    assert "2 × attached files and images are not imported (add them as documents)" in lines


def test_an_open_webui_export_follows_the_shown_branch_and_names_the_model(services, agent_id, run_import):
    job = run_import(DATA / "openwebui_chat_export.json")
    said = imported(services, agent_id)
    assert [text for *_rest, text in said] == [
        "My bike chain keeps slipping.",
        "A worn chain or cassette is the usual cause.",
        "This is the cassette.",
        "Those teeth look shark-finned: replace it.",
    ]
    assert said[1][2] == "llama3.1:8b"
    assert "messages on other branches (regenerated or edited) are not imported" in job.tally.skipped_lines()


def test_a_markdown_transcript_is_read_with_its_speakers_and_times(services, agent_id, run_import):
    run_import(DATA / "transcript.md")
    said = services.memory.recall.search_text(agent_id, "favourite vegetable").hits[0]
    assert said.created_at == datetime(2023, 7, 14, 18, 30, tzinfo=UTC) and said.role == "user"
    assert imported(services, agent_id)[1][:3] == ("Garden questions", "assistant", "ChatGPT")


def test_the_format_is_recognised_from_the_content_not_the_name(tmp_path):
    for source, expected in (
        ("chatgpt_conversations.json", "chatgpt"),
        ("claude_conversations.json", "claude"),
        ("openwebui_chat_export.json", "open-webui"),
        ("transcript.md", "transcript"),
    ):
        renamed = tmp_path / f"{expected}.dat"
        shutil.copy(DATA / source, renamed)
        assert Export(renamed).format == expected
