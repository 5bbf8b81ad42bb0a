"""Help -> Diagnostics: the ``memdesk doctor`` report in a dialog, with a Copy button.

The checks take seconds (a 16-token decode in a child process, the embedder, Qt's plugin in
another child), so they run on a plain daemon thread and each line is relayed to the GUI thread as
it finishes; closing the dialog or the app never waits for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from memdesk.diagnostics import Check, Report
from memdesk.ui.common.errors import reports_errors

#: ``run(on_check)`` runs every check, calling ``on_check`` after each, and returns the report.
Runner = Callable[[Callable[[Check], None]], Report]


class _Relay(QObject):
    checked = Signal(object)
    finished = Signal(object)
    failed = Signal(str)


class DiagnosticsDialog(QDialog):
    """Shows the checks as they complete; ``report`` holds the last finished report."""

    def __init__(self, run: Runner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("MemDesk diagnostics")
        self.resize(900, 420)
        self._run = run
        self.report: Report | None = None
        self.running = False
        self._lines: list[str] = []
        self._relay = _Relay(self)
        self._relay.checked.connect(self.on_checked)
        self._relay.finished.connect(self.on_finished)
        self._relay.failed.connect(self.on_failed)
        self.status = QLabel()
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("&Copy")
        self.copy_button.setToolTip("Copy the report, to paste it into a bug report")
        self.rerun_button = QPushButton("&Run again")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.rerun_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        self.copy_button.clicked.connect(self.on_copy_clicked)
        self.rerun_button.clicked.connect(self.start)
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)

    @Slot()
    @reports_errors
    def start(self) -> None:
        """Run the checks (again); does nothing while a run is in progress."""
        if self.running:
            return
        self.running = True
        self.report = None
        self._lines = [f"MemDesk diagnostics, {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}"]
        self.view.setPlainText(self._lines[0])
        self.status.setText("Running checks… (the model and embedder checks take a few seconds)")
        self.rerun_button.setEnabled(False)
        relay = self._relay

        def work() -> None:
            try:
                report = self._run(relay.checked.emit)
            except BaseException as error:  # shown in the dialog; the checks themselves never raise
                _emit(relay.failed, f"{type(error).__name__}: {error}")
            else:
                _emit(relay.finished, report)

        threading.Thread(target=work, name="diagnostics", daemon=True).start()

    def text(self) -> str:
        return "\n".join(self._lines)

    @Slot(object)
    @reports_errors
    def on_checked(self, check: Check) -> None:
        self._lines.append(check.line())
        self.view.setPlainText(self.text())

    @Slot(object)
    @reports_errors
    def on_finished(self, report: Report) -> None:
        self.running = False
        self.report = report
        self._lines.append(report.summary())
        self.view.setPlainText(self.text())
        self.status.setText(report.summary() if report.ok else f"{report.summary()} Each FAIL line says what to do.")
        self.rerun_button.setEnabled(True)

    @Slot(str)
    @reports_errors
    def on_failed(self, text: str) -> None:
        self.running = False
        self._lines.append(f"The checks stopped: {text}")
        self.view.setPlainText(self.text())
        self.status.setText("The checks stopped unexpectedly.")
        self.rerun_button.setEnabled(True)

    @Slot()
    @reports_errors
    def on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.text())
        self.status.setText("Copied to the clipboard.")


def _emit(signal, value) -> None:
    try:
        signal.emit(value)
    except RuntimeError:  # the dialog was deleted while the checks ran: nobody to tell
        pass
