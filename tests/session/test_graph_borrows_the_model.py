"""Graph extraction borrows the model after a turn (its fact stage, with the agent's prompt first)
and gives it back before the session's next job that needs it; the fact stays queued."""

from __future__ import annotations

import threading

import pytest

from memdesk.app.sessions import graph_extraction
from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.runtime.base import ChatMessage
from memdesk.core.runtime.scripted import ScriptedRuntime, call
from memdesk.session.listener import SessionListener

PROMPT = [ChatMessage("system", "You are Sam.")]


@pytest.fixture(scope="module")
def analyser():
    from memdesk.core.graph.nlp import SpacyAnalyser

    return SpacyAnalyser()


class Changes(SessionListener):
    def __init__(self) -> None:
        self.changed = threading.Event()

    def on_graph_changed(self, agent_id: int) -> None:
        self.changed.set()


@pytest.fixture
def conversation(services, clock):
    agent_id = services.create_agent("kim").id
    with services.db.transaction():
        services.memory.recall.add(
            agent_id,
            role="user",
            kind="user_message",
            content="x",
            created_at=clock.now(),
            search_text="My sister Ann moved to Lisbon.",
        )
    return agent_id


@pytest.fixture
def extraction(services, analyser):
    listener = Changes()
    worker = graph_extraction(services, lambda: analyser, listener)
    worker.start()
    yield worker, listener
    worker.close()


def test_after_a_turn_the_model_adds_a_fact_with_the_agents_prompt_first(services, conversation, extraction):
    worker, _listener = extraction
    runtime = ScriptedRuntime(
        [call("record_fact", "", subject="Lisbon", relation="home of", object="Ann")], context_window=4096
    )
    worker.after_turn(conversation, PROMPT, runtime)
    assert worker.wait_until_idle(60)
    assert runtime.prompts[0][0].content == "You are Sam."
    assert [f.relation for f in services.memory.graph.all_facts(conversation) if f.relation == "home of"] == ["home of"]


class BlockingRuntime(ScriptedRuntime):
    def __init__(self) -> None:
        super().__init__(context_window=4096)
        self.started = threading.Event()

    def generate_call(self, request, *, on_event=None, cancel=None):
        self.started.set()
        while not cancel.cancelled:
            threading.Event().wait(0.01)
        raise GenerationCancelled("stopped")


def test_take_back_returns_the_model_and_the_fact_stays_queued(services, conversation, extraction):
    worker, _listener = extraction
    runtime = BlockingRuntime()
    worker.after_turn(conversation, PROMPT, runtime)
    assert runtime.started.wait(60)
    worker.take_back()  # returns once the cancelled call has let go of the model
    assert not worker.lent
    assert worker.wait_until_idle(30)
    pending = services.db.scalar("SELECT COUNT(*) FROM graph_queue WHERE stage = 'facts' AND attempts = 0")
    assert pending == 1
