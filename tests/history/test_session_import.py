"""An import as the session's background work: a message sent meanwhile is answered first, the
import goes on after it, and an import a close cut short resumes when the agent opens again."""

from __future__ import annotations

import json
import threading
import time

import pytest

from memdesk.app.services import open_services
from memdesk.core.base.paths import Paths
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.runtime.scripted import ScriptedRuntime, say
from memdesk.session.listener import SessionListener
from tests.history.test_damaged_exports import chat
from tests.session.drivers import started_session


class SlowEmbedder(HashingEmbedder):
    """Embedding as slow as a real model on a busy machine, so the import is still going."""

    def embed(self, texts):
        time.sleep(0.002 * len(texts))
        return super().embed(texts)


class Heard(SessionListener):
    def __init__(self) -> None:
        self.events: list[str] = []
        self.opened = threading.Event()
        self.finished = threading.Event()
        self.progress = threading.Event()
        self.errors: list[Exception] = []

    def on_agent_opened(self, agent_id):
        self.opened.set()

    def on_import_progress(self, progress):
        self.events.append("import")
        self.progress.set()

    def on_import_finished(self, agent_id, import_id, proposals):
        self.events.append("finished")
        self.finished.set()

    def on_turn_finished(self, result):
        self.events.append("turn")

    def on_failed(self, error):
        self.errors.append(error)


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([chat(n, words=20) for n in range(600)]), encoding="utf-8")
    return path


@pytest.fixture
def session_for(services):
    sessions = []

    def start(agent_id: int, runtime: ScriptedRuntime):
        heard = Heard()
        session = started_session(
            services,
            heard,
            agent_id,
            make_runtime=lambda _settings: runtime,
            open_session_services=lambda: open_services(
                Paths.from_environment(), embedder=SlowEmbedder(), clock=services.clock
            ),
        )
        sessions.append(session)
        assert heard.opened.wait(20)
        return session, heard

    yield start
    for session in sessions:
        session.close()


def test_a_message_sent_during_an_import_is_answered_first(services, agent_id, export, session_for):
    runtime = ScriptedRuntime([say("Hello! I am here.")] * 50, context_window=32768)  # and any idle turn
    session, heard = session_for(agent_id, runtime)
    session.import_history(agent_id, export)
    assert heard.progress.wait(20)
    turn = session.send("Hi, are you there?")
    assert turn.done.wait(30)
    answered_at = len(heard.events)
    assert "finished" not in heard.events[:answered_at]  # the import did not run to its end first
    assert heard.finished.wait(120) and not heard.errors
    assert heard.events.index("turn") < heard.events.index("finished")
    assert "import" in heard.events[heard.events.index("turn") :]  # and went on after the reply
    assert services.memory.recall.imported_count(agent_id) == 1200


def test_an_import_a_close_cut_short_resumes_when_the_agent_opens(services, agent_id, export, session_for):
    greeting = [say("Welcome back!")] * 50  # a login turn or a timed heartbeat may speak
    session, heard = session_for(agent_id, ScriptedRuntime(greeting, context_window=32768))
    session.import_history(agent_id, export)
    assert heard.progress.wait(20)
    session.close()
    row = services.db.query_one("SELECT status, conversations_done FROM history_imports")
    assert row[0] == "stopped" and 0 < row[1] < 600
    _again, heard_again = session_for(agent_id, ScriptedRuntime(greeting, context_window=32768))
    assert heard_again.finished.wait(120) and not heard_again.errors
    assert services.memory.recall.imported_count(agent_id) == 1200  # nothing twice


def test_a_stopped_import_waits_for_the_person_and_resumes_without_adding_anything_twice(
    services, agent_id, export, session_for
):
    greeting = [say("Welcome back!")] * 50
    session, heard = session_for(agent_id, ScriptedRuntime(greeting, context_window=32768))
    session.import_history(agent_id, export, totals=(600, 1200))
    assert heard.progress.wait(20)
    session.pause_import()
    deadline = time.monotonic() + 30
    while services.db.scalar("SELECT status FROM history_imports") != "paused" and time.monotonic() < deadline:
        time.sleep(0.05)
    done = services.db.query_one("SELECT status, conversations_done, conversations_total FROM history_imports")
    assert done[0] == "paused" and 0 < done[1] < 600 and done[2] == 600
    session.close()
    _again, heard_again = session_for(agent_id, ScriptedRuntime(greeting, context_window=32768))
    time.sleep(1.0)  # opening the agent goes on with what a close cut short, not with what was stopped
    assert not heard_again.progress.is_set()
    assert services.db.scalar("SELECT status FROM history_imports") == "paused"
    import_id = services.db.scalar("SELECT id FROM history_imports")
    _again.resume_import(import_id)
    assert heard_again.finished.wait(120) and not heard_again.errors
    assert services.memory.recall.imported_count(agent_id) == 1200
