"""Help -> Diagnostics: the doctor's report in a dialog, lines appearing as checks finish (off
the GUI thread), a Copy button, and the dialog offered when the model process crashes."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from memdesk.core.base.errors import ModelCrashedError
from memdesk.core.base.paths import Paths
from memdesk.diagnostics import Check, Report, run_checks
from memdesk.ui.dialogs.diagnostics import DiagnosticsDialog


def test_checks_run_off_the_gui_thread_and_the_report_can_be_copied(qtbot, services):
    threads = []

    def run(on_check):
        threads.append(threading.current_thread())
        return run_checks(Paths.from_environment(), only=["python", "sqlite", "store"], on_check=on_check)

    dialog = DiagnosticsDialog(run)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.start()
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=30_000)
    assert threads and threads[0] is not threading.main_thread()
    text = dialog.view.toPlainText()
    assert "ok    python" in text and "ok    store" in text and "integrity ok" in text
    assert dialog.status.text() == "All 3 checks passed."
    QGuiApplication.clipboard().clear()
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == dialog.text() and "MemDesk diagnostics" in dialog.text()
    dialog.close()


def test_a_failing_check_is_shown_with_its_fix_and_the_checks_can_run_again(qtbot):
    gate = threading.Event()
    runs = []

    def run(on_check):
        runs.append(1)
        on_check(Check("python", True, "Python 3"))
        gate.wait(10)
        check = Check(
            "decode", False, "the model process crashed (SIGSEGV)", "rebuild portable: make clean-venv && make install"
        )
        on_check(check)
        return Report([Check("python", True, "Python 3"), check])

    dialog = DiagnosticsDialog(run)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.start()
    qtbot.waitUntil(lambda: "ok    python" in dialog.view.toPlainText())  # a line appears before the run ends
    assert dialog.running and not dialog.rerun_button.isEnabled()
    dialog.start()  # ignored while running
    gate.set()
    qtbot.waitUntil(lambda: dialog.report is not None)
    text = dialog.view.toPlainText()
    assert "FAIL  decode" in text and "fix: rebuild portable: make clean-venv && make install" in text
    assert "1 of 2 checks failed." in dialog.status.text()
    qtbot.mouseClick(dialog.rerun_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.report is not None and len(runs) == 2)
    dialog.close()


def test_help_menu_opens_diagnostics_and_a_crashed_model_offers_it(make_window, roomy_runtime, qtbot, monkeypatch):
    opened = []
    window = make_window(roomy_runtime)
    monkeypatch.setattr(window.help_menu, "open_diagnostics", lambda: opened.append(1))
    help_menu = next(action.menu() for action in window.menuBar().actions() if action.text() == "&Help")
    assert [a.text() for a in help_menu.actions()][:1] == ["&Diagnostics…"]

    def crash(_messages):
        raise ModelCrashedError("The model process stopped unexpectedly (exit code -11)", exit_code=-11)

    roomy_runtime.enqueue(crash)
    window.chat.compose.setPlainText("hello")
    with qtbot.waitSignal(window.turn_done, timeout=10_000, raising=False):
        window.chat.on_send_clicked()
    qtbot.waitUntil(lambda: window.message_bar.action.isVisible(), timeout=10_000)
    assert "stopped unexpectedly" in window.message_bar.label.text()
    assert window.message_bar.action.text() == "Diagnostics…"
    qtbot.mouseClick(window.message_bar.action, Qt.MouseButton.LeftButton)
    assert opened == [1]


@pytest.mark.model
def test_the_window_dialog_runs_the_real_checks(make_window, roomy_runtime, qtbot):
    window = make_window(roomy_runtime)
    dialog = window.help_menu.open_diagnostics()
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=240_000)
    assert dialog.report.ok, dialog.text()
    assert [check.name for check in dialog.report.checks] == [
        "python",
        "sqlite",
        "store",
        "disk",
        "model",
        "cpu",
        "decode",
        "embedder",
        "window",
    ]
    dialog.close()
