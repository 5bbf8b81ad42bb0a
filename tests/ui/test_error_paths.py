"""Every slot's failure takes the one error path (the message bar), never the crash log: an
exception escaping a slot reaches sys.excepthook, is written as a crash and makes the next start
say MemDesk did not close cleanly."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QMessageBox

import memdesk.ui
from memdesk.core.base.errors import DiskFullError
from memdesk.ui.common.errors import CrashCapture
from memdesk.ui.dialogs.consent import ConsentDialog, ConsentRequest


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
    window.agents.delete_requested.emit(window.state.agent_id)
    assert _shown_failure(window)
    assert not crash_log.exists() or crash_log.read_text() == ""


def test_deleting_passages_that_fails_is_reported_not_crashed(
    make_window, roomy_runtime, monkeypatch, crash_log, services, qtbot, settle
):
    window = make_window(roomy_runtime)
    services.memory.archival.insert(window.state.agent_id, "The spare key is under the blue flower pot.")
    with qtbot.waitSignal(window.archival.loaded):
        window.archival.refresh()
    window.archival.passages_table.selectAll()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    monkeypatch.setattr(window.archival.archival, "delete", _broken)
    window.archival.delete_button.click()
    settle(window)
    assert _shown_failure(window)
    assert not crash_log.exists() or crash_log.read_text() == ""


def test_a_markdown_export_that_cannot_be_written_is_reported_not_crashed(
    make_window, roomy_runtime, monkeypatch, crash_log, tmp_path, settle
):
    window = make_window(roomy_runtime)
    target = tmp_path / "no such folder" / "conversation.md"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), "Markdown (*.md)"))
    window.transfer_actions.on_export_markdown_triggered()
    settle(window)  # read and written on the job pool
    assert any(m.startswith(f"Could not save {target}: No such file") for m in window.hub.messages)
    assert not crash_log.exists() or crash_log.read_text() == ""


def test_a_search_that_fails_is_reported_not_crashed(make_window, roomy_runtime, monkeypatch, crash_log, qtbot):
    window = make_window(roomy_runtime)
    monkeypatch.setattr(window.services.memory.recall, "search_text", _broken)
    window.chat.search_requested.emit("tulips")
    qtbot.waitUntil(lambda: _shown_failure(window), timeout=30_000)
    assert not crash_log.exists() or crash_log.read_text() == ""


# --- a new slot cannot forget ------------------------------------------------------------------
#: The agent worker's slots run in its thread inside their own guard (workers/agent.py: AgentWorker._Working),
#: which reports through its failed signal. ErrorHub and the message bar's show_message are the
#: error path itself: reporting their own failure through it would go round in a circle.
EXEMPT = {"ErrorHub", "MessageBar.show_message"}


def _window_modules() -> list[str]:
    """Every module of the window's packages (the start-up modules and the window's parts)."""
    return sorted(info.name for info in pkgutil.walk_packages(memdesk.ui.__path__, "memdesk.ui.") if not info.ispkg)


def _qt_classes():
    for name in _window_modules():
        module = importlib.import_module(name)
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


def _connected_methods():
    """(class, method name, where) for each ``signal.connect(self.method)`` and
    ``signal.connect(self.part.method)`` in the window's modules, the part's class read from
    its ``self.part = Class(...)`` assignment: a method a signal calls is a slot, whatever its name."""
    classes = dict(_all_ui_classes())
    for name in _window_modules():
        path = Path(importlib.import_module(name).__file__)
        for owner in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(owner, ast.ClassDef) or owner.name not in classes:
                continue
            parts = {}
            for node in ast.walk(owner):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name)
                ):
                    for target in node.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        ):
                            parts[target.attr] = node.value.func.id
            for node in ast.walk(owner):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "connect"
                    and node.args
                ):
                    continue
                target = node.args[0]
                if not isinstance(target, ast.Attribute):
                    continue
                where = f"{name}:{node.lineno}"
                if isinstance(target.value, ast.Name) and target.value.id == "self":
                    yield classes[owner.name], target.attr, where
                elif (
                    isinstance(target.value, ast.Attribute)
                    and isinstance(target.value.value, ast.Name)
                    and target.value.value.id == "self"
                    and parts.get(target.value.attr) in classes
                ):
                    yield classes[parts[target.value.attr]], target.attr, where


def _all_ui_classes():
    for cls in _qt_classes():
        yield cls.__name__, cls


def test_every_method_a_signal_calls_is_a_slot_that_reports_its_errors():
    checked, missing = 0, []
    for cls, name, where in _connected_methods():
        member = inspect.getattr_static(cls, name, None)
        if not inspect.isfunction(member) or f"{cls.__name__}.{name}" in EXEMPT or cls.__name__ in EXEMPT:
            continue  # a signal, or Qt's own method (close, accept...)
        checked += 1
        if not (hasattr(member, "_slots") and getattr(member, "reports_errors", False)):
            missing.append(f"{cls.__name__}.{name} ({where})")
    assert checked > 50 and missing == []


def test_a_consent_answer_that_fails_is_reported_not_crashed(make_window, roomy_runtime, crash_log):
    window = make_window(roomy_runtime)
    request = ConsentRequest(window.state.agent_id, "http_request", "GET https://example.org")
    dialog = ConsentDialog(request, "sam", window)
    dialog.answered.connect(window.consent.answer)
    request.done = None  # broken: answering it raises
    dialog.answered.emit(request, "once")
    assert any("Something went wrong" in message for message in window.hub.messages)
    assert not crash_log.exists() or crash_log.read_text() == ""
