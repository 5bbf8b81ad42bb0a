"""The Help menu (Diagnostics, Welcome, About), and Diagnostics offered when the model process
crashed: its report names the cause and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QMessageBox

from memdesk import __version__
from memdesk.core.base.errors import ModelCrashedError
from memdesk.diagnostics import run_checks
from memdesk.ui.common.errors import reports_errors, user_text
from memdesk.ui.common.text import escape
from memdesk.ui.dialogs.diagnostics import DiagnosticsDialog
from memdesk.ui.dialogs.welcome import show_welcome, window_actions
from memdesk.ui.window.menus import add_action

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


class HelpMenu(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.diagnostics_dialog: DiagnosticsDialog | None = None
        menu = window.menuBar().addMenu("&Help")
        self.diagnostics_action = add_action(window, menu, "&Diagnostics…", None, self.open_diagnostics)
        self.welcome_action = add_action(window, menu, "&Welcome…", None, self.on_welcome_triggered)
        add_action(window, menu, "&About MemDesk", None, self.on_about_triggered)
        window.worker.failed.connect(self.on_worker_failed)

    @Slot(object)
    @reports_errors
    def on_worker_failed(self, error: BaseException) -> None:
        if isinstance(error, ModelCrashedError):
            self.window.message_bar.show_message(user_text(error), "Diagnostics…", self.open_diagnostics)

    @Slot()
    @reports_errors
    def open_diagnostics(self) -> DiagnosticsDialog:
        if self.diagnostics_dialog is None:
            paths, embedder = self.window.services.paths, self.window.services.embedder
            self.diagnostics_dialog = DiagnosticsDialog(
                lambda on_check: run_checks(paths, embedder=embedder, on_check=on_check), self.window
            )
        self.diagnostics_dialog.show()
        self.diagnostics_dialog.raise_()
        self.diagnostics_dialog.start()
        return self.diagnostics_dialog

    @Slot()
    @reports_errors
    def on_welcome_triggered(self) -> None:
        dialog = show_welcome(self.window.services, window_actions(self.window), self.window)
        dialog.name_saved.connect(lambda _name: self.window.name_changed())

    @Slot()
    @reports_errors
    def on_about_triggered(self) -> None:
        QMessageBox.about(
            self.window,
            "About MemDesk",
            f"<b>MemDesk {escape(__version__)}</b><p>An offline companion that remembers you. Your data stays in {escape(self.window.services.paths.home)}.</p>",
        )
