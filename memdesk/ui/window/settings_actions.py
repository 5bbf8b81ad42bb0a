"""File > Settings… for the open window: changes are stored, then the model is loaded again (a
restart-needing setting) or the agent reopened with them; Settings → Privacy's store conversion
closes the window so that memdesk.ui.startup.main converts the store with nothing open, then reopens it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from memdesk.core.base.settings_table import SETTINGS
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.dialogs.privacy import PrivacyPanel, StoreConversion
from memdesk.ui.dialogs.settings import SettingsDialog

if TYPE_CHECKING:
    from memdesk.ui.window.main_window import MainWindow


class WindowSettings(QObject):
    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window

    @Slot()
    @reports_errors
    def on_settings_triggered(self) -> None:
        services = self.window.services
        privacy = PrivacyPanel(
            services.paths,
            services.key,
            lambda conversion: (dialog.reject(), self.request_store_conversion(conversion)),
        )
        dialog = SettingsDialog(services.settings, services.paths, self.window, privacy=privacy)
        if dialog.exec():
            self.apply(dialog.changes())

    def request_store_conversion(self, conversion: StoreConversion) -> None:
        self.window.pending_conversion = conversion
        self.window.close()

    def apply(self, changes: dict) -> None:
        window = self.window
        try:
            settings = window.services.settings
            for name, value in changes.items():
                settings = window.services.settings_store.set(name, value)
        except Exception as error:  # noqa: BLE001
            window.hub.report(error)
            return
        if any(SETTINGS[name].restart for name in changes):
            window.load_model_requested.emit(settings)
        elif changes:
            window.settings_applied.emit(settings)
        if "user_name" in changes:
            window.name_changed()
