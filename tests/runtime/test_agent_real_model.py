"""The whole agent on the real bundled model: every step a valid call, real memory edits and
searches, through llama.cpp in its child process and through an OpenAI-compatible server."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from memdesk.app.agents import open_agent
from memdesk.app.services import open_services
from memdesk.core.agent.settings import AgentSettings
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.base import sampling
from memdesk.core.tools.builtin import default_registry
from memdesk.core.tools.context import AllowAll
from memdesk.core.tools.registry import ToolRegistry

pytestmark = pytest.mark.model

PARAMS = sampling(Settings(temperature=0.3, seed=7, max_answer_tokens=160))


@pytest.fixture
def real_runtime(bundled_runtime):
    """The production path: make_runtime builds llama.cpp in an isolated child process (shared)."""
    return bundled_runtime


@pytest.fixture
def real_services(real_embedder, clock):
    services = open_services(Paths.from_environment(), embedder=real_embedder, clock=clock)
    yield services
    services.close()


def only(*names: str) -> ToolRegistry:
    """A registry limited to some functions: the grammar then forces the model to call one of them."""
    full = default_registry()
    registry = ToolRegistry()
    for name in names:
        registry.add(full.resolve(name))
    return registry


def agent_on(services, runtime, name: str, *, steps: int, auto_recall: bool = True):
    record = services.agents.find(name) or services.create_agent(name, human="The user's name is unknown.")
    agent = open_agent(
        services, record, runtime, consent=AllowAll(), settings=None if auto_recall else Settings(auto_recall=False)
    )
    agent.settings = replace(AgentSettings.from_settings(Settings(max_chained_steps=steps)), params=PARAMS)
    return agent


def assert_valid_calls(services, agent, registry: ToolRegistry) -> None:
    calls = [m for m in services.memory.recall.all(agent.id) if m.kind == "assistant_call"]
    assert calls
    for message in calls:
        data = json.loads(message.content)  # never malformed: the grammar forbids it
        assert registry.resolve(data["function"]) is not None
        assert isinstance(data["params"]["inner_thoughts"], str)


def test_a_full_conversation_is_made_of_valid_calls(real_services, real_runtime):
    agent = agent_on(real_services, real_runtime, "talker", steps=3)
    replies = []
    for text in ("Hi! I'm Ana and I play the cello.", "What do you remember about me?", "Thanks, see you tomorrow."):
        result = agent.send_user_message(text)
        replies += result.replies
        assert result.steps
    assert_valid_calls(real_services, agent, agent.tools)
    assert replies, "the model never used send_message in three turns"
    budget = agent.budget()
    assert budget.used == real_runtime.count_prompt(agent.prompt.parts().chat_messages())


def test_a_memory_edit_through_a_real_call_lands_in_the_store(real_services, real_runtime):
    agent = agent_on(real_services, real_runtime, "editor", steps=1)
    agent.tools = only("core_memory_append")
    before = real_services.memory.core.get(agent.id, "human").value
    result = agent.send_user_message("Please remember this: my name is Ana and I live in Porto.")
    step = result.steps[0]
    assert step.function == "core_memory_append" and step.ok, step.result
    block = real_services.memory.core.get(agent.id, step.arguments["label"])
    assert block.value.endswith(step.arguments["content"]) and block.updated_by == "agent"
    if step.arguments["label"] == "human":
        assert block.value != before


def test_a_search_call_returns_results_to_the_model(real_services, real_runtime):
    # Without automatic recall, which would place the passage itself: a search is then refused as needless.
    agent = agent_on(real_services, real_runtime, "searcher", steps=1, auto_recall=False)
    real_services.memory.archival.insert(agent.id, "Ana's cello teacher is called Mr. Duarte.")
    agent.tools = only("archival_memory_search")
    result = agent.send_user_message("Search your archival memory for my cello teacher.")
    step = result.steps[0]
    assert step.function == "archival_memory_search" and step.ok, step.result
    assert "Duarte" in step.result
    # The result is in the context the model reads at its next step.
    next_prompt = agent.prompt.parts().chat_messages()
    assert any("Duarte" in m.content and '"status": "OK"' in m.content for m in next_prompt)


def test_the_http_runtime_runs_the_same_agent(real_services, http):
    agent = agent_on(real_services, http, "remote", steps=2)
    result = agent.send_user_message("Hi! I'm Ana.")
    assert result.steps
    calls = [m for m in real_services.memory.recall.all(agent.id) if m.kind == "assistant_call"]
    for message in calls:
        data = json.loads(message.content)
        assert agent.tools.resolve(data["function"]) is not None
    # Validated on our side: every step either ran or came back to the model as a failed call.
    assert all(step.ok or step.result for step in result.steps)


def test_memory_edits_do_not_re_evaluate_the_conversation(real_services, real_runtime, monkeypatch):
    """The layout on the real model: after a memory edit, by the agent or by the user, the next
    step evaluates only the tokens that are new, not the message queue above them."""
    agent = agent_on(real_services, real_runtime, "cached", steps=2)
    # A queue well longer than one step's growth, so evaluating it again could not pass for new tokens.
    for text in (
        "Hi! I'm Ana.",
        "I play the cello in an orchestra.",
        "I live in Porto, near the river.",
        "My brother Rui is a chef in Lisbon.",
        "On Sundays we walk along the beach.",
        "I am learning to bake bread.",
    ):
        agent.send_user_message(text)
    queue = agent.budget().tokens("messages")

    # The agent's own edit: the grammar (not the prompt, which stays static) allows only the edit.
    full_specs = agent.prompt.live_specs
    monkeypatch.setattr(agent.prompt, "live_specs", lambda: [s for s in full_specs() if s.name == "core_memory_append"])
    edit = agent.send_user_message("Please remember that my cat is called Tom.").steps[0]
    assert edit.function == "core_memory_append" and edit.ok, edit.result
    block = real_services.memory.core.get(agent.id, edit.arguments["label"])
    # In the block (the grammar allowed only appends, so a heartbeat's second step may append again).
    assert edit.arguments["content"] in block.value and block.updated_by == "agent"
    monkeypatch.setattr(agent.prompt, "live_specs", full_specs)

    def next_step_after(previous):
        step = agent.send_user_message("What do you know about me?").steps[0]
        growth = step.stats.prompt_tokens - previous.stats.prompt_tokens
        return step, growth

    after_own, growth = next_step_after(edit)
    assert after_own.stats.evaluated_tokens <= growth + 4 < queue

    # The user's edit, as in the memory panel: it reaches the model as an update event.
    last = agent.send_user_message("Thanks!").steps[-1]
    real_services.memory.core.set_value(
        agent.id, "human", real_services.memory.core.get(agent.id, "human").value + "\nLoves gardening."
    )
    after_user, growth = next_step_after(last)
    assert after_user.stats.evaluated_tokens <= growth + 4 < agent.budget().tokens("messages")
    update = [m for m in real_services.memory.recall.all(agent.id) if m.kind == "memory_update"][-1]
    assert "Loves gardening." in update.content
    assert_valid_calls(real_services, agent, agent.tools)
