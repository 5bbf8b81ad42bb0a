"""Every slot's failure takes the one error path (the message bar), never the crash log: an
exception escaping a slot reaches sys.excepthook, is written as a crash and makes the next start
say MemDesk did not close cleanly."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QMessageBox

import desktop.ui
from desktop.errors import DiskFullError
from desktop.ui.qt_errors import CrashCapture


@pytest.fixture
def crash_log(tmp_path):
    """The real crash capture, installed over pytest-qt's hook: what escapes a slot lands here."""
    capture = CrashCapture(tmp_path / "logs").install()
    yield tmp_path / "logs" / "crash.log"
    capture.uninstall()


def _broken(*_args, **_kwargs):
    raise DiskFullError("Could not write to the store: disk full")


def _shown_failure(window) -> bool:
    return any("disk full" in message for message in window.hub.messages)


def test_deleting_an_agent_that_fails_is_reported_not_crashed(make_window, roomy_runtime, monkeypatch, crash_log):
    window = make_window(roomy_runtime)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    monkeypatch.setattr(window.services.agents, "delete", _broken)
    window.agents.delete_requested.emit(window.agent_id)
    assert _shown_failure(window)
    assert not crash_log.exists() or crash_log.read_text() == ""


def test_deleting_passages_that_fails_is_reported_not_crashed(make_window, roomy_runtime, monkeypatch, crash_log, services):
    window = make_window(roomy_runtime)
    services.memory.archival.insert(window.agent_id, "The spare key is under the blue flower pot.")
    window.archival.refresh()
    window.archival.passages_table.selectAll()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    monkeypatch.setattr(window.archival.archival, "delete", _broken)
    window.archival.delete_button.click()
    assert _shown_failure(window)
    assert not crash_log.exists() or crash_log.read_text() == ""


def test_a_markdown_export_that_cannot_be_written_is_reported_not_crashed(make_window, roomy_runtime, monkeypatch, crash_log, tmp_path):
    window = make_window(roomy_runtime)
    target = tmp_path / "no such folder" / "conversation.md"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), "Markdown (*.md)"))
    window.transfer_actions.on_export_markdown_triggered()
    assert any(m.startswith(f"Could not save {target}: No such file") for m in window.hub.messages)
    assert not crash_log.exists() or crash_log.read_text() == ""


def test_a_search_that_fails_is_reported_not_crashed(make_window, roomy_runtime, monkeypatch, crash_log, qtbot):
    window = make_window(roomy_runtime)
    monkeypatch.setattr(window.services.memory.recall, "search_text", _broken)
    window.chat.search_requested.emit("tulips")
    qtbot.waitUntil(lambda: _shown_failure(window), timeout=5_000)
    assert not crash_log.exists() or crash_log.read_text() == ""


# --- a new slot cannot forget ------------------------------------------------------------------
#: The agent worker's slots run in its thread inside their own guard (qt_worker.AgentWorker._Working),
#: which reports through its failed signal. ErrorHub and the message bar's show_message are the
#: error path itself: reporting their own failure through it would go round in a circle.
EXEMPT = {"AgentWorker", "ErrorHub", "MessageBar.show_message"}


def _qt_classes():
    for info in pkgutil.iter_modules(desktop.ui.__path__):
        if not info.name.startswith("qt_"):
            continue
        module = importlib.import_module(f"desktop.ui.{info.name}")
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, QObject) and cls.__name__ not in EXEMPT:
                yield cls


def test_every_slot_reports_its_errors():
    missing = []
    for cls in _qt_classes():
        for name, member in vars(cls).items():
            slot = callable(member) and (name.startswith("on_") or hasattr(member, "_slots"))
            if slot and f"{cls.__name__}.{name}" not in EXEMPT and not getattr(member, "reports_errors", False):
                missing.append(f"{cls.__module__}.{cls.__name__}.{name}")
    assert missing == []
