"""A quiet line above the conversation while the bundled demo model answers: it is tiny (it
forgets and mixes things up), and a capable model is one click away in File > Models. Closing the
line turns it off for good (the ``bundled_model_hint`` setting).

Signals:
    models_requested(): the user asked for the Models page
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QToolButton, QWidget

from memdesk.app.services import Services
from memdesk.core.base.settings_table import Settings
from memdesk.core.models.catalog import machine_memory
from memdesk.ui.common import palette
from memdesk.ui.common.errors import reports_errors
from memdesk.ui.common.text import plain_label


def hint_text(services: Services) -> str:
    """What the line says, naming the model the catalog recommends for this computer's memory."""
    text = "You are talking to the small built-in demo model: it answers fast but forgets and mixes things up."
    memory = machine_memory()
    pick = services.models.catalog.recommended_for_memory(memory)
    if pick is not None and memory:
        return f"{text} {pick.name} suits this computer ({memory / 1024**3:.0f} GB of memory)."
    return f"{text} A capable model is one download away."


class BundledModelHint(QFrame):
    models_requested = Signal()

    def __init__(self, services: Services, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services
        self.setObjectName("modelHint")
        self.setStyleSheet(f"#modelHint {{ border: 1px solid {palette.faint()}; border-radius: 4px; }}")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 2, 2)
        self.label = plain_label()
        self.label.setWordWrap(True)
        self.label.setStyleSheet(f"color: {palette.muted()}")
        self.models_button = QPushButton("Choose a better model… (Ctrl+Shift+L)")
        self.models_button.setFlat(True)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Hide this hint for good")
        layout.addWidget(self.label, 1)
        layout.addWidget(self.models_button)
        layout.addWidget(self.close_button)
        self.models_button.clicked.connect(self.models_requested)
        self.close_button.clicked.connect(self.dismiss)
        self.hide()

    def update_for(self, settings: Settings) -> None:
        """After a model loaded with ``settings``: shown while the bundled model is the one in use,
        unless dismissed."""
        wanted = settings.bundled_model_hint and self.services.models.uses_bundled(settings)
        if wanted:
            self.label.setText(hint_text(self.services))
        self.setVisible(wanted)

    @Slot()
    @reports_errors
    def dismiss(self) -> None:
        self.services.settings_store.set("bundled_model_hint", False)
        self.hide()
