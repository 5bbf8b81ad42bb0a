"""Fixtures for the session's rules: a conversation on the real store and a scripted model, driven
through the Session itself, the window or the terminal (``drive``)."""

from __future__ import annotations

import pytest

from memdesk.session.idle import IdleIntervals
from tests.session.drivers import SessionDriver, TerminalDriver, WindowDriver

FRONT_ENDS = ["session", "window", "terminal"]


@pytest.fixture
def agent_id(services) -> int:
    services.settings_store.set("login_after_minutes", 0)  # a login turn only where a test asks for one
    services.settings_store.set("graph_model_facts", False)  # the script's answers are the turns'
    return services.create_agent("sam").id


@pytest.fixture
def idle_after(monkeypatch):
    """``idle_after(heartbeat=0.3)``: idle work falls due after these seconds, in every front end."""

    def set_intervals(**seconds: float) -> None:
        monkeypatch.setattr(IdleIntervals, "from_settings", classmethod(lambda cls, _settings: cls(**seconds)))

    set_intervals()  # nothing idle runs unless a test says so
    return set_intervals


@pytest.fixture(params=FRONT_ENDS)
def drive(request, services, agent_id, idle_after):
    """``drive(make_runtime)`` opens the conversation with agent ``sam`` in one front end."""
    drivers = []

    def open_conversation(make_runtime):
        if request.param == "window":
            driver = WindowDriver(services, make_runtime, agent_id, request.getfixturevalue("qtbot"))
        elif request.param == "terminal":
            driver = TerminalDriver(services, make_runtime, agent_id, request.getfixturevalue("monkeypatch"))
        else:
            driver = SessionDriver(services, make_runtime, agent_id)
        drivers.append(driver)
        return driver

    open_conversation.front_end = request.param
    yield open_conversation
    for driver in drivers:
        driver.close()
