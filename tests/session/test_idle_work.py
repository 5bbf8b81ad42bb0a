"""Work nobody asked for, as the session's idle scheduler runs it: a consolidation pass or retention
after the idle time, stopped (or postponed) when the user is back, and tried again at the next idle
moment when another writer held the store. (Moved here from the terminal's idle runners, which the
scheduler replaced for both front ends.)"""

from __future__ import annotations

import threading
import time

import pytest

from memdesk.app.services import open_services
from memdesk.core.base.errors import StoreBusyError
from memdesk.core.base.paths import Paths
from memdesk.core.consolidation.consolidator import BUSY
from memdesk.core.consolidation.prompt import FINISH
from memdesk.core.runtime.scripted import ScriptedRuntime, call, say
from memdesk.core.storage import open_database
from memdesk.session.idle import AGAIN, DONE, RETENTION, IdleIntervals, IdleScheduler
from memdesk.session.listener import SessionListener
from memdesk.session.unasked import UnaskedWork
from tests.session.drivers import started_session

KNOWN = "Lives in Portugal."
CHAT = ("My name is Ana and I moved to Porto last spring.", "I work night shifts.", "Green tea, never coffee.")


class Results(SessionListener):
    def __init__(self) -> None:
        self.passes, self.removed, self.errors = [], [], []
        self.opened = threading.Event()

    def on_agent_opened(self, agent_id):
        self.opened.set()

    def on_consolidation_finished(self, result):
        self.passes.append(result)

    def on_retention_done(self, agent_id, removed):
        self.removed.append(removed)

    def on_failed(self, error):
        self.errors.append(error)


def wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():
        time.sleep(0.02)
    return condition()


@pytest.fixture
def runtime():
    return ScriptedRuntime(context_window=32768)


@pytest.fixture
def chatted(services, runtime, make_agent):
    agent = make_agent("ana", human=KNOWN)
    for text in CHAT:
        runtime.enqueue(say("Noted."))
        agent.send_user_message(text)
    services.settings_store.set("consolidation", "apply")
    services.settings_store.set("consolidation_every_turns", 3)
    services.settings_store.set("login_after_minutes", 0)
    return agent


@pytest.fixture
def idle_session(services, runtime, monkeypatch):
    """A session whose consolidation falls due after 50 ms of idle time."""
    monkeypatch.setattr(IdleIntervals, "from_settings", classmethod(lambda cls, _s: cls(consolidation=0.05)))
    sessions = []

    def start(agent_id: int, busy_timeout: float | None = None):
        def own_services():
            own = open_services(Paths.from_environment(), embedder=services.embedder, clock=services.clock)
            if busy_timeout is not None:
                own.db.set_busy_timeout(busy_timeout)  # gives up on another writer quickly
            return own

        results = Results()
        session = started_session(
            services, results, agent_id, make_runtime=lambda _settings: runtime, open_session_services=own_services
        )
        sessions.append(session)
        assert results.opened.wait(20)
        return session, results

    yield start
    for session in sessions:
        session.close()


def test_a_due_pass_runs_after_the_idle_time(services, runtime, chatted, idle_session):
    runtime.enqueue(call("core_memory_append", "fact", label="human", content="Name: Ana."), call(FINISH))
    _session, results = idle_session(chatted.id)
    assert wait_for(lambda: results.passes)
    assert results.passes[0].status == "done" and results.passes[0].applied == 1
    assert services.memory.core.get(chatted.id, "human").value == KNOWN + "\nName: Ana."


def test_a_message_stops_a_running_pass_and_is_answered(services, runtime, chatted, idle_session):
    started = threading.Event()

    def slow(_messages):
        started.set()
        time.sleep(0.3)  # generating; the user types meanwhile
        return call("core_memory_append", "fact", label="human", content="Name: Ana.")

    runtime.enqueue(slow, say("Welcome back!"))
    session, results = idle_session(chatted.id)
    assert started.wait(20)
    turn = session.send("I'm back")
    assert turn.done.wait(20)
    assert results.passes[0].status == "cancelled"
    assert services.memory.core.get(chatted.id, "human").value == KNOWN  # the interrupted call changed nothing
    assert "Welcome back!" in [m.search_text for m in services.memory.recall.all(chatted.id)]


