"""File > Settings… for the open window: changes are stored, then the model is loaded again (a
restart-needing setting) or the agent reopened with them; Settings → Privacy's store conversion
closes the window so that memdesk.ui.startup.main converts the store with nothing open, then reopens it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QWidget

from memdesk.app.services import Services
from memdesk.core.base.settings_table import SETTINGS, Settings
from memdesk.ui.common.errors import ErrorHub, reports_errors
from memdesk.ui.dialogs.privacy import PrivacyPanel, StoreConversion
from memdesk.ui.dialogs.settings import SettingsDialog
from memdesk.ui.workers.session import SessionWorker


class WindowSettings(QObject):
    """``window`` parents the dialog and is closed for a store conversion (``pending_conversion``
    then says which, for memdesk.ui.startup.main); ``user_renamed`` is called when the user's name
    changed."""

    def __init__(
        self,
        services: Services,
        hub: ErrorHub,
        worker: SessionWorker,
        window: QWidget,
        user_renamed: Callable[[], None],
        serve: Callable[[Settings], None] = lambda settings: None,
        connections_page: Callable[[], QWidget] | None = None,
    ) -> None:
        """``serve``: what other apps are served follows the settings (window/connections_wiring.py);
        ``connections_page()``: the Connections tab (memdesk/ui/dialogs/connections.py)."""
        super().__init__(window)
        self.services, self.hub, self.worker, self.window = services, hub, worker, window
        self.user_renamed = user_renamed
        self.serve = serve
        self.connections_page = connections_page
        #: Set by Settings → Privacy: the store conversion to run once the window has closed.
        self.pending_conversion: StoreConversion | None = None

    @Slot()
    @reports_errors
    def on_settings_triggered(self) -> None:
        services = self.services

        def convert(conversion: StoreConversion) -> None:
            dialog.reject()
            self.request_store_conversion(conversion)

        privacy = PrivacyPanel(services.paths, services.key, convert)
        connections = self.connections_page() if self.connections_page is not None else None
        dialog = SettingsDialog(
            services.settings, services.paths, self.window, privacy=privacy, connections=connections
        )
        if dialog.exec():
            self.apply(dialog.changes())

    def request_store_conversion(self, conversion: StoreConversion) -> None:
        self.pending_conversion = conversion
        self.window.close()

    def apply(self, changes: dict[str, Any]) -> None:
        try:
            settings = self.services.settings
            for name, value in changes.items():
                settings = self.services.settings_store.set(name, value)
        except Exception as error:  # noqa: BLE001
            self.hub.report(error)
            return
        if any(SETTINGS[name].restart for name in changes):
            self.worker.load_model(settings)
        elif changes:
            self.worker.apply_settings(settings)
        if "user_name" in changes:
            self.user_renamed()
        if any(name.startswith("mcp_http") for name in changes):
            self.serve(settings)
