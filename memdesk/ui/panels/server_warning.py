"""The status bar's mark that the model server is reached over plain http on another machine:
while it shows, every prompt, memory included, travels unencrypted. The full sentence is its
tooltip, and the message bar says it once per server URL."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from memdesk.core.base.settings_table import Settings
from memdesk.core.net.plain_http import plain_http_warning
from memdesk.ui.common import palette
from memdesk.ui.common.text import literal

LABEL = "⚠ Unencrypted model server"


class ServerWarning(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setStyleSheet(f"color: {palette.readable(palette.ORANGE)}; font-weight: bold")
        self.hide()
        self._told: set[str] = set()

    def update_for(self, settings: Settings, notify: Callable[[str], None]) -> None:
        """Show or hide the mark for the runtime ``settings`` load; ``notify`` tells the user once."""
        warning = plain_http_warning(settings.openai_base_url) if settings.runtime == "openai" else None
        self.setVisible(warning is not None)
        if warning is None:
            return
        self.setText(LABEL)
        self.setToolTip(literal(warning))  # it names the server's address
        if settings.openai_base_url not in self._told:
            self._told.add(settings.openai_base_url)
            notify(warning)
