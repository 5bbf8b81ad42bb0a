"""The Help menu's entries (Diagnostics, Welcome, About), and Diagnostics offered when the model
process crashed: its report names the cause and the fix."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMessageBox, QWidget

from memdesk import __version__
from memdesk.app.services import Services
from memdesk.core.base.errors import ModelCrashedError
from memdesk.diagnostics import run_checks
from memdesk.ui.common.errors import MessageBar, reports_errors, user_text
from memdesk.ui.common.text import escape
from memdesk.ui.dialogs.diagnostics import DiagnosticsDialog
from memdesk.ui.dialogs.welcome import Actions, show_welcome
from memdesk.ui.workers.session import SessionWorker


class HelpMenu(QObject):
    """``window`` parents the dialogs; ``welcome_actions`` are what the welcome may start;
    ``user_renamed`` is called when the welcome saved the user's name. ``actions`` go in the menu."""

    def __init__(
        self,
        services: Services,
        worker: SessionWorker,
        message_bar: MessageBar,
        welcome_actions: Actions,
        user_renamed: Callable[[], None],
        window: QWidget,
    ) -> None:
        super().__init__(window)
        self.services, self.message_bar, self.window = services, message_bar, window
        self.welcome_actions, self.user_renamed = welcome_actions, user_renamed
        self.diagnostics_dialog: DiagnosticsDialog | None = None
        self.diagnostics_action = QAction("&Diagnostics…", window)
        self.diagnostics_action.triggered.connect(self.open_diagnostics)
        self.welcome_action = QAction("&Welcome…", window)
        self.welcome_action.triggered.connect(self.on_welcome_triggered)
        self.about_action = QAction("&About MemDesk", window)
        self.about_action.triggered.connect(self.on_about_triggered)
        self.actions = [self.diagnostics_action, self.welcome_action, self.about_action]
        worker.failed.connect(self.on_worker_failed)

    @Slot(object)
    @reports_errors
    def on_worker_failed(self, error: BaseException) -> None:
        if isinstance(error, ModelCrashedError):
            self.message_bar.show_message(user_text(error), "Diagnostics…", self.open_diagnostics)

    @Slot()
    @reports_errors
    def open_diagnostics(self) -> DiagnosticsDialog:
        if self.diagnostics_dialog is None:
            paths, embedder = self.services.paths, self.services.embedder
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
        dialog = show_welcome(self.services, self.welcome_actions, self.window)
        dialog.name_saved.connect(lambda _name: self.user_renamed())

    @Slot()
    @reports_errors
    def on_about_triggered(self) -> None:
        QMessageBox.about(
            self.window,
            "About MemDesk",
            f"<b>MemDesk {escape(__version__)}</b><p>An offline companion that remembers you."
            f" Your data stays in {escape(self.services.paths.home)}.</p>",
        )
