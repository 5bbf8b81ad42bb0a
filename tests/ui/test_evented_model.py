"""The evented model the window's parts share (memdesk/ui/common/evented.py, window_state.py): a
field announces a change, and only a change; several fields set together are announced once all
are set; only the GUI thread writes it; a destroyed observer is no longer called."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QObject, Slot

from memdesk.core.runtime.scripted import say
from memdesk.ui.common.evented import EventedModel, Field
from memdesk.ui.common.window_state import WindowState


class Sample(EventedModel):
    count = Field(0)
    name = Field[str | None](None)


def test_a_field_reads_its_default_then_what_was_set():
    sample = Sample(count=2)
    assert (sample.count, sample.name) == (2, None)
    sample.name = "Ada"
    assert sample.name == "Ada" and sample.as_dict() == {"count": 2, "name": "Ada"}


def test_a_change_is_announced_with_the_new_value_and_no_change_is_not():
    sample, seen = Sample(), []
    sample.events.count.connect(seen.append)
    sample.count = 1
    sample.count = 1
    sample.count = 0
    assert seen == [1, 0]


def test_fields_set_together_are_announced_after_all_are_set():
    sample, seen = Sample(), []
    sample.events.count.connect(lambda _value: seen.append(("count", sample.as_dict())))
    sample.events.name.connect(lambda _value: seen.append(("name", sample.as_dict())))
    sample.update(count=3, name="Ada")
    both = {"count": 3, "name": "Ada"}
    assert seen == [("count", both), ("name", both)]


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError):
        Sample(colour="red")
    with pytest.raises(AttributeError):
        Sample().update(colour="red")
    with pytest.raises(AttributeError):
        Sample().events.colour  # noqa: B018 - the access is what is tested


def test_another_thread_may_not_write_it():
    sample, failures = Sample(), []

    def write() -> None:
        try:
            sample.count = 5
        except RuntimeError as error:
            failures.append(error)

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    assert len(failures) == 1 and sample.count == 0


class Observer(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[object] = []

    @Slot(object)
    def on_changed(self, value: object) -> None:
        self.seen.append(value)


def test_a_destroyed_observer_is_no_longer_called(qtbot):
    sample, kept, dropped = Sample(), Observer(), Observer()
    sample.events.count.connect(kept.on_changed)
    sample.events.count.connect(dropped.on_changed)
    sample.count = 1
    dropped.deleteLater()
    with qtbot.waitSignal(dropped.destroyed):
        pass
    sample.count = 2
    assert kept.seen == [1, 2]


def test_the_window_state_starts_with_no_agent_and_nothing_running():
    state = WindowState()
    assert state.as_dict() == {
        "agent_id": None,
        "agent_name": "",
        "model_ready": False,
        "busy": False,
        "background": False,
        "last_sent_id": None,
        "private_chat": False,
    }


def test_the_window_shows_its_state_as_the_parts_change_it(make_window, roomy_runtime, send, qtbot, services, settle):
    """The parts write the shared state and the others observe it: the agent shown reaches the
    title, busy reaches Send and Stop, the message sent last is the one answered."""
    roomy_runtime.enqueue(say("Hello Ada"))
    window = make_window(roomy_runtime)
    state = window.state
    agent = services.agents.get(state.agent_id)
    assert state.model_ready and state.agent_name == agent.name
    assert window.windowTitle() == f"MemDesk — {agent.name}" and window.chat.title.text() == agent.name
    busy: list[object] = []
    state.events.busy.connect(busy.append)
    send(window, "Hi, I am Ada")
    assert busy[0] is True and busy[-1] is False
    sent = services.memory.recall.get(state.last_sent_id)
    assert sent.search_text == "Hi, I am Ada"
    other = services.create_agent("Bo")
    window.switching.on_agent_list_changed()
    window.agents.switched.emit(other.id)
    settle(window)  # the agent is read off the GUI thread, then shown
    assert state.agent_id == other.id and window.windowTitle() == "MemDesk — Bo"
    state.busy = True
    assert not window.chat.send_button.isEnabled() and window.chat.stop_button.isEnabled()
    state.busy = False
    assert window.chat.send_button.isEnabled()
