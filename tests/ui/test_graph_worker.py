"""The extraction thread borrows the model after a turn and gives it back before the next."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QThread

from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.runtime.base import ChatMessage
from memdesk.core.runtime.scripted import ScriptedRuntime, call
from memdesk.ui.workers.graph import GraphWorker


@pytest.fixture(scope="module")
def analyser():
    from memdesk.core.graph.nlp import SpacyAnalyser

    return SpacyAnalyser()


class FakeAgent:
    def __init__(self, agent_id: int, runtime) -> None:
        self.id, self.runtime = agent_id, runtime

    def prompt_prefix(self) -> list[ChatMessage]:
        return [ChatMessage("system", "You are Sam.")]


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


def test_after_a_turn_the_model_adds_a_fact_with_the_agents_prompt_first(
    services, clock, analyser, conversation, qtbot
):
    worker = GraphWorker(services.paths.database, lambda: analyser, clock)
    runtime = ScriptedRuntime(
        [call("record_fact", "", subject="Lisbon", relation="home of", object="Ann")], context_window=4096
    )
    with qtbot.waitSignal(worker.changed):
        worker.after_turn(FakeAgent(conversation, runtime))  # same thread: runs at once
    assert runtime.prompts[0][0].content == "You are Sam."
    assert [f.relation for f in services.memory.graph.all_facts(conversation) if f.relation == "home of"] == ["home of"]
    worker.stopped = True


class BlockingRuntime(ScriptedRuntime):
    def __init__(self) -> None:
        super().__init__(context_window=4096)
        self.started = threading.Event()

    def generate_call(self, request, *, on_event=None, cancel=None):
        self.started.set()
        while not cancel.cancelled:
            threading.Event().wait(0.01)
        raise GenerationCancelled("stopped")


def test_preempt_takes_the_model_back_and_the_fact_stays_queued(services, clock, analyser, conversation, qtbot):
    worker = GraphWorker(services.paths.database, lambda: analyser, clock)
    thread = QThread()
    worker.moveToThread(thread)
    thread.start()
    try:
        runtime = BlockingRuntime()
        worker.after_turn(FakeAgent(conversation, runtime))
        assert runtime.started.wait(60)
        worker.preempt()  # returns once the cancelled call has let go of the model
        assert worker._runtime is None
        pending = services.db.scalar("SELECT COUNT(*) FROM graph_queue WHERE stage = 'facts' AND attempts = 0")
        assert pending == 1
    finally:
        worker.stopped = True
        thread.quit()
        thread.wait(10_000)