def test_a_pass_that_meets_a_busy_store_runs_again_at_the_next_idle_moment(services, runtime, chatted, idle_session):
    other = open_database(services.db.path)
    other.execute("BEGIN IMMEDIATE")  # the extractor's catch-up holds the write lock
    try:
        runtime.enqueue(call("core_memory_append", "fact", label="human", content="Name: Ana."), call(FINISH))
        _session, results = idle_session(chatted.id, busy_timeout=0.05)
        assert wait_for(lambda: results.passes)
        assert results.passes[0].status == BUSY
    finally:
        other.execute("ROLLBACK")  # committed by the next idle moment
        other.close()
    assert wait_for(lambda: len(results.passes) == 2)
    assert results.passes[1].status == "done" and results.passes[1].applied == 1 and results.errors == []


def test_nothing_runs_when_no_pass_is_due(services, runtime, chatted, idle_session):
    services.settings_store.set("consolidation_every_turns", 50)
    runtime.prompts.clear()
    _session, results = idle_session(chatted.id)
    time.sleep(0.3)
    assert results.passes == [] and runtime.prompts == []


# --- retention ------------------------------------------------------------------------------------
class Policy:
    confirmed = True


class Due:
    def describe(self) -> str:
        return "1 conversation messages older than 30 days will be forgotten."


class FakeRetention:
    def __init__(self, run) -> None:
        self.run_if_due = run

    def due(self, agent_id):
        return Due()

    def policy(self, agent_id):
        return Policy()


def retention_work(run, results: Results):
    return UnaskedWork(
        may_run=lambda: True,
        agent_id=lambda: 1,
        heartbeat=lambda: None,
        consolidate=lambda: None,
        with_retention=lambda work: work(FakeRetention(run)),
        listener=results,
        run_soon=lambda kind: None,
    )


def test_retention_that_meets_a_busy_store_runs_again_at_the_next_idle_moment():
    attempts, results = [], Results()

    def run(agent_id):
        attempts.append(1)
        if len(attempts) == 1:
            raise StoreBusyError("The database is locked by another program")
        return 3

    work = retention_work(run, results)
    assert work.run(RETENTION) == AGAIN  # said nothing
    scheduler = IdleScheduler(lambda: IdleIntervals(retention=0.01), work.run)
    scheduler.start()
    scheduler.touch()
    try:
        assert wait_for(lambda: results.removed == [3])
    finally:
        scheduler.close()
    assert results.errors == [] and len(attempts) == 2


def test_the_scheduler_runs_retention_after_the_idle_time_and_a_touch_postpones_it():
    ran = threading.Event()
    work = retention_work(lambda agent_id: ran.set() or 3, Results())
    quick = IdleScheduler(lambda: IdleIntervals(retention=0.01), work.run)
    quick.start()
    quick.touch()
    assert ran.wait(5)
    quick.close()
    ran.clear()
    slow = IdleScheduler(lambda: IdleIntervals(retention=3600), work.run)
    slow.start()
    slow.touch()
    assert slow.armed(RETENTION) == 3600
    slow.touch()
    slow.close()
    assert not ran.is_set()


def test_idle_work_runs_once_per_idle_time_and_again_only_when_it_asks():
    runs = []
    scheduler = IdleScheduler(lambda: IdleIntervals(heartbeat=0.05), lambda kind: runs.append(kind) or DONE)
    scheduler.start()
    scheduler.touch()
    time.sleep(0.4)
    scheduler.close()
    assert runs == ["heartbeat"]  # once: a heartbeat turn's end touches the scheduler again
