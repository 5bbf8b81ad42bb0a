"""The name the user gave MemDesk is in every agent's human block (issue 35, found as a new user:
the welcome's name never reached core memory): written at the next user turn, by the user as the
history says, replaced when the name changes, never twice, never over what the block says of the
user already, and not brought back after the user forgot it."""

from __future__ import annotations

from memdesk.app.operations import open_forgetting
from memdesk.core.runtime.scripted import say


def turn(agent, runtime, text: str = "Hi") -> None:
    runtime.enqueue(say("Hello!"))
    agent.send_user_message(text)


def human(services, agent) -> str:
    return services.memory.core.get(agent.id, "human").value


def test_the_name_is_a_line_of_the_human_block_at_the_next_turn(services, make_agent, runtime):
    agent = make_agent("sam")
    services.memory.core.set_value(agent.id, "human", "Likes tea")
    services.settings_store.set("user_name", "Ada")
    turn(agent, runtime)
    assert human(services, agent) == "Name: Ada\nLikes tea"
    assert any("Name: Ada" in m.content for m in runtime.prompts[-1])  # the model saw it for this reply
    change = services.memory.archival.history.for_agent(agent.id)[0]
    assert change.source == "user" and change.note == "your name, as you gave it"
    turn(agent, runtime)
    assert human(services, agent) == "Name: Ada\nLikes tea"  # once


def test_a_new_name_replaces_the_line_and_keeps_the_rest(services, make_agent, runtime):
    agent = make_agent("sam")
    services.settings_store.set("user_name", "Ada")
    turn(agent, runtime)
    services.memory.core.set_value(agent.id, "human", human(services, agent) + "\nLives in Lisbon")
    services.settings_store.set("user_name", "Ada Lovelace")
    turn(agent, runtime)
    assert human(services, agent) == "Name: Ada Lovelace\nLives in Lisbon"


def test_a_block_that_names_the_user_already_is_left_as_it_is(services, make_agent, runtime):
    agent = make_agent("sam")
    services.memory.core.set_value(agent.id, "human", "The user is called Ada and likes tea")
    services.settings_store.set("user_name", "ada")
    turn(agent, runtime)
    assert human(services, agent) == "The user is called Ada and likes tea"


def test_a_forgotten_name_is_not_written_again_until_it_changes(services, make_agent, runtime):
    agent = make_agent("sam")
    services.settings_store.set("user_name", "Ada")
    turn(agent, runtime)
    open_forgetting(services).apply(agent.id, "Ada")
    assert "Ada" not in human(services, agent)
    turn(agent, runtime, "Good morning")
    assert "Ada" not in human(services, agent)
    services.settings_store.set("user_name", "Addie")
    turn(agent, runtime)
    assert human(services, agent).startswith("Name: Addie")
